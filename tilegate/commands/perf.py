"""`tilegate perf`: measure on this GPU, judge, re-measure the suspects (tilegate.run.loop)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared

NAME = "perf"
HELP = "measure on this GPU and judge against its baseline, re-measuring suspects (exit 0/1/2)"
DESCRIPTION = """Run the perf suite on this GPU, judge the results against
BASELINES/<gpu-slug>.json, measure suspect rows again before accusing them, write
.perf/results.json, report.md and plots. Unknown options go to pytest (e.g. --perf-variants,
--perf-axis AXIS=V1,V2, --perf-set NAME=VALUE, --inject)."""
PROFILE = "a profile of the configured benchmark"
PARENTS = ("baselines", "no_plots")


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument(
        "--baseline", metavar="BASELINE", help="baseline file (default: BASELINES/<gpu-slug>.json)"
    )
    p.add_argument("--report-only", action="store_true", help="no baseline needed: report, exit 0")
    p.add_argument(
        "--ab",
        metavar="REF",
        help="A/B: measure REF's kernels (git) beside the working tree's, in the same rounds, "
        "and judge each case on the paired ratio (a pull request: --ab HEAD^1)",
    )
    p.add_argument(
        "--baselines-from",
        metavar="REF",
        help="a pull request: judge with REF's baselines/ and diff the working tree's against "
        "it; a loosening fails unless --accept-baseline-change (tilegate.judge.integrity)",
    )
    p.add_argument(
        "--accept-baseline-change",
        action="store_true",
        help="a maintainer acknowledged the pull request's baselines/ changes (the label "
        "perf-baseline-change): they judge, listed at the top of the report",
    )
    p.add_argument(
        "--confirm-runs",
        type=int,
        default=1,
        help="re-measure suspect rows this many times before accusing them (default 1)",
    )
    p.add_argument(
        "--warm-within",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="a confirmation starting within SECONDS of the previous suite process's end skips "
        "the soak: the GPU is still warm (default 60; 0: always soak)",
    )
    p.add_argument(
        "--out-dir", default=str(PERF_DIR), metavar="DIR", help="where results, report and plots go"
    )
    p.add_argument(
        "--gpus",
        default="1",
        metavar="all|N",
        help="spread the groups over the host's GPUs, one process each, results merged (default: 1)",
    )
    p.set_defaults(takes_pytest_args=True)


def run(args: argparse.Namespace) -> int:
    from tilegate.run.loop import Perf

    return Perf(
        profile=args.profile,
        baseline=Path(args.baseline) if args.baseline else None,
        baselines_dir=Path(args.baselines),
        report_only=args.report_only,
        confirm_runs=args.confirm_runs,
        warm_within_s=args.warm_within,
        pytest_args=args.pytest_args,
        out_dir=Path(args.out_dir),
        plots=not args.no_plots,
        ab=args.ab,
        gpus=gpus(args.gpus),
        baselines_from=args.baselines_from,
        accept_baseline_change=args.accept_baseline_change,
    ).run()


def gpus(text: str) -> int:
    """`--gpus all` (every GPU torch sees) or a count."""
    if text == "all":
        from tilegate.harness.device import gpu_count

        return max(1, gpu_count())
    if not text.isdigit() or int(text) < 1:
        raise SystemExit(f"tilegate perf: --gpus takes 'all' or a positive count, not {text!r}")
    return int(text)


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.out_dir) / "report.md"]
