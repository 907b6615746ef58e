"""`tilegate fingerprint`: compile the kernels ahead of time and check their compile facts
(tilegate.run.fingerprint, also `python -m tilegate.run.fingerprint`). Its module imports
Triton's compiler: it is imported only when the command line asks for it."""

from __future__ import annotations

import argparse
from typing import Any

from tilegate.commands._shared import Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE

NAME = "fingerprint"
HELP = "compile the kernels ahead of time and check their TTGIR / ptxas facts (no GPU)"


def add(sub: Any, shared: Shared) -> None:
    if not shared.wanted(NAME):
        sub.add_parser(NAME, help=HELP, add_help=False)
        return
    p = sub.add_parser(NAME, help=HELP)
    try:
        from tilegate.run.fingerprint import add_arguments
        from tilegate.run.fingerprint import run as run_fingerprint
    except ImportError as err:
        reason = str(err)
        p.set_defaults(func=lambda _args: _missing(reason))
        return
    add_arguments(p, profiles=shared.profile_names(NAME))
    p.set_defaults(func=run_fingerprint)


def run(args: argparse.Namespace) -> int:
    return int(args.func(args))


def _missing(reason: str) -> int:
    say(f"fingerprint is not available here: {reason}")
    return EXIT_CANNOT_JUDGE
