"""`tilegate init`: a starting [tool.tilegate], a starter package and its protocol, .perf/ in
.gitignore (tilegate.starter writes them)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tilegate.commands._shared import Shared
from tilegate.starter import init, init_ci, package_name

NAME = "init"
HELP = """write a starting [tool.tilegate], a starter package and its perf_tests/ protocol (exit 2
if one exists)"""
DESCRIPTION = """Write a [tool.tilegate] table into ./pyproject.toml (created if absent), a
two-variant package PACKAGE/kernels.py (the code), perf_tests/test_PACKAGE.py (the protocol: a
pytest-benchmark suite), baselines/README.md and .perf/ in .gitignore. Refuses (exit 2, nothing
written) when pyproject.toml already has [tool.tilegate] or a file exists."""


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument(
        "--package",
        type=package_name,
        default="perfbench",
        help="the package that holds the kernels (default: perfbench)",
    )
    p.add_argument(
        "--ci",
        choices=("github",),
        help="also write the CI workflow (.github/workflows/tilegate.yml; exit 2 if it exists)",
    )
    p.add_argument(
        "--runner-labels",
        default="self-hosted,linux,gpu",
        metavar="L1,L2",
        help="--ci: the self-hosted GPU runner's labels (default: %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    if args.ci:
        return init_ci(Path.cwd(), args.package, args.runner_labels)
    return init(Path.cwd(), args.package)
