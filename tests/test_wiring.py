"""How the code is wired, read from its source with `ast` (no imports): every command's parser in
tilegate/commands/, no module name shared between commands/ and another layer, every nox
session that ends with a gate's exit code guarded against its own crash (`_gate`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tilegate"
COMMANDS = PACKAGE / "commands"


def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_every_argument_parser_is_built_in_commands() -> None:
    """`ArgumentParser(` only in tilegate/commands/: a command owns its arguments there, and
    `python -m tilegate.X` is an alias of `tilegate X`, never a parser of its own."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if COMMANDS in path.parents:
            continue
        for node in ast.walk(_parsed(path)):
            func = node.func if isinstance(node, ast.Call) else None
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            if name == "ArgumentParser":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], f"argument parsers outside tilegate/commands/: {found}"


def test_no_command_shares_its_name_with_another_module() -> None:
    """commands/explain.py beside report/explain.py read as one thing in two places (and
    run/fingerprint.py, run/perf.py, judge/rebaseline.py, fingerprint/report.py likewise): a
    command module's name is its own. A layer's package may bear a command's name (history/,
    fingerprint/, explain/, report/: the layer the command serves)."""
    commands = {p.name for p in COMMANDS.glob("*.py") if not p.stem.startswith("_")}
    others = [
        p.relative_to(ROOT).as_posix()
        for p in sorted(PACKAGE.rglob("*.py"))
        if COMMANDS not in p.parents and p.name in commands
    ]
    assert others == [], "modules named like a command outside commands/"


def test_every_nox_session_that_ends_with_a_gate_code_is_guarded() -> None:
    """A session that ends with a gate's exit code (`_end`, `_exit`) is decorated `@_gate`:
    a crash of its own code is exit 2, never nox's exit 1 (upgrade_ab's read as a regression)."""
    tree = _parsed(ROOT / "noxfile.py")
    unguarded = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        names = {ast.unparse(d).split("(")[0] for d in fn.decorator_list}
        if "nox.session" not in names:
            continue
        calls = {
            n.func.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        if calls & {"_end", "_exit"} and "_gate" not in names:
            unguarded.append(fn.name)
    assert unguarded == []
