"""What the commands share: the options several take (written once, argparse parent parsers),
the parser built from the command modules, the dispatch (profile check, pytest's arguments, the
crash guard)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

from tilegate import __version__
from tilegate.errors import EXIT_CANNOT_JUDGE
from tilegate.judge.baseline import DEFAULT_DIR
from tilegate.run.crash import guarded
from tilegate.run.profiles import add_profile_argument, check_profile, profile_names, wants_help

PERF_DIR = Path(".perf")
# the arguments that name a file or directory: typed in a subdirectory of the repository, a
# relative one is found from there (else from the root, where it or its directory is there
# only); every command then runs at the root, where the defaults (.perf/, baselines/) are
_PATHS = "results baseline baselines report plots out_dir out confirm suspects_out diff_out old"
PATHS = frozenset((_PATHS + " new tolerances repo store directory verdicts baseline_dir").split())
PATHS |= {"rules", "cache_dir", "json_dir"}


def say(message: str) -> None:
    print(f"tilegate: {message}", file=sys.stderr)


def _parent() -> argparse.ArgumentParser:
    """A parent parser: options that several subcommand parsers take (`parents=[...]`)."""
    return argparse.ArgumentParser(add_help=False)


class Shared:
    """The options that several commands take, each written once: argparse parent parsers. Only
    `argv` asking for a command's --help loads the benchmark (its profiles: --profile's choices)."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
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
        self, default_report: str | None, default_plots: str | None
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
        """`--profile` of `command`, checked (its default resolved) by `dispatch` before it runs."""
        p = _parent()
        add_profile_argument(p, use=use, names=self.profile_names(command))
        p.set_defaults(profile_checked_here=True)
        return p

    def profile_names(self, command: str) -> Sequence[str] | None:
        """The benchmark's profiles for `command`'s --help (None: no help asked, or no config)."""
        return profile_names() if command == self._help_for else None

    def wanted(self, command: str) -> bool:
        """Whether the command line runs `command` (a costly parser is built only then)."""
        return bool(self.argv) and command in self.argv[:1]


def build_parser(argv: Sequence[str], commands: Sequence[ModuleType]) -> argparse.ArgumentParser:
    """`tilegate`'s parser: each command's from its module's data (NAME, HELP, DESCRIPTION; the
    shared options it takes: MEASURE, PROFILE, PARENTS, OUTPUTS), then `arguments(p, shared)`."""
    parser = argparse.ArgumentParser(
        prog="tilegate",
        description="CI performance gate for Triton kernels. Exit 0: holds; 1: regression or broken "
        "expectation; 2: cannot judge.",
    )
    parser.add_argument("--version", action="version", version=f"tilegate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shared = Shared(argv)
    for c in commands:
        parents = [shared.measure(c.MEASURE)] if hasattr(c, "MEASURE") else []
        if hasattr(c, "PROFILE"):
            parents.append(shared.profile(c.NAME, use=c.PROFILE))
        parents += [getattr(shared, name) for name in getattr(c, "PARENTS", ())]
        if hasattr(c, "OUTPUTS"):
            parents.append(shared.outputs(*c.OUTPUTS))
        description = getattr(c, "DESCRIPTION", None)
        p = sub.add_parser(c.NAME, help=c.HELP, description=description, parents=parents)
        p.set_defaults(func=c.run)
        if hasattr(c, "arguments"):
            c.arguments(p, shared)
    return parser


def _run(args: argparse.Namespace) -> int:
    """The command, its --profile checked first (InputError: exit 2, before any GPU work);
    rebaseline and ab-noise use theirs only with --measure; fingerprint checks its own."""
    if getattr(args, "profile_checked_here", False) and (
        not hasattr(args, "measure") or args.measure is not None
    ):
        args.profile = check_profile(args.profile)
    return int(args.func(args))


def dispatch(
    parser: argparse.ArgumentParser, argv: Sequence[str], commands: Mapping[str, ModuleType]
) -> int:
    """Run the command `argv` names; exit 0, 1 or 2. Whatever escapes a command is exit 2
    (tilegate.run.crash), its reports replaced by a CANNOT JUDGE report."""
    try:
        args, rest = parser.parse_known_args(argv)
        # `perf`, `upgrade-ab` and `rebaseline / ab-noise --measure` pass what they do not know
        # on to pytest
        if rest and not (
            getattr(args, "takes_pytest_args", False)
            and (
                args.command in ("perf", "upgrade-ab") or getattr(args, "measure", None) is not None
            )
        ):
            parser.parse_args(argv)  # the usual "unrecognized arguments" error, exit 2
        args.pytest_args = [a for a in rest if a != "--"]
    except SystemExit as exc:  # argparse: --help is 0, a usage error is 2 ("cannot judge")
        return int(exc.code) if isinstance(exc.code, int) else EXIT_CANNOT_JUDGE
    command = commands[args.command]
    here, root = Path.cwd(), _root(args, argv)
    reports = command.reports(args) if hasattr(command, "reports") else []
    directory = Path(args.out_dir) if args.command == "perf" else PERF_DIR
    try:
        os.chdir(root)
        return guarded(
            args.command, lambda: _run(args), reports=reports, directory=directory, say=say
        )
    finally:
        os.chdir(here)


def _root(args: argparse.Namespace, argv: Sequence[str]) -> Path:
    """Where the command runs: the repository's root (the nearest [tool.tilegate] upward), the
    relative paths typed in a subdirectory made absolute first (PATHS); the working directory for
    `init` and outside a repository (no or a broken configuration: the command says so)."""
    from tilegate.config import find
    from tilegate.errors import InputError

    here = Path.cwd().resolve()
    try:
        root = here if args.command == "init" else find(here).root
    except InputError:
        return here
    typed = {*argv, *(a.partition("=")[2] for a in argv if a.startswith("--"))}

    def found(value: object) -> object:  # where it is, else where its directory is
        if not isinstance(value, str) or value not in typed or Path(value).is_absolute():
            return value
        mine, theirs = here / value, root / value
        if mine.exists() or (mine.parent.is_dir() and not theirs.exists()):
            return str(mine)
        return str(theirs if theirs.exists() or theirs.parent.is_dir() else mine)

    for dest in PATHS & set(vars(args)) if root != here else ():
        value = getattr(args, dest)
        setattr(args, dest, [found(v) for v in value] if isinstance(value, list) else found(value))
    return root


def judge_results(args: argparse.Namespace, *, report_only: bool) -> int:
    """`compare` and `report`: the gate on a results file written earlier, the report printed."""
    from tilegate.run.gate import gate

    report_path: Path | None = Path(args.report) if args.report else None
    named = [Path(p) for p in [args.results, args.baseline, *(args.confirm or [])] if p]
    untouched = ""
    if report_path and any(not p.exists() and not p.is_symlink() for p in named):
        # a mistyped path judges nothing: the last report, of a run that was judged, stays
        report_path, untouched = None, f" (report {args.report} untouched)"
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
        say(note)
    if judged.error is not None:
        say(f"cannot judge: {judged.error}{untouched}")
        return judged.code
    print(judged.headline if args.quiet else judged.text, end="\n" if args.quiet else "")
    if report_path is not None:
        print(f"(report written to {report_path})", file=sys.stderr)
    return judged.code
