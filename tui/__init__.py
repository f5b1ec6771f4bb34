"""sglang-tui: watch an SGLang server start, over one SSH connection."""

from __future__ import annotations

__version__: str  # declared here, read by __getattr__ below on first use


def __getattr__(name: str) -> str:
    """`tui.__version__`, read from the package metadata when first asked (written once, in pyproject.toml):
    importlib.metadata is a tenth of what a one-shot `probe` loads, and only `--version` needs it."""
    if name != "__version__":
        raise AttributeError(f"module 'tui' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("sglang-tui")
    except PackageNotFoundError:  # a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
