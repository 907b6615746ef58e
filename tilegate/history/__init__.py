"""The main branch's performance over time: a history store, change points, and a page.

* `store`: an embedded DuckDB database file (default `.perf/history.duckdb`) of measured runs,
  one row per run and one per (run, case); appended from results files, never rewritten.
* `verdicts`: the gate's verdict per case, when a baseline or a verdicts file is given.
* `changepoints`: change points per case on the reference-normalised series, with significance.
* `dashboard`: one self-contained static HTML page (inline data, JS and CSS; works offline).
* `cli`: `tilegate history add | import | list | changepoints | dashboard | prune`.

docs/history.md describes the schema, the commands, the method and the limits. Nothing here
needs a GPU, torch or Triton.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_subcommand(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `tilegate history` to tilegate's parser.

    Without the `history` extra (duckdb, filelock, ruptures, plotly), e.g. on a GPU runner's
    python, the command is still listed and says what to install (exit 2) instead of breaking
    every other tilegate command.
    """
    try:
        from tilegate.history.cli import add_subcommand as add
    except ImportError as err:
        reason = f"history is not available here: {err} (install it with `pip install 'tilegate[history]'`)"

        def unavailable(_args: Any) -> int:
            print(f"tilegate: {reason}", file=sys.stderr)
            return 2

        p = subparsers.add_parser("history", help=reason)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=unavailable)
        return
    add(subparsers)
