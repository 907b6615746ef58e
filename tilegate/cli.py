"""`tilegate COMMAND`: the command line. Each command is a module of tilegate.commands owning its
arguments and its run; this module only dispatches.

Exit codes (docs/architecture.md): 0 everything holds, 1 a regression or a broken expectation
(or a rebaseline refused because the runs are slower), 2 cannot judge (bad or missing input).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tilegate.commands import (
    ab_noise,
    baseline_diff,
    bisect,
    ci,
    comment,
    compare,
    explain,
    fingerprint,
    gpu,
    history,
    init,
    perf,
    rebaseline,
    report,
    summary,
    upgrade_ab,
)
from tilegate.commands._shared import build_parser, dispatch

# in the order `tilegate --help` lists them
COMMANDS = [compare, perf, baseline_diff, report, rebaseline, ab_noise, upgrade_ab, fingerprint]
COMMANDS += [history, init, explain, bisect, ci, comment, summary, gpu]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 0, 1 or 2. Whatever escapes a command is exit 2 (tilegate.run.crash)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return dispatch(build_parser(args, COMMANDS), args, {c.NAME: c for c in COMMANDS})


if __name__ == "__main__":
    raise SystemExit(main())
