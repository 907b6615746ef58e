"""`tilegate compare | perf | report | rebaseline | fingerprint`: the command line.

Exit codes (docs/architecture.md): 0 everything holds, 1 a regression or a broken expectation
(or a rebaseline refused because the runs are slower), 2 cannot judge (bad or missing input).
`compare`, `report` and `rebaseline RESULTS...` need no GPU: they work on JSON files; `perf` and
`rebaseline --measure N` run the suite on this machine's GPU (tilegate.run.perf).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tilegate import __version__
from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.fileio import atomic_write_text
from tilegate.judge.baseline import DEFAULT_DIR, Baseline, baseline_path, load_baseline
from tilegate.judge.policy import load_tolerances
from tilegate.judge.results import load_results
from tilegate.run.crash import guarded, replace_reports
from tilegate.run.gate import gate
from tilegate.run.profiles import add_profile_argument, check_profile, profile_names, wants_help

PERF_DIR = Path(".perf")


def _err(message: str) -> None:
    print(f"tilegate: {message}", file=sys.stderr)


# --- compare / report ----------------------------------------------------------------------------


def _judge(args: argparse.Namespace, *, report_only: bool) -> int:
    report_path: Path | None = Path(args.report) if args.report else None
    judged = gate(
        Path(args.results),
        Path(args.baseline) if args.baseline else None,
        [Path(c) for c in args.confirm or []],
        baselines_dir=Path(args.baselines),
        report_path=report_path,
        plots_dir=None if args.no_plots else Path(args.plots) if args.plots else None,
        report_only=report_only,
        allow_missing=args.allow_missing,
        suspects_path=Path(args.suspects_out) if getattr(args, "suspects_out", None) else None,
    )
    for note in judged.notes:
        _err(note)
    if judged.error is not None:
        _err(f"cannot judge: {judged.error}")
        return judged.code
    print(judged.headline if args.quiet else judged.text, end="\n" if args.quiet else "")
    if report_path is not None:
        print(f"(report written to {report_path})", file=sys.stderr)
    return judged.code


def _parent() -> argparse.ArgumentParser:
    """A parent parser: options that several subcommand parsers take (`parents=[...]`)."""
    return argparse.ArgumentParser(add_help=False)


class _Shared:
    """The options that several commands take, each written once: argparse parent parsers.

    `argv` asking for one command's --help (build_parser) loads the configured benchmark's
    profiles for that command's --profile choices; nothing else loads the benchmark here.
    """

    def __init__(self, argv: Sequence[str]) -> None:
        self._help_for = argv[0] if argv and wants_help(argv) else None
        # compare, report
        self.judged = _parent()
        self.judged.add_argument(
            "results",
            help="results JSON of a perf run (pytest-benchmark JSON with tilegate's keys)",
        )
        self.judged.add_argument(
            "baseline",
            nargs="?",
            help="baseline JSON (default: BASELINES/<gpu-slug>.json for the results' GPU)",
        )
        self.judged.add_argument(
            "--allow-missing",
            action="store_true",
            help="judge the rest when baseline rows of measured groups are missing from the results (default: exit 2)",
        )
        self.judged.add_argument(
            "--quiet",
            action="store_true",
            help="print only the headline (the report file is complete)",
        )
        # compare, report, perf
        self.baselines = _parent()
        self.baselines.add_argument(
            "--baselines",
            default=str(DEFAULT_DIR),
            metavar="DIR",
            help="where <gpu-slug>.json is looked up (default: %(default)s)",
        )
        self.no_plots = _parent()
        self.no_plots.add_argument("--no-plots", action="store_true", help="no plots")

    def outputs(
        self, *, default_report: str | None, default_plots: str | None
    ) -> argparse.ArgumentParser:
        """compare, report: where the report and its plots go (each command its defaults)."""
        p = _parent()
        p.add_argument(
            "--plots",
            default=default_plots,
            metavar="DIR",
            help="write PNG plots here and link them from the report"
            + (" (default: %(default)s)" if default_plots else ""),
        )
        p.add_argument(
            "--report",
            "--out",
            dest="report",
            default=default_report,
            metavar="PATH",
            help="also write the markdown report here"
            + (" (default: %(default)s)" if default_report else ""),
        )
        return p

    def measure(self, what: str) -> argparse.ArgumentParser:
        """rebaseline, ab-noise: `--measure N` runs the suite N times first; `what` they are for."""
        p = _parent()
        p.add_argument(
            "--measure",
            "--repeats",
            dest="measure",
            type=int,
            metavar="N",
            help=f"{what} (unknown options go to pytest)",
        )
        return p

    def profile(self, command: str, *, use: str) -> argparse.ArgumentParser:
        """`--profile` of `command`, checked (and its default, the benchmark's, resolved) by main
        before the command runs (check_profile)."""
        p = _parent()
        add_profile_argument(p, use=use, names=self.profile_names(command))
        p.set_defaults(profile_checked_here=True)
        return p

    def profile_names(self, command: str) -> Sequence[str] | None:
        """The benchmark's profiles for `command`'s --help (None: no help asked, or no config)."""
        return profile_names() if command == self._help_for else None


def _cmd_compare(args: argparse.Namespace) -> int:
    return _judge(args, report_only=args.report_only)


def _cmd_report(args: argparse.Namespace) -> int:
    args.confirm = []
    return _judge(args, report_only=True)


# --- perf: measure and judge (the GPU runner's command) --------------------------------------------------


def _cmd_perf(args: argparse.Namespace) -> int:
    from tilegate.run.perf import Perf

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
        gpus=_gpus(args.gpus),
        baselines_from=args.baselines_from,
        accept_baseline_change=args.accept_baseline_change,
    ).run()


def _cmd_baseline_diff(args: argparse.Namespace) -> int:
    from tilegate.judge.integrity import check_pull_request

    found = check_pull_request(
        args.base_ref,
        Path(args.baselines),
        Path(args.repo),
        PERF_DIR / "base-baselines",
        acknowledged=args.accept_baseline_change,
    )
    text = found.banner() or f"baselines/ is {args.base_ref}'s: nothing to review.\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text, end="")
    return found.code


def _gpus(text: str) -> int:
    """`--gpus all` (every GPU torch sees) or a count."""
    if text == "all":
        from tilegate.harness.device import gpu_count

        return max(1, gpu_count())
    if not text.isdigit() or int(text) < 1:
        raise SystemExit(f"tilegate perf: --gpus takes 'all' or a positive count, not {text!r}")
    return int(text)


# --- rebaseline ---------------------------------------------------------------------------------------


def _measured(args: argparse.Namespace) -> tuple[list[str], Path | None, int | None]:
    """`--measure N`: run the suite N times first; (results files, default --out, exit code)."""
    from tilegate.judge.results import SMOKE_SLUG
    from tilegate.run.perf import gpu_slug, measure_runs
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
        _err(f"cannot rebaseline: {failed}")
        return [], None, EXIT_CANNOT_JUDGE
    return [str(r) for r in runs], DEFAULT_DIR / f"{slug}.json", None


def _cmd_rebaseline(args: argparse.Namespace) -> int:
    from tilegate.judge.rebaseline import finish, rebaseline

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
        _err("; ".join([f"cannot rebaseline: {err}", *unwritten]))
        return EXIT_CANNOT_JUDGE
    code, text = finish(
        plan,
        out=out,
        write=not args.check,
        accept_slower=args.accept_slower,
        tolerances_missing=None if tol_path.is_file() else tol_path,
    )
    print("\n".join(text))
    if args.diff_out:
        atomic_write_text(args.diff_out, "\n".join(text) + "\n")
    return code


# --- ab-noise: the A/A noise that sets the A/B tolerances -------------------------------------------------


def _profile_count(spec: str) -> tuple[str, int]:
    """`--also PROFILE=N`: (PROFILE, N); InputError naming the spec otherwise."""
    profile, _, n = spec.partition("=")
    if not profile or not n.isdigit() or int(n) < 1:
        raise InputError(f"--also {spec!r}: expected PROFILE=N with N >= 1, e.g. default=1")
    return profile, int(n)


def _cmd_ab_noise(args: argparse.Namespace) -> int:
    from tilegate.judge.ab import MIN_NOISE_RUNS, POOLED, build_noise, noise_path, save_noise
    from tilegate.markdown import table

    try:
        results = list(args.results)
        also = [_profile_count(spec) for spec in args.also]
        if also and args.measure is None:
            raise InputError("--also PROFILE=N measures more A/A runs: give it with --measure N")
        if args.measure is not None:
            from tilegate.run.perf import ab_args, gpu_slug, measure_runs
            from tilegate.run.profiles import check_profile, interpreter

            if results:
                raise InputError("give either A/A results files or --measure N, not both")
            for profile, _ in also:
                check_profile(profile)
            try:
                if not interpreter(args.profile):
                    gpu_slug()  # no GPU: say so before materialising anything
            except (RuntimeError, ImportError) as err:
                raise InputError(f"cannot measure: {err}") from err
            # A/A calibration needs the full ratio distribution: no budget (--perf-ab-full)
            extra = [*args.pytest_args, *ab_args("HEAD", PERF_DIR), "--perf-ab-full"]
            # the main profile's runs, then --also's: each profile's cases get their own runs
            plan = [(args.profile, args.measure, "ab-noise")]
            plan += [(profile, n, f"ab-noise-{profile}") for profile, n in also]
            for profile, n, name in plan:
                runs_made, failed = measure_runs(n, profile, extra, PERF_DIR, name=name)
                if failed:
                    raise InputError(f"{profile}: {failed}")
                results += [str(r) for r in runs_made]
        runs = [load_results(r) for r in results]
        out = Path(args.out) if args.out else noise_path(runs[0].env.gpu.slug) if runs else None
        if out is None:
            raise InputError("ab-noise needs A/A results files or --measure N")
        noise = build_noise(runs, out)
    except InputError as err:
        _err(f"cannot record the A/B noise: {err}")
        return EXIT_CANNOT_JUDGE
    rows = [
        (
            f"`{r.key}`",
            ", ".join(f"{x:.4f}" for x in r.run_ratios),
            f"{r.spread:.2%}",
            f"{r.noise:.2%}",
            f"{r.tolerance:.2%}",
            r.source,
        )
        for r in noise.rows.values()
    ]
    text = [
        f"# A/B noise {noise.gpu.get('slug')} -> {out}",
        "",
        f"From {len(runs)} A/A run(s) (REF = the head: both sides the same compiled code). "
        f"Spread: max |ratio - 1|. Noise: the {noise.policy.noise_confidence:.0%} upper bound "
        "of the RMS of ratio - 1 (wide from few runs, tighter with more). Tolerance = "
        f"clamp({noise.policy.multiple:g} x noise, "
        f"{noise.policy.floor:.1%}, {noise.policy.ceiling:.1%}); a case seen in fewer than "
        f"{MIN_NOISE_RUNS} runs gets at least the largest tolerance of those seen that often "
        f"({POOLED}).",
        "",
        *table(
            ["case", "A/A ratio per run", "spread", "noise", "tolerance", "bound"], "llrrrl", rows
        ),
    ]
    if args.check:
        text += ["", f"--check: {out} not written."]
    else:
        save_noise(noise)
        text += ["", f"Wrote {out} ({len(noise.rows)} cases). Review `git diff` and commit it."]
    print("\n".join(text))
    return 0


# --- upgrade-ab: the suite under two Tritons, alternating processes ------------------------------------


def _cmd_upgrade_ab(args: argparse.Namespace) -> int:
    from tilegate.judge.outcome import upgrade_outcome
    from tilegate.judge.upgrade import judge_upgrade
    from tilegate.run.perf import run_suite
    from tilegate.run.upgrade import explain, fingerprint_diff, measure_sides, render

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
        _err(f"cannot judge the upgrade: {err}")
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
    text = render(cmp, fp, explain(cmp, old[0], new[0]))
    atomic_write_text(out_dir / "report.md", text)
    print(text, end="")
    print(f"(report written to {out_dir / 'report.md'})", file=sys.stderr)
    return upgrade_outcome(cmp).code


# --- fingerprint (another module; imported only when asked for) ------------------------------------------


def _add_fingerprint(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    wanted: bool,
    profiles: Sequence[str] | None,
) -> None:
    help_text = "compile the kernels ahead of time and check their TTGIR / ptxas facts (no GPU)"
    if not wanted:
        sub.add_parser("fingerprint", help=help_text, add_help=False)
        return
    p = sub.add_parser("fingerprint", help=help_text)
    try:
        from tilegate.run.fingerprint import add_arguments, run
    except ImportError as err:
        reason = str(err)
        p.set_defaults(func=lambda _args: _missing_fingerprint(reason))
        return
    add_arguments(p, profiles=profiles)
    p.set_defaults(func=run)


def _missing_fingerprint(reason: str) -> int:
    _err(f"fingerprint is not available here: {reason}")
    return EXIT_CANNOT_JUDGE


# --- the parser -------------------------------------------------------------------------------------------


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tilegate",
        description="CI performance gate for Triton kernels. Exit 0: holds; 1: regression or broken "
        "expectation; 2: cannot judge.",
    )
    parser.add_argument("--version", action="version", version=f"tilegate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shared = _Shared(argv)

    p = sub.add_parser(
        "compare",
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
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser(
        "perf",
        help="measure on this GPU and judge against its baseline, re-measuring suspects (exit 0/1/2)",
        description="Run the perf suite on this GPU, judge the results against "
        "BASELINES/<gpu-slug>.json, measure suspect rows again before accusing them, write "
        ".perf/results.json, report.md and plots. Unknown options go to pytest (e.g. "
        "--perf-variants, --perf-axis AXIS=V1,V2, --perf-set NAME=VALUE, --inject).",
        parents=[
            shared.profile("perf", use="a profile of the configured benchmark"),
            shared.baselines,
            shared.no_plots,
        ],
    )
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
    p.set_defaults(func=_cmd_perf, takes_pytest_args=True)

    p = sub.add_parser(
        "baseline-diff",
        help="a pull request's baselines/ against the base's: exit 1 if it loosens the gate",
        description="Diff the working tree's baselines/ against REF's (tolerances, expectations, "
        "A/B noise, fingerprints) and check both against their own policy. Exit 1 when a change "
        "loosens the gate and --accept-baseline-change is not given; 2 on bad input.",
    )
    p.add_argument(
        "--base-ref", required=True, metavar="REF", help="the base commit (HEAD^1 in a PR)"
    )
    p.add_argument("--baselines", default="baselines", help="the pull request's baselines/")
    p.add_argument("--repo", default=".", help="the git repository (default: .)")
    p.add_argument("--out", metavar="PATH", help="also write the markdown listing here")
    p.add_argument("--accept-baseline-change", action="store_true", help="acknowledged: exit 0")
    p.set_defaults(func=_cmd_baseline_diff)

    p = sub.add_parser(
        "report",
        help="write the markdown report (with the baseline's columns when there is one); exit 0",
        description="The report of RESULTS, with the baseline's comparison when one exists; never fails.",
        parents=[
            shared.judged,
            shared.baselines,
            shared.no_plots,
            shared.outputs(default_report=None, default_plots=None),
        ],
    )
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "rebaseline",
        help="build baselines/<gpu>.json from repeated runs; print old vs new",
        description="Build a baseline from RESULTS (several runs of the suite on one GPU), keep the old "
        "baseline's rows that were not measured, print the diff, write atomically.",
        parents=[
            shared.measure(
                "run the perf suite N times on this GPU first and rebaseline from those runs"
            ),
            shared.profile("rebaseline", use="with --measure: the profile"),
        ],
    )
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
    p.set_defaults(func=_cmd_rebaseline, takes_pytest_args=True)

    p = sub.add_parser(
        "ab-noise",
        help="record the A/A noise of the A/B paired ratio on this GPU (sets the A/B tolerances)",
        description="Build baselines/<gpu-slug>.ab.json from A/A runs (`tilegate perf --ab HEAD`: "
        "both sides the same code), or measure N of them first with --measure N.",
        parents=[
            shared.measure("run N A/A runs on this GPU first"),
            shared.profile("ab-noise", use="with --measure: the profile"),
        ],
    )
    p.add_argument("results", nargs="*", help="results JSON of A/A runs")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="PROFILE=N",
        help="with --measure: N A/A runs of another profile too (repeatable), so that its cases "
        "are calibrated (3 runs each at least, MIN_NOISE_RUNS): `--measure 4 --also default=3`",
    )
    p.add_argument("--out", metavar="FILE", help="default: baselines/<gpu-slug>.ab.json")
    p.add_argument("--check", action="store_true", help="print the noise, write nothing")
    p.set_defaults(func=_cmd_ab_noise, takes_pytest_args=True)

    p = sub.add_parser(
        "upgrade-ab",
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
    p.set_defaults(func=_cmd_upgrade_ab, takes_pytest_args=True)

    _add_fingerprint(
        sub,
        wanted=bool(argv) and "fingerprint" in argv[:1],
        profiles=shared.profile_names("fingerprint"),
    )
    from tilegate.history import add_subcommand as add_history

    add_history(sub)
    from tilegate.starter import add_subcommand as add_init

    add_init(sub)
    from tilegate.report.explain import add_subcommand as add_explain

    add_explain(sub)
    return parser


def _reports(args: argparse.Namespace) -> list[Path]:
    """The report files the command writes: a crash replaces them with a CANNOT JUDGE report."""
    if args.command in ("compare", "report"):
        return [Path(args.report)] if args.report else []
    if args.command == "perf":
        return [Path(args.out_dir) / "report.md"]
    if args.command == "rebaseline":
        return [Path(args.diff_out)] if args.diff_out else []
    return []  # fingerprint writes its own (tilegate.run.fingerprint); the others write none


def _run(args: argparse.Namespace) -> int:
    """The command, its --profile checked first (InputError: exit 2, before any GPU work).

    rebaseline and ab-noise use theirs only with --measure; fingerprint checks its own
    (tilegate.run.fingerprint: its CANNOT JUDGE report says why).
    """
    if getattr(args, "profile_checked_here", False) and (
        not hasattr(args, "measure") or args.measure is not None
    ):
        args.profile = check_profile(args.profile)
    return int(args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit 0, 1 or 2. Whatever escapes a command is exit 2 (tilegate.run.crash)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    try:
        args, rest = parser.parse_known_args(args_list)
        # `perf` and `rebaseline --measure` pass what they do not know on to pytest
        if rest and not (
            getattr(args, "takes_pytest_args", False)
            and (
                args.command in ("perf", "upgrade-ab") or getattr(args, "measure", None) is not None
            )
        ):
            parser.parse_args(args_list)  # the usual "unrecognized arguments" error, exit 2
        args.pytest_args = [a for a in rest if a != "--"]
    except SystemExit as exc:  # argparse: --help is 0, a usage error is 2 ("cannot judge")
        return int(exc.code) if isinstance(exc.code, int) else EXIT_CANNOT_JUDGE
    directory = Path(args.out_dir) if args.command == "perf" else PERF_DIR
    return guarded(
        args.command,
        lambda: _run(args),
        reports=_reports(args),
        directory=directory,
        say=_err,
    )


if __name__ == "__main__":
    raise SystemExit(main())
