"""`tilegate explain RESULTS [CASE...]`: why each decided case of an A/B results file changed,
with the verdicts of the run that wrote it (tilegate.report.explain renders them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tilegate.commands._shared import Shared
from tilegate.errors import EXIT_OK
from tilegate.explain.diff import MAX_LINES
from tilegate.report.explain import explain_command

NAME = "explain"


def add(sub: Any, shared: Shared) -> None:
    p = sub.add_parser(
        NAME,
        help="say why each decided case of an A/B results file changed (launches, compile facts)",
        description=(
            "For a results file written earlier (an A/B run, e.g. a CI artifact): per case whose "
            "code changed and whose verdict is decided, what differs between base and head: "
            "launches added or dropped with their share of the GPU time, and per changed Triton "
            f"kernel its compile facts (at most {MAX_LINES} lines a case). Name cases to explain "
            "them whatever their verdict. Exit 0; 2 for a bad file or an unknown case."
        ),
    )
    p.add_argument("results", metavar="RESULTS", help="a results JSON written by `tilegate perf`")
    p.add_argument("cases", nargs="*", metavar="CASE", help="case ids (default: the decided ones)")
    p.add_argument(
        "--baselines",
        default="baselines",
        metavar="DIR",
        help="where the A/B noise file is, for the verdicts (default: baselines)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also write explanations.json into DIR, and each case's TTGIR diff where both "
        "sides' TTGIR is at hand (explain/ir/ beside RESULTS, as `tilegate perf` leaves it)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    code, out = explain_command(
        Path(args.results),
        args.cases,
        Path(args.baselines),
        Path(args.out) if args.out else None,
    )
    (sys.stdout if code == EXIT_OK else sys.stderr).write(out if out.endswith("\n") else out + "\n")
    return code
