"""sglang-tui: watch an SGLang server start, over one SSH connection."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sglang-tui")  # written once, in pyproject.toml
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
