"""Write the `--flag` names SGLang's server accepts, from an unpacked SGLang wheel, without importing SGLang.

    pip download sglang==0.5.23 --no-deps -d /tmp/sg && (cd /tmp/sg && unzip -q sglang-*.whl 'sglang/srt/*')
    python tools/sglang_flags.py /tmp/sg 0.5.23 > tests/fixtures/sglang-0.5.23-flags.txt

0.5.23 builds most of its command line from dataclass fields (sglang/srt/arg_groups/fields/*.py, registered by
arg_utils.add_cli_args_from_dataclass: `--` + the field name with `-` for `_`, or the Arg's cli_name, plus its
aliases; a field whose Arg says no_cli=True is not an option); server_args.py adds a few by hand (add_argument).
The remedy table's flags are checked against this list (tests/test_remedy_flags.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def field_flags(tree: ast.AST) -> set[str]:
    """`name: A[T, "help"]` or `name: A[T, Arg(…)]` in a class body: the flags argparse gets for it."""
    flags: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            ann = item.annotation
            if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "A"):
                continue
            parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else []
            if len(parts) < 2:
                continue
            meta = parts[1]
            name = "--" + item.target.id.replace("_", "-")
            if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
                flags.add(name)
            elif isinstance(meta, ast.Call) and getattr(meta.func, "id", "") == "Arg":
                no_cli = _keyword(meta, "no_cli")
                if isinstance(no_cli, ast.Constant) and no_cli.value is True:
                    continue
                cli = _keyword(meta, "cli_name")
                flags.add(cli.value if isinstance(cli, ast.Constant) and isinstance(cli.value, str) else name)
                aliases = _keyword(meta, "aliases")
                if isinstance(aliases, ast.List):
                    flags.update(
                        a.value for a in aliases.elts if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    )
    return flags


def added_flags(tree: ast.AST) -> set[str]:
    """`parser.add_argument("--flag", …)`: its option strings."""
    flags: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--"):
                    flags.add(arg.value)
    return flags


def main(root: str, version: str) -> int:
    srt = Path(root) / "sglang" / "srt"
    flags: set[str] = set()
    for path in sorted((srt / "arg_groups").rglob("*.py")):
        flags |= field_flags(ast.parse(path.read_text(encoding="utf-8")))
    flags |= added_flags(ast.parse((srt / "server_args.py").read_text(encoding="utf-8")))
    print(f"# sglang {version}: the --flags of sglang.launch_server, from sglang/srt/server_args.py and")
    print("# sglang/srt/arg_groups/ (tools/sglang_flags.py)")
    for flag in sorted(flags):
        print(flag)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
