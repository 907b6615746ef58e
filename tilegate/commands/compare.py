"""`tilegate compare RESULTS [BASELINE]`: judge a results file against its GPU's baseline."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared, judge_results

NAME = "compare"
HELP = "judge a results file against its GPU's baseline (exit 0/1/2)"
DESCRIPTION = "Judge RESULTS against BASELINE: per-row verdicts, expectations, a report."
PARENTS = ("judged", "baselines", "no_plots")
OUTPUTS = (str(PERF_DIR / "report.md"), str(PERF_DIR))


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
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


def run(args: argparse.Namespace) -> int:
    return judge_results(args, report_only=args.report_only)


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.report)] if args.report else []
