"""`tilegate bisect GOOD BAD`: which commit changed the cases' time, identity first, time second
(tilegate.run.culprit; docs/bisect.md). Exit 0 once the bisect has its answer (found, several,
ambiguous or none: an answer, not a verdict), 2 on bad input or a crash."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tilegate.commands._shared import PERF_DIR, Shared

NAME = "bisect"


def add(sub: Any, shared: Shared) -> None:
    p = sub.add_parser(
        NAME,
        help="find the commit of GOOD..BAD that changed the cases' time: pruned by compiled "
        "code, then paired A/B steps",
        description="Bisect GOOD..BAD on GOOD's protocol: each commit's compiled identity of the "
        "cases first (no timing; equal runs collapse, a commit that does not import is skipped), "
        "then paired A/B steps (SAME / DIFFERENT / UNKNOWN from the interval, more rounds while "
        "UNKNOWN) over the commits where the identity changes, the culprit confirmed against its "
        "parent and explained. Writes .perf/bisect/report.md and bisect.json.",
        parents=[shared.profile(NAME, use="the profile whose cases are bisected")],
    )
    p.add_argument("good", help="a commit where the cases were as before")
    p.add_argument("bad", help="a later commit (a descendant of GOOD) where they changed")
    p.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="PATTERN",
        help="the case ids to bisect (fnmatch or a regular expression; repeatable)",
    )
    p.add_argument(
        "--from",
        dest="verdicts",
        metavar="PATH",
        help="a run's verdicts.json: its SLOWER, FASTER and REGRESSED cases",
    )
    p.add_argument("--rounds", type=int, default=32, help="paired rounds of a step's first try")
    p.add_argument(
        "--max-rounds", type=int, default=256, help="the cap of an UNKNOWN step's rounds"
    )
    p.add_argument("--resume", action="store_true", help="go on from .perf/bisect/bisect.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tilegate.run.culprit import Bisect

    return Bisect(
        args.good,
        args.bad,
        profile=args.profile,
        patterns=args.case,
        verdicts=Path(args.verdicts) if args.verdicts else None,
        rounds=args.rounds,
        max_rounds=args.max_rounds,
        resume=args.resume,
        out_dir=PERF_DIR / NAME,
    ).run()
