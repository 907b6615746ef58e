"""The code's budgets, measured (issue 51; STYLE 24): growth is a decision, not a drift.

    python tools/budgets.py            # a table; exit 0 every measured budget holds, 1 one is over
    python tools/budgets.py --no-duplicates

* lines: every line of tilegate/**/*.py, at most LINES;
* functions: none longer than FUNCTION_LINES (from its `def` to its last line);
* duplicates: the pairs of places in tilegate/ that share 6 or more lines (the `duplicates` tool,
  where it is on PATH), at most DUPLICATE_PAIRS. Without it (CI), that count is "not measured"
  and gates nothing; the other two still do.

tests/test_budgets.py runs it for the lines and the function length.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Issue 51's budget: the round's features included, tilegate/ at most 24,500 lines (24,369 on
# 2026-12-06 after the round's cut). Lower it, never raise it.
LINES = 24_500
FUNCTION_LINES = 100
DUPLICATE_PAIRS = 20


def lines(root: Path = ROOT) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in (root / "tilegate").rglob("*.py"))


def long_functions(root: Path = ROOT, limit: int = FUNCTION_LINES) -> list[tuple[str, int]]:
    """(`path:line name`, its length) of every function longer than `limit` lines."""
    out = []
    for path in sorted((root / "tilegate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > limit:
                    out.append((f"{path.relative_to(root)}:{node.lineno} {node.name}", n))
    return out


def duplicate_pairs(root: Path = ROOT) -> int | None:
    """The `duplicates` tool's count of pairs in tilegate/; None where it is not on PATH."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None
    done = subprocess.run(
        [tool, "--repo", str(root / "tilegate"), "--most", "1", "--seconds", "120"],
        capture_output=True,
        text=True,
        check=False,
    )
    first = (done.stdout.splitlines() or [""])[0]
    if first.startswith("no duplicates"):
        return 0
    m = re.match(r"(\d+) pairs? ", first)
    return int(m.group(1)) if m else None


def main(argv: list[str]) -> int:
    n, long = lines(), long_functions()
    pairs = None if "--no-duplicates" in argv else duplicate_pairs()
    rows = [
        ("tilegate/ lines", f"{n:,}", f"<= {LINES:,}", n <= LINES),
        (f"functions > {FUNCTION_LINES} lines", str(len(long)), "0", not long),
        (
            "duplicate pairs (tilegate/)",
            "not measured" if pairs is None else str(pairs),
            f"<= {DUPLICATE_PAIRS}",
            pairs is None or pairs <= DUPLICATE_PAIRS,
        ),
    ]
    print("| budget | measured | limit | holds |\n|---|--:|--:|---|")
    for what, got, limit, holds in rows:
        print(f"| {what} | {got} | {limit} | {'yes' if holds else 'NO'} |")
    for name, length in long:
        print(f"- {name}: {length} lines")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
