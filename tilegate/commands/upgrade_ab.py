"""`tilegate upgrade-ab --new DIR`: a Triton (or library) upgrade on this GPU (tilegate.run.upgrade)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tilegate.commands._shared import PERF_DIR, Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.fileio import atomic_write_text
from tilegate.judge.results import load_results

NAME = "upgrade-ab"


def add(sub: Any, shared: Shared) -> None:
    p = sub.add_parser(
        NAME,
        help="a Triton (or library) upgrade on this GPU: the suite under the runner's "
        "environment and a new one (DIR first on PYTHONPATH), alternating processes, each case "
        "on its ratio to the benchmark's reference",
        description="Run the perf suite --repeats times under each environment, alternating, and "
        "judge each case and kernel on its ratio to the benchmark's reference variant, measured "
        "in the same process (the reference is the same on both sides); for a Triton upgrade, "
        "the compile fingerprint's upgrade report beside it. Unknown options go to pytest.",
        parents=[shared.profile("upgrade-ab", use="the profile")],
    )
    p.add_argument(
        "--new", required=True, metavar="DIR", help="a directory holding the new triton/"
    )
    p.add_argument(
        "--old", metavar="DIR", help="the old side's triton/ (default: the runner's own)"
    )
    p.add_argument("--repeats", type=int, default=3, help="processes per side (default: 3)")
    p.add_argument(
        "--no-fingerprint", action="store_true", help="skip the compile fingerprint's diff"
    )
    p.set_defaults(func=run, takes_pytest_args=True)


def run(args: argparse.Namespace) -> int:
    from tilegate.judge.outcome import upgrade_outcome
    from tilegate.judge.upgrade import judge_upgrade
    from tilegate.report.upgrade import render
    from tilegate.run.perf import run_suite
    from tilegate.run.upgrade import explain, fingerprint_diff, measure_sides

    out_dir = PERF_DIR / "upgrade-ab"
    try:
        old, new = measure_sides(
            Path(args.new),
            Path(args.old) if args.old else None,
            args.repeats,
            args.profile,
            args.pytest_args,
            out_dir,
            suite=run_suite,
        )
        cmp = judge_upgrade([load_results(p) for p in old], [load_results(p) for p in new])
    except InputError as err:
        say(f"cannot judge the upgrade: {err}")
        atomic_write_text(
            out_dir / "report.md", f"# tilegate upgrade A/B: CANNOT JUDGE (exit 2)\n\n{err}\n"
        )
        return EXIT_CANNOT_JUDGE
    old_triton = cmp.old_runs[0].env.software.get("triton", "")
    fp = (
        None
        if args.no_fingerprint
        else fingerprint_diff(Path(args.new), old_triton, out_dir / "fingerprint.md")
    )
    result = upgrade_outcome(cmp)
    text = render(cmp, result, fp, explain(cmp, old[0], new[0]))
    atomic_write_text(out_dir / "report.md", text)
    print(text, end="")
    print(f"(report written to {out_dir / 'report.md'})", file=sys.stderr)
    return result.code
