"""Every path the docs name exists: ARCHITECTURE.md's map (`core/logparse.py`, `sources/ssh|local`,
`core/fold.Fold`, `tui.core.past.Past`, `sources/logtail.py` `tail_command`), and the files README, CONTRIBUTING,
bench/RESULTS.md and screenshots/README.md name or link. A short `core/…` form is read under `tui/`; a name after a
module (`mod.Name`, or a module's path then a name in backticks) must be defined at the top of that module."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["ARCHITECTURE.md", "README.md", "CONTRIBUTING.md", "bench/RESULTS.md", "screenshots/README.md"]
LAYERS = ("core", "sources", "ui", "commands", "history", "sim")
TOPS = ("tui", "tests", "bench", "screenshots", ".ci", *LAYERS)
# a repository path (`tui/…`, `tests/…`, `bench/…`, …) or a short layer path (`core/…`), not part of a longer one
PATH = re.compile(rf"(?<![\w/.~$@:-])((?:{'|'.join(re.escape(t) for t in TOPS)})/[\w./|*-]*[\w*])")
DOTTED = re.compile(r"(?<![\w./-])(tui(?:\.\w+)+)")
MODULE_THEN_NAME = re.compile(r"`((?:tui/)?(?:" + "|".join(LAYERS) + r")/[\w/]+\.py)` `(\w+)`")
LINK = re.compile(r"\]\(([^)\s#]+)\)")


@functools.cache
def top_level_names(module: Path) -> frozenset[str]:
    names: set[str] = set()
    todo = list(ast.parse(module.read_text()).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.If, ast.Try, ast.With)):  # `try: X = … except …:` still defines X at the top
            todo += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            todo += [n for h in getattr(node, "handlers", []) for n in h.body]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def missing(path: str) -> str | None:
    """Why `path` (as a doc writes it) names nothing in the repository, or None when it does."""
    if path.split("/", 1)[0] in LAYERS:
        path = "tui/" + path
    if "*" in path:
        return None if list(ROOT.glob(path)) else f"{path}: matches no file"
    if (ROOT / path).exists() or (ROOT / f"{path}.py").is_file():
        return None
    head, _, last = path.rpartition("/")
    module, _, name = last.partition(".")
    source = ROOT / head / f"{module}.py"
    if name and source.is_file():
        attr = name.split(".")[0]
        return None if attr in top_level_names(source) else f"{path}: {source.relative_to(ROOT)} defines no {attr}"
    return f"{path}: no such file or module"


def named_paths(text: str) -> list[str]:
    """The paths a doc names: `a/b|c` is a/b and a/c."""
    out = []
    for found in PATH.findall(text):
        first, *others = found.split("|")
        out.append(first)
        out += [f"{first.rpartition('/')[0]}/{other}" for other in others]
    return out


def missing_dotted(dotted: str) -> str | None:
    """Why `tui.a.b.Name` names nothing (the longest module prefix, then at most one name in it)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        if base.is_dir() or base.with_suffix(".py").is_file():
            rest = parts[i:]
            if not rest:
                return None
            source = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
            if source.is_file() and rest[0] in top_level_names(source):
                return None
            return f"{dotted}: {'.'.join(parts[:i])} defines no {rest[0]}"
    return f"{dotted}: no such module"


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text()
    problems = [why for p in named_paths(text) if (why := missing(p))]
    problems += [why for d in DOTTED.findall(text) if (why := missing_dotted(d))]
    for module, name in MODULE_THEN_NAME.findall(text):
        source = ROOT / (module if module.startswith("tui/") else f"tui/{module}")
        if source.is_file() and name not in top_level_names(source):
            problems.append(f"`{module}` `{name}`: no top-level {name} there")
    for link in LINK.findall(text):
        if "://" not in link and not (ROOT / doc).parent.joinpath(link).exists():
            problems.append(f"link {link}: no such file")
    assert not problems, f"{doc} names what is not there:\n" + "\n".join(sorted(set(problems)))


def test_architecture_names_the_modules_it_maps() -> None:
    """The map is read, not skipped: ARCHITECTURE.md names dozens of modules and every layer."""
    found = named_paths((ROOT / "ARCHITECTURE.md").read_text())
    assert len(set(found)) > 50
    assert {p.split("/")[0] for p in found} >= {"core", "sources", "ui", "commands", "history"}


def test_a_path_that_is_not_there_is_caught() -> None:
    assert missing("core/logparse.py") is None and missing("sources/ssh") is None
    assert missing("core/fold.Fold") is None and missing_dotted("tui.core.past.Past") is None
    assert missing("core/no_such_module.py") and missing("core/fold.NoSuchName")
    assert missing_dotted("tui.core.no_such") and missing_dotted("tui.core.past.NoSuch")
    assert named_paths("`sources/ssh|local`, `bench/gpu_*_check.py`") == [
        "sources/ssh",
        "sources/local",
        "bench/gpu_*_check.py",
    ]
