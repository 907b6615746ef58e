"""The whole pipeline on the CPU: perf suite (interpreter) -> results JSON -> rebaseline -> compare.

Timings here are meaningless; what is proved is that the suite writes results that the gate and
pytest-benchmark's own `compare` read, that a wrong kernel is caught before its timing counts,
and that `nox -s perf` says "cannot judge" (exit 2) on a machine without a GPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import VARIANTS
from tilegate.harness.identity import SCHEME

ROOT = Path(__file__).resolve().parents[1]
SMOKE = [
    "-m",
    "pytest",
    "-p",
    "tilegate.plugin",
    "--tilegate",
    str(ROOT / "perf_tests"),  # the protocol: pytest perf_tests --tilegate
    "-p",
    "no:cacheprovider",
    "-q",
    "--perf-profile=smoke",
    "--perf-axis=K=24",
]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("smoke")
    runs = []
    for i in (1, 2):
        path = out / f"run-{i}.json"
        proc = _run(*SMOKE, f"--benchmark-json={path}")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        path.with_suffix(".log").write_text(proc.stdout)
        runs.append(path)
    return runs


def test_progress_lines_are_shown_while_measuring(smoke_runs: list[Path]) -> None:
    # the measuring runs inside the first test, where pytest captures output: the progress
    # lines (where a run's minutes go) must reach the terminal although that test passed
    log = smoke_runs[0].with_suffix(".log").read_text()
    stamped = re.findall(r"^\[tilegate +([0-9.]+) s\] (checked|timing pass|group) ", log, re.M)
    kinds = {kind for _, kind in stamped}
    assert kinds == {"checked", "timing pass", "group"}, log[-2000:]
    seconds = [float(t) for t, _ in stamped]
    assert seconds == sorted(seconds)  # seconds since the session began, in order


def test_suite_writes_pytest_benchmark_json_with_device_keys(smoke_runs: list[Path]) -> None:
    data = json.loads(smoke_runs[0].read_text())
    info = data["machine_info"]["tilegate"]
    assert info["mode"] == "smoke" and info["timer"] == "perf-counter"
    assert info["variants"] == list(VARIANTS)  # no --perf-variants: every variant selected
    keys = {b["extra_info"]["tilegate"]["key"] for b in data["benchmarks"]}
    assert "xtile_persistent-fp16-nt-K24" in keys and "tma_xtile_persistent-fp16-nn-K24" in keys
    assert len(keys) == 2 * len(VARIANTS)  # every variant runs under the interpreter, both layouts
    for bench in data["benchmarks"]:
        extra = bench["extra_info"]["tilegate"]
        assert extra["correct"] is True
        assert bench["stats"]["data"] == extra["samples_s"]  # pytest-benchmark holds our samples
        assert bench["param"] == extra["key"]
        if extra.get("twin"):
            assert extra["ratio_to_twin"] > 0


def test_pytest_benchmark_compare_reads_our_results(smoke_runs: list[Path]) -> None:
    exe = shutil.which("pytest-benchmark", path=str(Path(sys.executable).parent))
    assert exe, "pytest-benchmark's CLI is installed with it"
    proc = subprocess.run(
        [exe, "compare", *map(str, smoke_runs), "--columns=median,rounds"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "xtile_persistent-fp16-nt-K24" in proc.stdout


def test_rebaseline_then_compare_round_trips(smoke_runs: list[Path], tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    proc = _run("-m", "tilegate", "rebaseline", *map(str, smoke_runs), "--out", str(baseline))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(baseline.read_text())["rows"]
    report = tmp_path / "report.md"
    proc = _run(
        "-m",
        "tilegate",
        "compare",
        str(smoke_runs[1]),
        str(baseline),
        "--report",
        str(report),
        "--no-plots",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "meaningless" in report.read_text().lower()


def test_a_wrong_kernel_fails_its_case_and_the_gate_refuses_it(
    smoke_runs: list[Path], tmp_path: Path
) -> None:
    results = tmp_path / "wrong.json"
    proc = _run(
        *SMOKE,
        "--perf-variants=torch,tiled,swizzle_persistent",
        "--inject=wrong=tiled",
        f"--benchmark-json={results}",
    )
    assert proc.returncode == 1
    assert "tiled-fp16-nt-K24: wrong result" in proc.stdout
    wrong = json.loads(results.read_text())
    assert wrong["machine_info"]["tilegate"]["variants"] == ["torch", "tiled", "swizzle_persistent"]
    rows = {b["param"]: b["extra_info"]["tilegate"] for b in wrong["benchmarks"]}
    assert rows["tiled-fp16-nt-K24"]["correct"] is False
    assert rows["swizzle_persistent-fp16-nt-K24"]["correct"] is True
    baseline = tmp_path / "baseline.json"
    assert (
        _run(
            "-m", "tilegate", "rebaseline", *map(str, smoke_runs), "--out", str(baseline)
        ).returncode
        == 0
    )
    proc = _run(
        "-m",
        "tilegate",
        "compare",
        str(results),
        str(baseline),
        "--no-plots",
        "--report",
        str(tmp_path / "r.md"),
    )
    assert proc.returncode == 2
    assert "row tiled-fp16-" in proc.stderr and "correctness" in proc.stderr


def _nox_perf(*args: str) -> subprocess.CompletedProcess[str]:
    """`nox -s perf --no-install -- ARGS` on the interpreter."""
    return _run("-m", "nox", "-s", "perf", "--no-install", *(("--", *args) if args else ()))


def test_nox_perf_without_a_gpu_cannot_judge(tmp_path: Path) -> None:
    proc = _nox_perf()
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no CUDA GPU" in proc.stderr and "cannot judge" in proc.stderr


def test_nox_perf_ab_smoke_runs_both_kernels_packages(tmp_path: Path) -> None:
    """An A/B run through nox on the interpreter: the last commit's kernels/ beside the tree's."""
    out = tmp_path / "perf"
    proc = _nox_perf(
        "--profile",
        "smoke",
        "--ab",
        "HEAD",
        "--report-only",
        "--no-plots",
        "--out-dir",
        str(out),
        "--perf-axis=K=24",
        "--perf-axis=layout=nt",  # what is asserted below is the nt cases'
        "--perf-variants=torch,swizzle_persistent,xtile_persistent",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert "## A/B against `HEAD`" in report
    data = json.loads((out / "results.json").read_text())
    sides = {
        (b["extra_info"]["tilegate"]["key"], b["extra_info"]["tilegate"].get("side", "head"))
        for b in data["benchmarks"]
    }
    assert ("xtile_persistent-fp16-nt-K24", "base") in sides and (
        "xtile_persistent-fp16-nt-K24",
        "head",
    ) in sides
    assert ("torch-fp16-nt-K24", "base") not in sides, "the reference is measured once"
    assert data["machine_info"]["tilegate"]["ab"]["ref"] == "HEAD"
    for b in data["benchmarks"]:
        # the whole case's identity (tilegate.harness.identity, scheme "case2")
        assert b["extra_info"]["tilegate"]["code_hash"].startswith(f"{SCHEME}:sha256:")


def test_nox_perf_ab_against_a_missing_ref_cannot_judge(tmp_path: Path) -> None:
    proc = _nox_perf(
        "--profile",
        "smoke",
        "--ab",
        "no-such-ref",
        "--out-dir",
        str(tmp_path / "perf"),
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no-such-ref" in proc.stderr and "fetch-depth" in proc.stderr
    assert (tmp_path / "perf" / "report.md").read_text().startswith("# tilegate: CANNOT JUDGE")
