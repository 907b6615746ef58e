"""`tilegate ci`: what CI runs. A pull request (`--base SHA`): measured and judged by its base's
gate (protocol, baselines, in tilegate's own repository its tilegate/); a push: the stored
baseline, optionally the history (tilegate.run.ci_gate)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from tilegate.commands._shared import PERF_DIR, Shared
from tilegate.errors import InputError

NAME = "ci"
HELP = """what CI runs: a pull request judged by its base's gate (--base), a push by the stored
baseline (exit 0/1/2)"""
DESCRIPTION = """A pull request (--base SHA: HEAD^1 of GitHub's merge commit): the base's protocol
measures the pull request's code beside the base's (each a checkout and a process) and the base's
baselines judge; a change of the protocol, the baselines or the gate's configuration fails unless
acknowledged. A push (no --base): `tilegate perf` against the stored baseline. Writes report.md,
verdicts.json, gate.json, comment.md and summary.md into --out-dir. Options after -- go to `tilegate
perf`."""


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument("--base", metavar="SHA", help="the pull request's base commit (HEAD^1)")
    p.add_argument(
        "--accept-gate-change",
        action="store_true",
        help="a maintainer reviewed the change of the gate (the label perf-gate-change)",
    )
    p.add_argument(
        "--accept-baseline-change",
        action="store_true",
        help="a maintainer reviewed the change of baselines/ (the label perf-baseline-change)",
    )
    p.add_argument("--profile", help="the profile to measure (default: the benchmark's)")
    p.add_argument("--out-dir", default=str(PERF_DIR), metavar="DIR", help="(default: ROOT/.perf)")
    p.add_argument(
        "--via",
        choices=("python", "nox"),
        default="python",
        help="python: `python -m tilegate perf`; nox: the tree's tools/gpu-nox.sh, else `nox -s perf`",
    )
    p.add_argument("--history", type=Path, metavar="STORE", help="a push: add the results here")
    p.add_argument("perf_args", nargs="*", help="after --: `tilegate perf`'s options")


def run(args: argparse.Namespace) -> int:
    from tilegate.run.ci_gate import CI

    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise InputError("tilegate ci runs in a git checkout of the repository (none here)")
    repo = Path(top.stdout.strip())
    out = Path(args.out_dir)
    perf_args = [*(["--profile", args.profile] if args.profile else []), *args.perf_args]
    return CI(
        repo=repo,
        out=(repo / out).resolve(),  # relative: to the repository's root
        base=args.base,
        via=args.via,
        accept_gate_change=args.accept_gate_change,
        accept_baseline_change=args.accept_baseline_change,
        perf_args=[a for a in perf_args if a != "--"],
        history=args.history.resolve() if args.history else None,
    ).run()


def reports(args: argparse.Namespace) -> list[Path]:
    return [Path(args.out_dir) / "report.md"]
