"""Only the tool's own words reach the user's terminal: warnings that dependencies raise are kept out of stderr.

A new release of a dependency can start warning at import time: cryptography 51 deprecated DSA, and asyncssh's
import then printed ten `CryptographyDeprecationWarning` lines before the tool's one-line error (issue 29). Those
lines are for the dependency's own developers, not for someone waiting on a server, and they cost every user a
screen of noise before every SSH error. So the command line and the TUI ignore every warning raised from inside a
dependency's modules (the module a warning is attributed to, as Python's own filters match it), by category:
the deprecation family and the warnings a library raises about itself. The tool's own warnings are not touched.

`SGLANG_TUI_DEBUG=1` shows them all again, and so does any `-W` option or `PYTHONWARNINGS` (Python's own
switches: whoever sets them asked for warnings and gets Python's rules, not ours).
"""

from __future__ import annotations

import os
import sys
import warnings

# The packages the tool imports, directly or through its dependencies, whose warnings are not the user's business.
DEPENDENCY_MODULES = (
    "asyncssh",
    "cryptography",
    "textual",
    "rich",
    "httpx",
    "httpcore",
    "anyio",
    "h11",
    "pynvml",
    "markdown_it",
    "pygments",
    "idna",
    "certifi",
)
# The categories a library raises about its own or its dependencies' future: cryptography's
# CryptographyDeprecationWarning is a UserWarning (so UserWarning is on the list), asyncssh's are plain warnings.
DEPENDENCY_CATEGORIES: tuple[type[Warning], ...] = (
    DeprecationWarning,
    PendingDeprecationWarning,
    FutureWarning,
    UserWarning,
    RuntimeWarning,
    ImportWarning,
    ResourceWarning,
)
# The module a warning is attributed to: the package itself or any module under it.
DEPENDENCY_PATTERN = r"(" + "|".join(DEPENDENCY_MODULES) + r")(\..*)?$"


def warnings_wanted(environ: dict[str, str] | os._Environ[str]) -> bool:
    """The user asked to see every warning: SGLANG_TUI_DEBUG set (not 0/empty), or Python's own -W/PYTHONWARNINGS."""
    debug = environ.get("SGLANG_TUI_DEBUG", "").strip()
    return bool(sys.warnoptions) or (debug not in ("", "0"))


def keep_dependency_warnings_out() -> None:
    """Ignore the dependencies' warnings for this process (before any of them is imported), unless asked not to."""
    if warnings_wanted(os.environ):
        return
    for category in DEPENDENCY_CATEGORIES:
        warnings.filterwarnings("ignore", category=category, module=DEPENDENCY_PATTERN)
