"""`tilegate history ...`: the history store, its change points and the dashboard page (its
subcommands and their arguments: tilegate.history.cli).

Without the `history` extra (duckdb, filelock, ruptures, plotly), e.g. on a GPU runner's
python, the command is still listed and says what to install (exit 2) instead of breaking
every other tilegate command.
"""

from __future__ import annotations

import argparse
from typing import Any

from tilegate.commands._shared import Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE

NAME = "history"
HELP = "the history store, its change points and the dashboard page"


def add(sub: Any, shared: Shared) -> None:
    try:
        from tilegate.history.cli import build
    except ImportError as err:
        reason = (
            f"history is not available here: {err} "
            "(install it with `pip install 'tilegate[history]'`)"
        )

        def unavailable(_args: Any) -> int:
            say(reason)
            return EXIT_CANNOT_JUDGE

        p = sub.add_parser(NAME, help=reason)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=unavailable)
        return
    p = sub.add_parser(
        NAME,
        help=HELP,
        description="Record runs in a DuckDB history, find change points, write the dashboard page.",
    )
    build(p)  # each subcommand sets its own `func`


def run(args: argparse.Namespace) -> int:
    return int(args.func(args))
