"""`tilegate compare | report | rebaseline | fingerprint`: files in, a report and an exit code out.

Exit codes (docs/architecture.md): 0 everything holds, 1 a regression or a broken expectation
(or a rebaseline refused because the runs are slower), 2 cannot judge (bad or missing input).
No GPU is needed: everything here works on JSON files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tilegate import __version__
from tilegate.baseline import (
    DEFAULT_DIR,
    Baseline,
    baseline_path,
    how_to_create,
    load_baseline,
    load_tolerances,
    rebaseline,
    save_baseline,
)
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL, EXIT_OK, InputError
from tilegate.fileio import atomic_write_text
from tilegate.report import render
from tilegate.results import Run, load_results
from tilegate.verdict import Comparison, compare

PERF_DIR = Path(".perf")


def _err(message: str) -> None:
    print(f"tilegate: {message}", file=sys.stderr)


# --- compare / report ----------------------------------------------------------------------------


def _find_baseline(run: Run, given: str | None, directory: str) -> Path:
    return Path(given) if given else baseline_path(run.env.gpu.slug, directory)


def _plots(run: Run, cmp: Comparison | None, directory: Path | None) -> list[Path]:
    if directory is None:
        return []
    try:
        from tilegate import plots
    except ImportError as err:  # matplotlib is optional
        _err(f"no plots: {err} (install the `plots` dependency group)")
        return []
    return plots.make_plots(run, cmp, directory)


def _judge(args: argparse.Namespace, *, report_only: bool) -> int:
    report_path: Path | None = Path(args.report) if args.report else None
    try:
        run = load_results(args.results)
        path = _find_baseline(run, args.baseline, args.baselines)
        cmp: Comparison | None = None
        no_baseline = None
        if not path.is_file() and report_only:
            no_baseline = f"No baseline for {run.env.gpu.slug} at `{path}`, so no verdict. {how_to_create(run.env.gpu.slug, path)}"
        else:
            if not path.is_file():
                raise InputError(
                    f"no baseline for {run.env.gpu.slug}: {path} does not exist. {how_to_create(run.env.gpu.slug, path)} "
                    "To see the report without a verdict, pass --report-only."
                )
            baseline = load_baseline(path)
            confirmations = [load_results(c) for c in args.confirm or []]
            cmp = compare(run, baseline, confirmations, allow_missing=args.allow_missing)
        suspects_path = Path(args.suspects_out) if getattr(args, "suspects_out", None) else None
        if suspects_path is not None:
            keys = cmp.suspects() if cmp else []
            atomic_write_text(suspects_path, "".join(f"{k}\n" for k in keys))
        plot_dir = None if args.no_plots else Path(args.plots) if args.plots else None
        plot_files = _plots(run, cmp, plot_dir)
        text = render(
            run,
            cmp,
            report_only=report_only,
            no_baseline_reason=no_baseline,
            plots=plot_files,
            relative_to=report_path.parent if report_path else None,
            suspects_path=suspects_path,
        )
    except InputError as err:
        _err(f"cannot judge: {err}")
        if report_path is not None:
            atomic_write_text(report_path, f"# tilegate: CANNOT JUDGE (exit 2)\n\n{err}\n")
        return EXIT_CANNOT_JUDGE
    if report_path is not None:
        atomic_write_text(report_path, text)
    if args.quiet:
        print(text.splitlines()[0].lstrip("# "))
    else:
        print(text, end="")
    if report_path is not None:
        print(f"(report written to {report_path})", file=sys.stderr)
    if report_only or cmp is None:
        return EXIT_OK
    return cmp.exit_code


def _add_judge_arguments(
    p: argparse.ArgumentParser, *, default_report: str | None, default_plots: str | None
) -> None:
    p.add_argument(
        "results", help="results JSON of a perf run (pytest-benchmark JSON with tilegate's keys)"
    )
    p.add_argument(
        "baseline",
        nargs="?",
        help="baseline JSON (default: BASELINES/<gpu-slug>.json for the results' GPU)",
    )
    p.add_argument(
        "--baselines",
        default=str(DEFAULT_DIR),
        metavar="DIR",
        help="where <gpu-slug>.json is looked up (default: %(default)s)",
    )
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="judge the rest when baseline rows of measured groups are missing from the results (default: exit 2)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="print only the headline (the report file is complete)"
    )
    p.add_argument(
        "--plots",
        default=default_plots,
        metavar="DIR",
        help="write PNG plots here and link them from the report"
        + (" (default: %(default)s)" if default_plots else ""),
    )
    p.add_argument("--no-plots", action="store_true", help="no plots")
    p.add_argument(
        "--report",
        "--out",
        dest="report",
        default=default_report,
        metavar="PATH",
        help="also write the markdown report here"
        + (" (default: %(default)s)" if default_report else ""),
    )


def _cmd_compare(args: argparse.Namespace) -> int:
    return _judge(args, report_only=args.report_only)


def _cmd_report(args: argparse.Namespace) -> int:
    args.confirm = []
    return _judge(args, report_only=True)


# --- rebaseline ---------------------------------------------------------------------------------------


def _cmd_rebaseline(args: argparse.Namespace) -> int:
    out = Path(args.out)
    try:
        runs = [load_results(r) for r in args.results]
        old_path = Path(args.old) if args.old else out
        old: Baseline | None = None
        if old_path.is_file():
            old = load_baseline(old_path)
        elif args.old:
            raise InputError(f"old baseline {old_path} does not exist")
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
        _err(f"cannot rebaseline: {err}")
        return EXIT_CANNOT_JUDGE
    text = list(plan.lines)
    plan_warnings = list(plan.warnings)
    if not tol_path.is_file():
        plan_warnings.insert(0, f"no tolerances file at {tol_path}: the built-in policy was used")
    if plan_warnings:
        text += ["", "## Warnings", *(f"- {w}" for w in plan_warnings)]
    code = EXIT_OK
    if plan.refusals:
        text += ["", "## Slower than the old baseline", *(f"- {r}" for r in plan.refusals), ""]
        if args.accept_slower:
            text.append("Accepted with --accept-slower: say why in the commit message.")
        else:
            text.append(
                f"REFUSED: these runs are slower than {old.path if old else 'the old baseline'} allows, and a "
                "rebaseline must not hide a regression. If the slowdown is understood and accepted (say why in the "
                "commit message), run again with --accept-slower."
            )
            code = EXIT_FAIL
    if code == EXIT_OK and args.check:
        text += ["", f"--check: {out} not written."]
    elif code == EXIT_OK:
        save_baseline(out, plan.baseline)
        then = (
            "A smoke baseline proves the pipeline: do not commit it."
            if plan.baseline.mode == "smoke"
            else ("Review `git diff` and commit it.")
        )
        text += [
            "",
            f"Wrote {out} ({len(plan.baseline.rows)} rows, {len(plan.baseline.expectations)} expectations). {then}",
        ]
    print("\n".join(text))
    if args.diff_out:
        atomic_write_text(args.diff_out, "\n".join(text) + "\n")
    return code


# --- fingerprint (another module; imported only when asked for) ------------------------------------------


def _add_fingerprint(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: bool
) -> None:
    help_text = "compile the kernels ahead of time and check their TTGIR / ptxas facts (no GPU)"
    if not wanted:
        sub.add_parser("fingerprint", help=help_text, add_help=False)
        return
    p = sub.add_parser("fingerprint", help=help_text)
    try:
        from tilegate.fingerprint.cli import add_arguments, run
    except ImportError as err:
        reason = str(err)
        p.set_defaults(func=lambda _args: _missing_fingerprint(reason))
        return
    add_arguments(p)
    p.set_defaults(func=run)


def _missing_fingerprint(reason: str) -> int:
    _err(f"fingerprint is not available here: {reason}")
    return EXIT_CANNOT_JUDGE


# --- the parser -------------------------------------------------------------------------------------------


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilegate",
        description="CI performance gate for Triton matmul kernels. Exit 0: holds; 1: regression or broken "
        "expectation; 2: cannot judge.",
    )
    parser.add_argument("--version", action="version", version=f"tilegate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "compare",
        help="judge a results file against its GPU's baseline (exit 0/1/2)",
        description="Judge RESULTS against BASELINE: per-row verdicts, expectations, a report.",
    )
    _add_judge_arguments(p, default_report=str(PERF_DIR / "report.md"), default_plots=str(PERF_DIR))
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
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser(
        "report",
        help="write the markdown report (with the baseline's columns when there is one); exit 0",
        description="The report of RESULTS, with the baseline's comparison when one exists; never fails.",
    )
    _add_judge_arguments(p, default_report=None, default_plots=None)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "rebaseline",
        help="build baselines/<gpu>.json from repeated runs; print old vs new",
        description="Build a baseline from RESULTS (several runs of the suite on one GPU), keep the old "
        "baseline's rows that were not measured, print the diff, write atomically.",
    )
    p.add_argument(
        "results",
        nargs="*",
        help="results JSON of repeated runs (>= 3 recommended); none: re-derive "
        "tolerances of the old baseline from its stored drift",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="BASELINE",
        help="the baseline to write, e.g. baselines/nvidia-h200.json",
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
    p.set_defaults(func=_cmd_rebaseline)

    _add_fingerprint(sub, wanted=bool(argv) and "fingerprint" in argv[:1])
    from tilegate.history import add_subcommand as add_history

    add_history(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: --help is 0, a usage error is 2 ("cannot judge")
        return int(exc.code) if isinstance(exc.code, int) else EXIT_CANNOT_JUDGE
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
