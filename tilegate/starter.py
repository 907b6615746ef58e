"""`tilegate init`: a starting [tool.tilegate] table, a starter package and its protocol (docs/plugin.md).

Writes in the working directory (the repository root): ``pyproject.toml``'s [tool.tilegate]
table (the file created if absent; one that has the table is left alone, exit 2);
``<package>/kernels.py``, the code (a Triton scale kernel and its registry, beside torch, the
reference); ``perf_tests/test_<package>.py``, the protocol (a pytest-benchmark suite: grid,
profiles, inputs, reference, tolerance, work, `BENCHMARK`, the test) that runs as it is under the
CPU interpreter (``--profile smoke``); ``baselines/README.md``, so that baselines/ is in every
clone (git keeps no empty folder; an A/B run reads the noise and tolerances there);
``.gitignore`` with ``.perf/``. An existing file is never overwritten (exit 2, nothing written).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_REFUSED = 0, 2


KERNELS = '''\
"""The code tilegate gates in this repository (`tilegate init`; tilegate's docs/plugin.md).

Two variants of y = 2 x: torch (the reference every ratio is measured against) and a Triton
kernel. Replace them with your kernels; how they are measured is perf_tests/ (the protocol).
"""

import torch
import triton
import triton.language as tl

from tilegate.declare import Variant


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


# make(params, inputs) -> the zero-argument call that is timed; its return value is checked
# against the protocol's reference_output before any timing counts. Allocate outside the call,
# and fill the output with NaN: an element the kernel never writes is then caught.
def _triton(params, x):
    y = torch.full_like(x, float("nan"))

    def call():
        _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

    return call


def _torch(params, x):
    return lambda: x * 2


# The registry ([tool.tilegate] registry): every variant here must be measured by the protocol.
VARIANTS = (
    Variant("torch", _torch, reference=True),
    Variant("triton_scale", _triton),
)
'''

PROTOCOL = '''\
"""How {package}'s kernels are measured (`tilegate init`; tilegate's docs/plugin.md): pytest-benchmark.

    pytest perf_tests                                 # the suite: profile quick (no GPU: smoke)
    tilegate perf --profile smoke --report-only       # CPU interpreter: the report, .perf/report.md
    tilegate perf --report-only                       # a GPU: real timings (profile quick)
    tilegate rebaseline --measure 5                   # store baselines/<gpu>.json
    tilegate perf                                     # judge against it (exit 0 / 1 / 2)
    tilegate perf --ab HEAD~1                         # a change against its base commit

A pull request's {package}/ is measured under its base's copy of this file; an edit of this file
is a change of the gate. Every case of the base's profile must be measured.
"""

import torch

from {package}.kernels import VARIANTS
from tilegate.declare import Axis, Benchmark, Profile, Work
from tilegate.harness.bench import measure_case


# inputs(params, device, seed): drawn once per group (one grid point), shared by its variants
def _inputs(params, device, seed):
    gen = torch.Generator().manual_seed(seed)
    dtype = {{"fp32": torch.float32, "fp16": torch.float16}}[params["dtype"]]
    return torch.randn(params["n"], generator=gen).to(device=device, dtype=dtype)


BENCHMARK = Benchmark(
    name="scale",
    variants=VARIANTS,
    profiles=(
        # a profile is a grid (the product of its axes) and how long each group is timed
        Profile("quick", (Axis("dtype", ("fp32", "fp16")), Axis("n", (1 << 20, 1 << 24), label="n{{}}"))),
        Profile(
            "smoke",  # the CPU interpreter (TRITON_INTERPRET=1): tiny sizes, timings meaningless
            (Axis("dtype", ("fp32",)), Axis("n", (100, 256), label="n{{}}")),
            rounds=8, min_time_s=0.0, passes=1, soak_s=0.0, interpreter=True,
        ),
    ),
    default_profile="quick",
    inputs=_inputs,
    # the exact answer, in higher precision than the variants
    reference_output=lambda params, x: x.double() * 2,
    # the relative (Frobenius) error allowed, per params["dtype"]; `error=` replaces the metric
    tolerance={{"fp32": 1e-6, "fp16": 1e-3}},
    # bytes moved per call: results carry GB/s (flops=: TFLOP/s)
    work=lambda params: Work(bytes=2.0 * params["n"] * (4 if params["dtype"] == "fp32" else 2)),
    # relations between variants, bounds from the baseline: tilegate.declare.Expectation
    expectations=(),
)


# tilegate's pytest plugin gives one tilegate_case per variant and grid point (ids like
# triton_scale-fp32-n100); the cases of a grid point are timed together, round by round.
def test_scale(tilegate_case, perf_run, benchmark):
    measure_case(tilegate_case, perf_run, benchmark)  # checked, then timed; a skip says why
'''

BASELINES_README = """\
# baselines/

What `tilegate rebaseline` stores (one `<gpu-slug>.json` per GPU model), the A/B noise
(`<gpu-slug>.ab.json`, `tilegate ab-noise`) and `tolerances.toml`. A pull request's A/B run reads
them from here; this file keeps the folder in every clone (tilegate's docs/plugin.md).
"""


def package_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Python package name")
    return text


def _ignore_perf(gitignore: Path) -> bool:
    """`.perf/` (what every run generates) in `gitignore`, appended (the file created if
    absent); False when it is there already."""
    old = gitignore.read_text(encoding="utf-8") if gitignore.is_file() else ""
    if any(line.strip().strip("/") == ".perf" for line in old.splitlines()):
        return False
    sep = "" if not old or old.endswith("\n") else "\n"
    gitignore.write_text(f"{old}{sep}.perf/\n", encoding="utf-8")
    return True


def init(root: Path, package: str, say: Any = None) -> int:
    """Write the starting configuration under `root`; 2 (nothing written) when one exists."""
    from tilegate.config import _toml, parse, read_table, table
    from tilegate.errors import InputError

    say = say or (lambda line: print(line, file=sys.stderr))
    pyproject = root / "pyproject.toml"
    files = {
        root / package / "kernels.py": KERNELS,
        root / "perf_tests" / f"test_{package}.py": PROTOCOL.format(package=package),
    }
    try:
        if pyproject.is_file() and read_table(pyproject) is not None:
            say(f"tilegate init: {pyproject} already has a [tool.tilegate] table; nothing written")
            return EXIT_REFUSED
        # the table written must be one `tilegate perf` accepts (no --package perf_tests)
        parse(_toml().loads(table(package))["tool"]["tilegate"], pyproject)
    except InputError as err:
        say(f"tilegate init: {err}; nothing written")
        return EXIT_REFUSED
    for path in files:
        if path.exists():
            say(f"tilegate init: {path} exists; nothing written (pass --package NAME for another)")
            return EXIT_REFUSED
    old = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    sep = "" if not old else ("\n" if old.endswith("\n") else "\n\n")
    pyproject.write_text(old + sep + table(package), encoding="utf-8")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    init_py = root / package / "__init__.py"
    if not init_py.exists():
        init_py.write_text("")
    readme = root / "baselines" / "README.md"
    readme.parent.mkdir(exist_ok=True)
    if not readme.exists():
        readme.write_text(BASELINES_README, encoding="utf-8")
    ignored = _ignore_perf(root / ".gitignore")
    say(
        f"tilegate init: [tool.tilegate] in {pyproject}, the code in {package}/kernels.py, its "
        f"protocol in perf_tests/test_{package}.py, baselines/README.md"
        + (", .perf/ in .gitignore" if ignored else "")
        + ". Next: `pytest perf_tests` (the suite; without a GPU its smoke profile), then "
        "`tilegate perf --profile smoke --report-only` (a report in .perf/report.md)"
    )
    return EXIT_OK


STANDARD_LABELS = {"self-hosted", "linux", "macos", "windows", "x64", "arm", "arm64"}


def init_ci(root: Path, package: str, labels: str, say: Any = None) -> int:
    """`init --ci github`: the gate's workflow and its comment workflow (tilegate/templates/),
    the runner labels declared for actionlint; the starting configuration first where the
    repository has none. 2 (nothing written) when a file it would write exists."""
    from importlib.resources import files

    from tilegate import __version__
    from tilegate.config import read_table
    from tilegate.errors import InputError

    say = say or (lambda line: print(line, file=sys.stderr))
    names = [x.strip() for x in labels.split(",") if x.strip()]
    if not names or not all(re.fullmatch(r"[A-Za-z0-9_.-]+", x) for x in names):
        say(
            f"tilegate init: --runner-labels {labels!r}: comma-separated runner labels; nothing written"
        )
        return EXIT_REFUSED
    flows = root / ".github" / "workflows"
    texts = {
        flows / name: (files("tilegate") / "templates" / name).read_text(encoding="utf-8")
        .replace("@VERSION@", __version__).replace("@LABELS@", ", ".join(names))
        for name in ("tilegate.yml", "tilegate-comment.yml")
    }  # fmt: skip
    for path in texts:
        if path.exists():
            say(f"tilegate init: {path} exists; nothing written (move it away to write a new one)")
            return EXIT_REFUSED
    try:
        configured = (root / "pyproject.toml").is_file() and read_table(root / "pyproject.toml")
    except InputError as err:
        say(f"tilegate init: {err}; nothing written")
        return EXIT_REFUSED
    if not configured and init(root, package, say) != EXIT_OK:
        return EXIT_REFUSED
    custom = [x for x in names if x not in STANDARD_LABELS]
    lint = root / ".github" / "actionlint.yaml"
    if custom and not lint.exists():
        texts[lint] = "self-hosted-runner:\n  labels:\n" + "".join(f"    - {x}\n" for x in custom)
    flows.mkdir(parents=True, exist_ok=True)
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    say(
        f"tilegate init: the gate's workflow in {flows}/tilegate.yml (runner labels {names}) and "
        "its pull-request comment in tilegate-comment.yml. Commit them; a pull request is judged "
        "on the GPU runner (labels perf-approved, perf-gate-change, perf-baseline-change)"
    )
    return EXIT_OK
