"""Whether a HOST argument names a Slurm job (`[LOGIN/]slurm:…`) or an srtctl job (`[LOGIN/]srt:…`): the two
tests every command line makes, apart from tui.core.slurmjob and tui.core.srtlayout (which read such a target),
so that a command that never reaches a job (a `probe`, exec'd each period: issue 32) loads neither."""

from __future__ import annotations

SLURM_PREFIX = "slurm:"
SRT_PREFIX = "srt:"


def _names(text: str, prefix: str) -> bool:
    head = text.split(":", 1)[0]
    return text.startswith(prefix) or ("/" in head and head.rsplit("/", 1)[1] == prefix[:-1] and ":" in text)


def is_slurm_target(text: str) -> bool:
    """Whether a HOST argument names a Slurm job (`slurm:…` or `LOGIN/slurm:…`)."""
    return _names(text, SLURM_PREFIX)


def is_srt_target(text: str) -> bool:
    """Whether a HOST argument names an srtctl job (`srt:LOGDIR` or `LOGIN/srt:LOGDIR`)."""
    return _names(text, SRT_PREFIX)
