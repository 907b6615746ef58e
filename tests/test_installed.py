"""The installed tool in another repository (issue 20, item 2): tilegate built as a wheel,
installed into a directory of its own, and run from a toy benchmark repository outside this
checkout (which is not importable there), on the CPU interpreter.

The toy repository has what a user writes: a [tool.tilegate] table, a package with a tiny
Triton kernel and a torch reference, declared as a two-variant `Benchmark` with a "smoke"
profile; `git init` and one commit, for the A/B run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = """\
[tool.tilegate]
benchmark = "toykern.bench:BENCHMARK"
source = "toykern"
baselines = "baselines"
"""

KERNEL = '''\
"""A scale kernel: y = 2 x."""

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''

BENCH = '''\
"""The toy benchmark: a Triton scale kernel beside torch."""

import torch
import triton

from tilegate.declare import Axis, Benchmark, Profile, Variant, Work

from ._kernel import scale_kernel


def _triton(params, inputs):
    x = inputs
    y = torch.full_like(x, float("nan"))  # unwritten elements stay NaN: caught

    def call():
        scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
        return y

    return call


def _torch(params, inputs):
    return lambda: inputs * 2


BENCHMARK = Benchmark(
    name="toy",
    variants=(
        Variant("torch", _torch, reference=True),
        Variant("triton_scale", _triton),
    ),
    profiles=(
        Profile("smoke", (Axis("n", (100, 256), label="n{}"),), rounds=8, min_time_s=0.0,
                passes=1, soak_s=0.0, interpreter=True),
    ),
    inputs=lambda params, device, seed: torch.randn(
        params["n"], generator=torch.Generator().manual_seed(seed)
    ).to(device),
    reference_output=lambda params, x: x.double() * 2,
    tolerance=lambda params: 1e-6,
    work=lambda params: Work(bytes=8.0 * params["n"]),
)
'''


def _sh(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _source_copy(where: Path) -> Path:
    """A copy of the checkout to build from: a build in the checkout itself leaves a
    tilegate.egg-info there whose pytest11 entry point every later pytest of it would load."""
    import shutil

    src = where / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git", ".nox", ".perf", ".snap", "*.egg-info", "build", "examples"
        ),
    )
    return src


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tilegate's wheel, built from this checkout and installed with pip --target."""
    wheels = tmp_path_factory.mktemp("wheels")
    target = tmp_path_factory.mktemp("site")
    py = sys.executable
    build = _sh(
        [py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(_source_copy(wheels))],
        cwd=wheels, env=dict(os.environ),
    )  # fmt: skip
    assert build.returncode == 0, _said(build)
    (wheel,) = wheels.glob("tilegate-*.whl")
    inst = _sh(
        [py, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        cwd=wheels, env=dict(os.environ),
    )  # fmt: skip
    assert inst.returncode == 0, _said(inst)
    assert (target / "tilegate" / "cli.py").is_file()
    assert not (target / "kernels").exists(), "this repository's benchmark is not in the wheel"
    return target


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("toy-repo")
    (repo / "pyproject.toml").write_text(PYPROJECT)
    pkg = repo / "toykern"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Toy kernels."""\n')
    (pkg / "_kernel.py").write_text(KERNEL)
    (pkg / "bench.py").write_text(BENCH)
    (repo / ".gitignore").write_text(".perf/\n__pycache__/\n")
    (repo / "baselines").mkdir()  # what `tilegate init` makes: the gate refuses a missing one
    (repo / "baselines" / ".gitkeep").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "toy benchmark"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return repo


@pytest.mark.interpreter
def test_the_installed_tool_gates_a_toy_repository(site: Path, toy: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(site)  # the installed tilegate only: this checkout is not importable
    py = sys.executable  # the venv's python: torch, triton, pytest, pytest-benchmark
    script = site / "bin" / "tilegate"

    where = _sh([py, "-c", "import tilegate, sys; print(tilegate.__file__)"], toy, env)
    assert where.returncode == 0 and where.stdout.startswith(str(site)), _said(where)
    fails = _sh([py, "-c", "import kernels"], toy, env)
    assert fails.returncode != 0, "this checkout's kernels/ must not be importable here"

    first = _sh(
        [py, "-m", "tilegate", "perf", "--profile", "smoke", "--report-only", "--no-plots"],
        toy,
        env,
    )
    assert first.returncode == 0, _said(first)
    results = toy / ".perf" / "results.json"
    data = json.loads(results.read_text())
    rows = {
        b["extra_info"]["tilegate"]["key"]: b["extra_info"]["tilegate"] for b in data["benchmarks"]
    }
    assert set(rows) == {"torch-n100", "triton_scale-n100", "torch-n256", "triton_scale-n256"}
    row = rows["triton_scale-n256"]
    assert row["params"] == {"n": 256} and row["correct"] is True
    assert row["ratio_to_reference"] is not None and row["gbps"] is not None and row["gbps"] >= 0
    assert (toy / ".perf" / "report.md").is_file()

    second = _sh(
        [py, "-m", "tilegate", "perf", "--profile", "smoke", "--report-only", "--no-plots",
         "--out-dir", str(toy / ".perf" / "second")],
        toy, env,
    )  # fmt: skip
    assert second.returncode == 0, _said(second)

    baseline = toy / "baselines" / "cpu-interpreter.json"  # no GPU, no slug: named here
    rebase = _sh(
        [str(script), "rebaseline", str(results), str(toy / ".perf" / "second" / "results.json"),
         "--out", str(baseline)],
        toy, env,
    )  # fmt: skip
    assert rebase.returncode == 0, _said(rebase)
    stored = json.loads(baseline.read_text())
    assert set(stored["rows"]) == set(rows) and stored["rows"]["torch-n100"]["params"] == {"n": 100}

    judged = _sh(
        [str(script), "compare", str(results), str(baseline), "--no-plots",
         "--report", str(toy / ".perf" / "judged.md")],
        toy, env,
    )  # fmt: skip
    assert judged.returncode == 0, _said(judged)
    assert (toy / ".perf" / "judged.md").read_text().startswith("# tilegate:")

    ab = _sh(
        [py, "-m", "tilegate", "perf", "--profile", "smoke", "--ab", "HEAD", "--no-plots",
         "--baseline", str(baseline), "--out-dir", str(toy / ".perf" / "ab")],
        toy, env,
    )  # fmt: skip
    assert ab.returncode == 0, _said(ab)
    sides = {
        (b["extra_info"]["tilegate"]["key"], b["extra_info"]["tilegate"].get("side", "head"))
        for b in json.loads((toy / ".perf" / "ab" / "results.json").read_text())["benchmarks"]
    }
    assert ("triton_scale-n256", "base") in sides and ("triton_scale-n256", "head") in sides
    assert (toy / ".perf" / "ab").is_dir() and not (ROOT / ".perf" / "ab" / "toy").exists()
