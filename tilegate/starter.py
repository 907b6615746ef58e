"""`tilegate init`: a starting [tool.tilegate] table and a starter benchmark module (docs/plugin.md).

Writes, in the working directory (the repository root):

* ``pyproject.toml``: a [tool.tilegate] table appended (the file created if absent); a
  pyproject.toml that already has one is left alone (exit 2);
* ``<package>/bench.py``: a commented two-variant benchmark (a Triton scale kernel beside
  torch) that runs as it is, under the CPU interpreter with ``--profile smoke``; an existing
  file is never overwritten (exit 2);
* ``baselines/``: where ``tilegate rebaseline`` writes a GPU's baseline.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_REFUSED = 0, 2

TABLE = """\
[tool.tilegate]
benchmark = "{package}.bench:BENCHMARK"   # module:attribute, imported with this directory on sys.path
source = "{package}"                      # what an A/B run (--ab REF) takes from the base commit
baselines = "baselines"                   # baselines/<gpu-slug>.json, tolerances.toml
"""

BENCH = '''\
"""What tilegate gates in this repository: a starter benchmark (`tilegate init`; docs/plugin.md).

Two variants of y = 2 x: torch (the reference every ratio is measured against) and a Triton
kernel. Replace them with your kernels; keep the shape of the declaration:

    tilegate perf --profile smoke --report-only       # CPU interpreter: proves the wiring
    tilegate perf --profile quick --report-only       # a GPU: real timings
    tilegate rebaseline --measure 5 --profile quick   # store baselines/<gpu>.json
    tilegate perf --profile quick                     # judge against it (exit 0 / 1 / 2)
"""

import torch
import triton
import triton.language as tl

from tilegate.declare import Axis, Benchmark, Profile, Variant, Work


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


# make(params, inputs) -> the zero-argument call that is timed; its return value is checked
# against reference_output before any timing counts. Allocate outside the call, and fill the
# output with NaN: an element the kernel never writes is then caught.
def _triton(params, x):
    y = torch.full_like(x, float("nan"))

    def call():
        _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

    return call


def _torch(params, x):
    return lambda: x * 2


# inputs(params, device, seed): drawn once per group (one grid point), shared by its variants
def _inputs(params, device, seed):
    gen = torch.Generator().manual_seed(seed)
    dtype = {"fp32": torch.float32, "fp16": torch.float16}[params["dtype"]]
    return torch.randn(params["n"], generator=gen).to(device=device, dtype=dtype)


BENCHMARK = Benchmark(
    name="scale",
    variants=(
        Variant("torch", _torch, reference=True),
        Variant("triton_scale", _triton),
    ),
    profiles=(
        # a profile is a grid (the product of its axes) and how long each group is timed
        Profile("quick", (Axis("dtype", ("fp32", "fp16")), Axis("n", (1 << 20, 1 << 24), label="n{}"))),
        Profile(
            "smoke",  # the CPU interpreter (TRITON_INTERPRET=1): tiny sizes, timings meaningless
            (Axis("dtype", ("fp32",)), Axis("n", (100, 256), label="n{}")),
            rounds=8, min_time_s=0.0, passes=1, soak_s=0.0, interpreter=True,
        ),
    ),
    default_profile="quick",
    inputs=_inputs,
    # the exact answer, in higher precision than the variants
    reference_output=lambda params, x: x.double() * 2,
    # the relative (Frobenius) error allowed, per params["dtype"]; `error=` replaces the metric
    tolerance={"fp32": 1e-6, "fp16": 1e-3},
    # bytes moved per call: results carry GB/s (flops=: TFLOP/s)
    work=lambda params: Work(bytes=2.0 * params["n"] * (4 if params["dtype"] == "fp32" else 2)),
    # relations between variants, bounds from the baseline: tilegate.declare.Expectation
    expectations=(),
)
'''


def _package_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Python package name")
    return text


def init(root: Path, package: str, say: Any = None) -> int:
    """Write the starting configuration under `root`; 2 (nothing written) when one exists."""
    from tilegate.config import read_table
    from tilegate.errors import InputError

    say = say or (lambda line: print(line, file=sys.stderr))
    pyproject = root / "pyproject.toml"
    bench = root / package / "bench.py"
    try:
        if pyproject.is_file() and read_table(pyproject) is not None:
            say(f"tilegate init: {pyproject} already has a [tool.tilegate] table; nothing written")
            return EXIT_REFUSED
    except InputError as err:
        say(f"tilegate init: {err}; nothing written")
        return EXIT_REFUSED
    if bench.exists():
        say(f"tilegate init: {bench} exists; nothing written (pass --package NAME for another)")
        return EXIT_REFUSED
    old = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    sep = "" if not old else ("\n" if old.endswith("\n") else "\n\n")
    pyproject.write_text(old + sep + TABLE.format(package=package), encoding="utf-8")
    bench.parent.mkdir(parents=True, exist_ok=True)
    init_py = bench.parent / "__init__.py"
    if not init_py.exists():
        init_py.write_text("")
    bench.write_text(BENCH, encoding="utf-8")
    (root / "baselines").mkdir(exist_ok=True)
    say(
        f"tilegate init: [tool.tilegate] in {pyproject}, a starter benchmark in {bench}, "
        f"baselines/. Next: tilegate perf --profile smoke --report-only (docs/plugin.md)"
    )
    return EXIT_OK


def add_subcommand(sub: Any) -> None:
    p = sub.add_parser(
        "init",
        help="write a starting [tool.tilegate] and a starter benchmark module (exit 2 if one exists)",
        description="Write a [tool.tilegate] table into ./pyproject.toml (created if absent), a "
        "commented two-variant benchmark in PACKAGE/bench.py and baselines/. Refuses (exit 2, "
        "nothing written) when pyproject.toml already has [tool.tilegate] or the module exists.",
    )
    p.add_argument(
        "--package",
        type=_package_name,
        default="perfbench",
        help="the package that holds the benchmark (default: perfbench)",
    )
    p.set_defaults(func=lambda args: init(Path.cwd(), args.package))
