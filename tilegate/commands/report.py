"""`tilegate report RESULTS [BASELINE]`: the markdown report of a results file; never fails."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import judge_results

NAME = "report"
HELP = "write the markdown report (with the baseline's columns when there is one); exit 0"
DESCRIPTION = "The report of RESULTS, with the baseline's comparison when one exists; never fails."
PARENTS = ("judged", "baselines", "no_plots")
OUTPUTS = (None, None)


def run(args: argparse.Namespace) -> int:
    args.confirm = []
    return judge_results(args, report_only=True)


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.report)] if args.report else []
