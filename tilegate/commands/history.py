"""`tilegate history add | import | list | changepoints | dashboard | prune`: the history store,
its change points and the dashboard page (tilegate.history; docs/history.md).

Exit codes as everywhere: 0 done, 2 cannot do it (bad or missing input, a run already stored, a
corrupt or locked store). Nothing here measures a regression, so nothing exits 1. Without the
`history` extra (duckdb, filelock, ruptures, plotly), e.g. on a GPU runner's python, the command
is still listed and says what to install (exit 2) instead of breaking every other command. The
subcommands are tilegate/commands/_history.py, imported only when the command runs.
"""

from __future__ import annotations

import argparse

from tilegate.commands._shared import Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE

NAME = "history"
HELP = "the history store, its change points and the dashboard page"
DESCRIPTION = "Record runs in a DuckDB history, find change points, write the dashboard page."


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    if not shared.wanted(NAME):  # its modules (duckdb's among them) are imported only when it runs
        return
    try:
        from tilegate.commands._history import subcommands  # duckdb, ruptures, plotly: the extra's
    except ImportError as err:  # without the `history` extra
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(missing=f"{err} (install it with `pip install 'tilegate[history]'`)")
        return
    subcommands(p)  # each subcommand sets its own `func`


def run(args: argparse.Namespace) -> int:
    """Without the `history` extra: say what to install (a subcommand runs its own `func`)."""
    say(f"history is not available here: {args.missing}")
    return EXIT_CANNOT_JUDGE
