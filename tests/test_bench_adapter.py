"""The pytest-benchmark adapter (tilegate/harness/bench.py) on the installed pytest-benchmark.

Runs a one-benchmark pytest session in a subprocess that hands the fixture known samples through
the adapter, then checks what pytest-benchmark made of them: its JSON holds exactly those
samples and their statistics, the fixture counts as used (no "not used" warning), and its own
`pytest-benchmark compare` reads the file. It runs on every pytest-benchmark version tilegate
supports: the CPU pin 5.3.1 in `nox -s tests`, the GPU image's 5.2.3 in `nox -s bench_adapter`.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = [0.003, 0.001, 0.002, 0.005, 0.004]

BENCH = textwrap.dedent(
    f"""
    from tilegate.harness.bench import record_device_samples

    def test_device(benchmark):
        benchmark.group = "g"
        record_device_samples(benchmark, {SAMPLES!r})
    """
)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("adapter")
    (tmp / "test_device.py").write_text(BENCH)
    out = tmp / "results.json"
    proc = _run(
        tmp,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-W",
        "error",
        "-q",
        f"--benchmark-json={out}",
        "test_device.py",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not used" not in proc.stdout + proc.stderr
    return out


def test_pytest_benchmark_holds_the_device_samples(results: Path) -> None:
    data = json.loads(results.read_text())
    (bench,) = data["benchmarks"]
    stats = bench["stats"]
    assert stats["data"] == SAMPLES
    assert stats["rounds"] == len(SAMPLES) and stats["iterations"] == 1
    assert stats["median"] == pytest.approx(statistics.median(SAMPLES))
    assert stats["min"] == min(SAMPLES) and stats["max"] == max(SAMPLES)
    assert stats["mean"] == pytest.approx(statistics.fmean(SAMPLES))


def test_pytest_benchmark_compare_reads_the_file(results: Path) -> None:
    exe = shutil.which("pytest-benchmark", path=str(Path(sys.executable).parent))
    assert exe, "pytest-benchmark's CLI is installed with it"
    proc = subprocess.run(
        [exe, "compare", str(results), "--columns=median,rounds"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "test_device" in proc.stdout
