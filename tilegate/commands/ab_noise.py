"""`tilegate ab-noise`: the A/A noise of the A/B paired ratio on this GPU (the A/B tolerances)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.store.files import load_results

NAME = "ab-noise"
HELP = "record the A/A noise of the A/B paired ratio on this GPU (sets the A/B tolerances)"
DESCRIPTION = """Build baselines/<gpu-slug>.ab.json from A/A runs (`tilegate perf --ab HEAD`: both
sides the same code), or measure N of them first with --measure N."""
MEASURE = "run N A/A runs on this GPU first"
PROFILE = "with --measure: the profile"


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument("results", nargs="*", help="results JSON of A/A runs")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="PROFILE=N",
        help="with --measure: N A/A runs of another profile too (repeatable), so that its cases "
        "are calibrated: at least 3 A/A runs each, or a case gets the largest tolerance of the "
        "cases seen that often (`--measure 4 --also default=3`)",
    )
    p.add_argument("--out", metavar="FILE", help="default: baselines/<gpu-slug>.ab.json")
    p.add_argument("--check", action="store_true", help="print the noise, write nothing")
    p.set_defaults(takes_pytest_args=True)


def _profile_count(spec: str) -> tuple[str, int]:
    """`--also PROFILE=N`: (PROFILE, N); InputError naming the spec otherwise."""
    profile, _, n = spec.partition("=")
    if not profile or not n.isdigit() or int(n) < 1:
        raise InputError(f"--also {spec!r}: expected PROFILE=N with N >= 1, e.g. default=1")
    return profile, int(n)


def run(args: argparse.Namespace) -> int:
    from tilegate.judge.abnoise import build_noise
    from tilegate.report.noise import render
    from tilegate.store.files import noise_path, save_noise

    try:
        results = list(args.results)
        also = [_profile_count(spec) for spec in args.also]
        if also and args.measure is None:
            raise InputError("--also PROFILE=N measures more A/A runs: give it with --measure N")
        if args.measure is not None:
            from tilegate.run.loop import ab_args, gpu_slug, measure_runs
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
        say(f"cannot record the A/B noise: {err}")
        return EXIT_CANNOT_JUDGE
    text = render(noise, out, len(runs))
    if args.check:
        text += ["", f"--check: {out} not written."]
    else:
        save_noise(noise)
        text += ["", f"Wrote {out} ({len(noise.rows)} cases). Review `git diff` and commit it."]
    print("\n".join(text))
    return 0
