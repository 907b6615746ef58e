"""`tilegate gpu [--slug]`: what this machine's GPU is (name, slug, SMs, capability, driver,
CUDA; tilegate.harness.device), or that there is none (exit 2). `--slug` prints the name of
its baseline file and its runner label (docs/ci.md)."""

from __future__ import annotations

import argparse
import sys

from tilegate.commands._shared import Shared
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK

NAME = "gpu"
HELP = "what this machine's GPU is (exit 2: none)"


def arguments(p: argparse.ArgumentParser, shared: Shared) -> None:
    p.add_argument(
        "--slug", action="store_true", help="print its slug only (baselines/<slug>.json)"
    )


def run(args: argparse.Namespace) -> int:
    from tilegate.harness.device import NO_GPU_HINT, gpu_info

    try:
        info = gpu_info()
    except (RuntimeError, ImportError) as err:
        print(f"tilegate: cannot measure: {err}.\n{NO_GPU_HINT}", file=sys.stderr)
        return EXIT_CANNOT_JUDGE
    if args.slug:
        print(info.slug)
    else:
        print(
            f"{info.name} ({info.slug}), {info.sm_count} SMs, sm_{info.capability[0]}{info.capability[1]}, "
            f"driver {info.driver}, CUDA {info.cuda}"
        )
    return EXIT_OK
