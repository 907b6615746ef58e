"""The offline GPU runner's nox: tools/fetch-gpu-wheels.sh fetches a folder that nox installs from
with no index, exactly as tools/gpu-nox.sh installs it (`pip install --no-index --target`).

`pip --target` resolves every dependency again and ignores the packages the runner's python3
already has, so a wheel missing from the folder stops the install ("No matching distribution
found for attrs>=24.1" on the H200 in round 3). The download needs PyPI (CI has it); the
installs do not.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "tools" / "gpu-wheels.txt"
PYTHONS = ("3.10", "3.11", "3.12", "3.13")  # pyproject's classifiers, and the GPU images'


def _nox_pin() -> str:
    pins = [ln.strip() for ln in PINS.read_text().splitlines() if ln.startswith("nox==")]
    assert len(pins) == 1, f"{PINS}: expected one nox pin, found {pins}"
    return pins[0]


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheelhouse")
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "fetch-gpu-wheels.sh"), str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def _resolve(folder: Path, python: str, target: Path) -> subprocess.CompletedProcess[str]:
    """pip's resolution of nox for `python` from `folder` alone (no index), into --target."""
    return subprocess.run(
        [
            sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
            "--disable-pip-version-check", "--ignore-installed", "--no-index",
            "--find-links", str(folder), "--only-binary=:all:", "--python-version", python,
            "--target", str(target), _nox_pin(),
        ],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip


def test_every_pin_is_a_pure_python_wheel(wheelhouse: Path) -> None:
    wheels = sorted(p.name for p in wheelhouse.glob("*.whl"))
    pins = [ln for ln in PINS.read_text().splitlines() if ln and not ln.startswith("#")]
    assert len(wheels) == len(pins), (wheels, pins)
    assert all(re.search(r"-none-any\.whl$", w) for w in wheels), wheels


@pytest.mark.parametrize("python", PYTHONS)
def test_nox_resolves_offline_for(wheelhouse: Path, python: str, tmp_path: Path) -> None:
    done = _resolve(wheelhouse, python, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_missing_wheel_stops_the_install(wheelhouse: Path, tmp_path: Path) -> None:
    """The check above can fail: without attrs (round 3's missing wheel) nox does not resolve."""
    partial = tmp_path / "partial"
    shutil.copytree(wheelhouse, partial)
    for wheel in partial.glob("attrs-*.whl"):
        wheel.unlink()
    done = _resolve(partial, "3.12", tmp_path / "site")
    assert done.returncode != 0
    assert "attrs" in done.stderr


def test_gpu_nox_installs_and_runs_nox_from_the_folder(wheelhouse: Path, tmp_path: Path) -> None:
    """tools/gpu-nox.sh itself, with TILEGATE_WHEELHOUSE: its own --no-index --target install,
    then nox run from there (`--version`)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TILEGATE_PYTHON": sys.executable,
        "TILEGATE_WHEELHOUSE": str(wheelhouse),
        "RUNNER_TEMP": str(tmp_path),  # where gpu-nox.sh installs nox for this job
        "PIP_NO_INDEX": "1",  # no index, whatever pip's own configuration says
    }
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "gpu-nox.sh"), "--version"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _nox_pin().removeprefix("nox==") in done.stdout + done.stderr
    assert list(tmp_path.glob("tilegate-nox-*/.installed"))


def test_gpu_nox_pins_the_same_nox() -> None:
    script = (ROOT / "tools" / "gpu-nox.sh").read_text()
    found = re.search(r"^NOX_VERSION=(\S+)", script, re.M)
    assert found is not None
    assert f"nox=={found.group(1)}" == _nox_pin()
