"""`tilegate baseline-diff --base-ref REF`: a pull request's baselines/ against the base's."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared

NAME = "baseline-diff"
HELP = "a pull request's baselines/ against the base's: exit 1 if it loosens the gate"
DESCRIPTION = """Diff the working tree's baselines/ against REF's (tolerances, expectations, A/B
noise, fingerprints) and check both against their own policy. Exit 1 when a change loosens the gate
and --accept-baseline-change is not given; 2 on bad input."""


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument(
        "--base-ref", required=True, metavar="REF", help="the base commit (HEAD^1 in a PR)"
    )
    p.add_argument("--baselines", default="baselines", help="the pull request's baselines/")
    p.add_argument("--repo", default=".", help="the git repository (default: .)")
    p.add_argument("--out", metavar="PATH", help="also write the markdown listing here")
    p.add_argument("--accept-baseline-change", action="store_true", help="acknowledged: exit 0")


def run(args: argparse.Namespace) -> int:
    from tilegate.store.files import check_pull_request

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
