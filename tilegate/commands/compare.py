"""`tilegate compare RESULTS [BASELINE]`: judge a results file against its GPU's baseline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tilegate.commands._shared import PERF_DIR, Shared, judge_results

NAME = "compare"


def add(sub: Any, shared: Shared) -> None:
    p = sub.add_parser(
        NAME,
        help="judge a results file against its GPU's baseline (exit 0/1/2)",
        description="Judge RESULTS against BASELINE: per-row verdicts, expectations, a report.",
        parents=[
            shared.judged,
            shared.baselines,
            shared.no_plots,
            shared.outputs(default_report=str(PERF_DIR / "report.md"), default_plots=str(PERF_DIR)),
        ],
    )
    p.add_argument(
        "--confirm",
        action="append",
        metavar="RERUN.json",
        help="a re-measurement of the suspects (repeatable): suspect rows are judged on all their runs",
    )
    p.add_argument(
        "--suspects-out",
        metavar="FILE",
        help="write the case ids to measure again (regressed, unsure, broken expectations), one per line",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="never fail: without a baseline report the run alone; with one, report the verdict but exit 0",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return judge_results(args, report_only=args.report_only)


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.report)] if args.report else []
