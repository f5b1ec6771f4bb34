"""What a failure's line means where its words alone mislead: the few causes a reader of the line would miss.

- oom on the host's memory (`OSError: [Errno 12] Cannot allocate memory`, the kernel's OOM killer): not a GPU's, so
  lowering --mem-fraction-static will not help; the words say "host memory".
- the warmup's `AssertionError: res=<Response [502]>` (or `… warmup error: …`): SGLang's own warmup request to
  127.0.0.1 went through an HTTP proxy (`http_proxy` set in the server's environment) that answered 502
  (sglang#16855): the server itself may be fine.
"""

from __future__ import annotations

from tui.core.logfailures import host_memory
from tui.core.state import ErrorInfo

HOST_MEMORY = "out of host memory"
PROXY_502 = "an HTTP proxy answered the warmup request with 502 (http_proxy is set for the server), not SGLang"


def kind_words_of(error: ErrorInfo) -> str | None:
    """Words for the error's kind where its line says more than the kind ("out of host memory"), else None."""
    if error.kind == "oom" and host_memory(error.line):
        return HOST_MEMORY
    return None


def note_of(error: ErrorInfo) -> str | None:
    """A note on what the failure's line means, where the line alone misleads; None for most."""
    if "Response [502]" in error.line:
        return PROXY_502
    return None
