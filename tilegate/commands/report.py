"""`tilegate report RESULTS [BASELINE]`: the markdown report of a results file; never fails."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tilegate.commands._shared import Shared, judge_results

NAME = "report"


def add(sub: Any, shared: Shared) -> None:
    p = sub.add_parser(
        NAME,
        help="write the markdown report (with the baseline's columns when there is one); exit 0",
        description="The report of RESULTS, with the baseline's comparison when one exists; never fails.",
        parents=[
            shared.judged,
            shared.baselines,
            shared.no_plots,
            shared.outputs(default_report=None, default_plots=None),
        ],
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.confirm = []
    return judge_results(args, report_only=True)


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.report)] if args.report else []
