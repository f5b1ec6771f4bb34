"""sglang-tui: watch an SGLang server start, over one SSH connection."""

__version__ = "0.1.0"
