"""`tilegate rebaseline`: a GPU's baseline from repeated runs (measured first with --measure N)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.fileio import atomic_write_text
from tilegate.judge.baseline import DEFAULT_DIR, Baseline, baseline_path
from tilegate.run.crash import replace_reports
from tilegate.store.files import load_baseline, load_results, load_tolerances, save_baseline

NAME = "rebaseline"
HELP = "build baselines/<gpu>.json from repeated runs; print old vs new"
DESCRIPTION = """Build a baseline from RESULTS (several runs of the suite on one GPU), keep the old
baseline's rows that were not measured, print the diff, write atomically."""
MEASURE = "run the perf suite N times on this GPU first and rebaseline from those runs"
PROFILE = "with --measure: the profile"


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument(
        "results",
        nargs="*",
        help="results JSON of repeated runs (>= 3 recommended); none: re-derive "
        "tolerances of the old baseline from its stored drift",
    )
    p.add_argument(
        "--out",
        metavar="BASELINE",
        help="the baseline to write, e.g. baselines/nvidia-h200.json (with --measure: "
        "default baselines/<gpu-slug>.json)",
    )
    p.add_argument(
        "--old",
        metavar="BASELINE",
        help="the previous baseline to diff against and keep rows from (default: --out if it exists)",
    )
    p.add_argument(
        "--tolerances",
        metavar="TOML",
        help="tolerance policy and overrides (default: tolerances.toml beside --out)",
    )
    p.add_argument("--check", action="store_true", help="print the diff, write nothing")
    p.add_argument("--diff-out", metavar="PATH", help="also write the printed diff (markdown) here")
    p.add_argument(
        "--accept-slower",
        action="store_true",
        help="write even when rows are slower than the old tolerance or an expectation breaks",
    )
    p.set_defaults(takes_pytest_args=True)


def _measured(args: argparse.Namespace) -> tuple[list[str], Path | None, int | None]:
    """`--measure N`: run the suite N times first; (results files, default --out, exit code)."""
    from tilegate.judge.results import SMOKE_SLUG
    from tilegate.run.loop import gpu_slug, measure_runs
    from tilegate.run.profiles import interpreter

    if args.results:
        raise InputError("give either results files or --measure N, not both")
    if args.measure < 1:
        raise InputError(f"--measure needs at least 1 run, got {args.measure}")
    slug = SMOKE_SLUG
    if not interpreter(args.profile):
        try:
            slug = gpu_slug()
        except (RuntimeError, ImportError) as err:
            raise InputError(f"cannot measure: {err}") from err
    runs, failed = measure_runs(args.measure, args.profile, args.pytest_args, PERF_DIR)
    if failed:
        say(f"cannot rebaseline: {failed}")
        return [], None, EXIT_CANNOT_JUDGE
    return [str(r) for r in runs], DEFAULT_DIR / f"{slug}.json", None


def run(args: argparse.Namespace) -> int:
    from tilegate.judge.rebaselining import rebaseline
    from tilegate.judge.rebasereview import finish

    try:
        results, out = list(args.results), Path(args.out) if args.out else None
        if args.measure is not None:
            results, default_out, failed = _measured(args)
            if failed is not None:
                return failed
            out = out or default_out
        if out is None:
            raise InputError("--out BASELINE is required (it is optional only with --measure)")
        runs = [load_results(r) for r in results]
        if out.is_dir():
            slug = runs[0].env.gpu.slug if runs else "<gpu-slug>"
            raise InputError(
                f"--out {out} is a directory: give the baseline file to write, e.g. "
                f"{baseline_path(slug, out)}"
            )
        old_path = Path(args.old) if args.old else out
        old: Baseline | None = None
        if args.old or old_path.exists():  # load_baseline names what is wrong with it
            old = load_baseline(old_path)
        tol_path = Path(args.tolerances) if args.tolerances else out.parent / "tolerances.toml"
        tolerances = load_tolerances(tol_path, required=bool(args.tolerances))
        plan = rebaseline(
            runs,
            out=out,
            old=old,
            tolerances=tolerances,
            tolerances_path=str(tol_path) if tol_path.is_file() else None,
        )
    except InputError as err:
        unwritten = replace_reports([Path(args.diff_out)] if args.diff_out else [], str(err))
        say("; ".join([f"cannot rebaseline: {err}", *unwritten]))
        return EXIT_CANNOT_JUDGE
    code, text = finish(
        plan,
        out=out,
        write=not args.check,
        accept_slower=args.accept_slower,
        tolerances_missing=None if tol_path.is_file() else tol_path,
    )
    if code == 0 and not args.check:
        save_baseline(out, plan.baseline)
    print("\n".join(text))
    if args.diff_out:
        atomic_write_text(args.diff_out, "\n".join(text) + "\n")
    return code


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.diff_out)] if args.diff_out else []
