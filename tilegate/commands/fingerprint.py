"""`tilegate fingerprint` (what the nox sessions run): compile the kernels ahead of time and check
their compile facts (tilegate.fingerprint; docs/fingerprint.md).

It needs none of the judge's packages (scipy): the nox sessions run it in a venv with only the
kernels' group. Its modules are imported only when the command line asks for it; without them it
says what is missing (exit 2). Exit 0: every rule holds and every fingerprint equals the recorded
one; 1: a rule broke or a fingerprint changed; 2: cannot judge (no fingerprint for this Triton, a
corrupt file, a kernel that does not compile, a crash), the report then CANNOT JUDGE and why.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tilegate.commands._shared import Shared, say
from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.run.crash import crash_reason, save_traceback
from tilegate.run.profiles import add_profile_argument, check_profile

NAME = "fingerprint"
HELP = "compile the kernels ahead of time and check their TTGIR / ptxas facts (no GPU)"
DESCRIPTION = """Compile fingerprint gate: compile every Triton variant for sm_90 and sm_120 without
a GPU and catch pipelining regressions (fusion, multi-buffering, wgmma wait, shared memory,
registers, spills)."""


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    if not shared.wanted(NAME):  # its modules are imported only when it runs
        return
    try:
        _arguments(p, shared.profile_names(NAME))
    except ImportError as err:
        p.set_defaults(missing=str(err))


def _arguments(parser: argparse.ArgumentParser, profiles: Sequence[str] | None) -> None:
    """The fingerprint's options; `profiles`: the configured benchmark's, for --help to list."""
    from tilegate.fingerprint import gate
    from tilegate.fingerprint.compile import DEFAULT_CACHE_DIR
    from tilegate.fingerprint.rules import DEFAULT_RULES
    from tilegate.store.fingerprints import DEFAULT_DIR

    parser.add_argument(
        "--record",
        "--rebaseline",
        dest="record",
        action="store_true",
        help="re-record the fingerprints of this Triton version (atomic write; prints the diff)",
    )
    parser.add_argument(
        "--upgrade-from",
        metavar="VERSION",
        help="upgrade report: diff the kernels this Triton compiles against Triton VERSION's "
        "recording; writes nothing under the baselines unless --record (exit 1: a pipelining "
        "fact changed or a rule broke)",
    )
    parser.add_argument(
        "--arch",
        action="append",
        metavar="ARCH",
        help="architecture to compile for, e.g. sm_90 (repeatable; default: every target "
        "of the rules file)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        help="registry variant to fingerprint, wildcards allowed (repeatable; default: all "
        "Triton variants)",
    )
    add_profile_argument(
        parser,
        use="perf profile whose grid is compiled",
        default="the benchmark's fingerprint_profile, else its default profile",
        names=profiles,
    )
    parser.add_argument(
        "--baseline-dir",
        type=Path,
        default=DEFAULT_DIR,
        help=f"where fingerprints live (default: {DEFAULT_DIR})",
    )
    parser.add_argument(
        "--rules", type=Path, default=DEFAULT_RULES, help=f"rules file (default: {DEFAULT_RULES})"
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        help=f"compile cache keyed by source hash (default: {DEFAULT_CACHE_DIR})",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="compile everything, read and write no cache"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="compile processes for cache misses (default: min(2, cores))",
    )
    parser.add_argument(
        "--report",
        type=Path,
        help=f"Markdown report (default: {gate.DEFAULT_REPORT}; upgrade: {gate.UPGRADE_REPORT})",
    )
    parser.add_argument(
        "--json-dir",
        type=Path,
        help=f"the facts compiled now, one <arch>.json each (default: {gate.DEFAULT_JSON_DIR}; "
        f"upgrade: {gate.UPGRADE_JSON_DIR})",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print only the verdict line, not the report"
    )


def run(args: argparse.Namespace) -> int:
    """Run the gate for parsed arguments; print the report; return the exit code."""
    if getattr(args, "missing", None):
        say(f"fingerprint is not available here: {args.missing}")
        return EXIT_CANNOT_JUDGE
    from tilegate.fingerprint import gate

    up = args.upgrade_from is not None
    opts = gate.Options(
        baseline_dir=args.baseline_dir,
        rules_path=args.rules,
        cache_dir=None if args.no_cache else args.cache_dir,
        archs=args.arch,
        variants=args.variant,
        jobs=args.jobs,
        report_path=args.report or (gate.UPGRADE_REPORT if up else gate.DEFAULT_REPORT),
        json_dir=args.json_dir or (gate.UPGRADE_JSON_DIR if up else gate.DEFAULT_JSON_DIR),
    )
    try:
        from tilegate.fingerprint.suite import benchmark, profiles

        bench = benchmark()
        if not any(getattr(v, "plan", None) is not None for v in bench.variants):
            raise InputError(
                f"nothing to fingerprint: no variant of benchmark {bench.name!r} declares a "
                "launch plan (`Variant(plan=...)`, whose launches the fingerprint compiles ahead "
                "of time; tilegate's own example repository declares them). The A/B's "
                "explanation (`tilegate explain`) still records the compile facts of every "
                "kernel a case launches"
            )
        args.profile = check_profile(args.profile or bench.fingerprint_profile)
        PROFILES = profiles()
        if args.profile not in PROFILES:
            raise InputError(
                f"--profile {args.profile!r} is not matmul-shaped (axes dtype, layout, K; "
                f"fixed M, N): the fingerprint plans {', '.join(PROFILES)}"
            )
        if args.jobs < 0:
            raise InputError("--jobs must be >= 0")
        opts.profile = PROFILES[args.profile]
        if up:
            result = gate.upgrade(opts, args.upgrade_from, record_too=args.record)
        else:
            result = gate.record(opts) if args.record else gate.check(opts)
    except InputError as err:
        print(f"tilegate fingerprint: cannot judge: {err}", file=sys.stderr)
        return gate.cannot_judge(opts, str(err)).exit_code
    except Exception as err:  # a crash cannot judge either (exit 2, never a pass or a fail)
        reason = crash_reason("fingerprint", err, save_traceback("fingerprint", err))
        print(f"tilegate fingerprint: cannot judge: {reason}", file=sys.stderr)
        return gate.cannot_judge(opts, reason).exit_code
    if args.quiet:
        print(result.text.splitlines()[0])
    else:
        print(result.text, end="")
    return result.exit_code
