"""`tilegate upgrade-ab --new DIR`: a Triton (or library) upgrade on this GPU, an A/B of this tree
under two environments on the engine of every A/B (tilegate.run.upgrade)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared

NAME = "upgrade-ab"
HELP = """a Triton (or library) upgrade on this GPU: an A/B of this tree under the runner's
environment (base) and a new one (head: DIR first on its path), paired round by round"""
DESCRIPTION = """An A/B run of this tree against itself: the head side's process imports --new DIR
first, the base side's --old DIR (default: the runner's own environment); each case judged on head /
base paired per round, as every A/B (its tolerances, confirmation and explanations); for a Triton
upgrade, the compile fingerprint's upgrade report beside it. Unknown options go to pytest."""
PROFILE = "the profile"


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument(
        "--new", required=True, metavar="DIR", help="a directory holding the new triton/"
    )
    p.add_argument(
        "--old", metavar="DIR", help="the old side's triton/ (default: the runner's own)"
    )
    p.add_argument(
        "--no-fingerprint", action="store_true", help="skip the compile fingerprint's diff"
    )
    p.set_defaults(takes_pytest_args=True)


def run(args: argparse.Namespace) -> int:
    from tilegate.run.upgrade import run_upgrade

    return run_upgrade(
        Path(args.new),
        Path(args.old) if args.old else None,
        args.profile,
        args.pytest_args,
        PERF_DIR / "upgrade-ab",
        fingerprint=not args.no_fingerprint,
    )
