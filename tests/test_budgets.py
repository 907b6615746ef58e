"""The code's budgets (tools/budgets.py): tilegate/'s lines and the length of its functions.
The duplicate pairs need the `duplicates` tool, which CI may not have: the script reports them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _budgets():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("budgets", ROOT / "tools" / "budgets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tilegate_stays_within_its_lines() -> None:
    budgets = _budgets()
    assert budgets.lines() <= budgets.LINES


def test_no_function_is_longer_than_the_budget() -> None:
    budgets = _budgets()
    assert budgets.long_functions() == []


def test_the_measures_count_what_they_say(tmp_path: Path) -> None:
    budgets = _budgets()
    (tmp_path / "tilegate").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(101))
    (tmp_path / "tilegate" / "m.py").write_text(
        f"def long():\n{body}\n\n\ndef short():\n    pass\n"
    )
    assert budgets.lines(tmp_path) == 106
    assert budgets.long_functions(tmp_path) == [("tilegate/m.py:1 long", 102)]
