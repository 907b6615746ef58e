"""A newcomer's path, as written, from the installed wheel in a repository `tilegate init` made, on
the CPU (issue 40, point 4): `pytest perf_tests` runs the suite; the defaults name what exists;
a smoke A/B of a num_warps change prints one report, is not failed by its timings, and says the
same headline in the report and in `tilegate explain`; no message names what the repository
lacks (a noxfile, a GPU, the gate's temporary directories) or this repository's matmul.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_installed import _env, _git, _said, _sh

# words of this repository's own benchmark, or of what an init'ed repository does not have
FOREIGN = (
    "matmul",
    "dtype, layout",
    "cuBLAS",
    "TFLOP/s",
    "nox -s",
    "noxfile",
    "restore it from git",
    "still warm",
    "None SMs",
    "driver None",
    "CUDA None",
    "base-baselines",
    "--perf-variants)",
)


def _foreign(text: str) -> list[str]:
    return [w for w in FOREIGN if w in text]


@pytest.fixture(scope="module")
def newbie(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("newbie")
    _git(repo, "init", "-q")
    made = _sh([str(site / "bin" / "tilegate"), "init"], repo, _env(site))
    assert made.returncode == 0, _said(made)
    assert "pytest perf_tests" in made.stderr and not _foreign(made.stderr), made.stderr
    assert (repo / ".gitignore").read_text().splitlines() == [".perf/"]
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tilegate init")
    return repo


@pytest.mark.interpreter
def test_pytest_perf_tests_runs_the_suite_and_another_pytest_skips_it_saying_how(
    site: Path,
    newbie: Path,
) -> None:
    env = _env(site)
    # `pytest perf_tests` as the console script runs it: the working directory not on sys.path
    suite = _sh(
        [sys.executable, "-P", "-m", "pytest", "perf_tests", "-p", "no:cacheprovider"], newbie, env
    )
    assert suite.returncode == 0, _said(suite)
    assert "4 passed" in suite.stdout, _said(suite)
    assert "profile smoke (no CUDA GPU here: the interpreter profile" in suite.stdout
    # a pytest run that does not name the protocol: untouched, one skip that says what to type
    (newbie / "tests").mkdir()
    (newbie / "tests" / "test_mine.py").write_text("def test_mine():\n    pass\n")
    try:
        other = _sh(
            [sys.executable, "-P", "-m", "pytest", "-rs", "-p", "no:cacheprovider"], newbie, env
        )
    finally:
        (newbie / "tests" / "test_mine.py").unlink()
        (newbie / "tests").rmdir()
    assert other.returncode == 0, _said(other)
    assert "1 passed, 1 skipped" in other.stdout, _said(other)
    assert "runs with `pytest perf_tests`" in other.stdout, _said(other)


@pytest.mark.interpreter
def test_the_defaults_name_what_the_repository_has(site: Path, newbie: Path) -> None:
    script = str(site / "bin" / "tilegate")
    env = _env(site)
    # no --profile: the benchmark's default (quick), which needs a GPU: said, before measuring
    rebase = _sh([script, "rebaseline", "--measure", "3"], newbie, env)
    assert rebase.returncode == 2 and "no CUDA GPU" in rebase.stderr, _said(rebase)
    fingerprint = _sh([script, "fingerprint"], newbie, env)
    assert fingerprint.returncode == 2, _said(fingerprint)
    assert "nothing to fingerprint" in fingerprint.stderr, _said(fingerprint)
    # a smoke run without --report-only: no stored smoke baseline is kept, and it says what works
    smoke = _sh([script, "perf", "--profile", "smoke", "--no-plots"], newbie, env)
    assert smoke.returncode == 2 and "--report-only" in smoke.stderr, _said(smoke)
    assert "--ab HEAD~1" in smoke.stderr and "collected" not in smoke.stdout, _said(smoke)
    # a corrupt baseline is refused before anything is measured
    bad = newbie / "baselines" / "smoke.json"
    bad.write_text("{")
    try:
        corrupt = _sh([script, "perf", "--profile", "smoke", "--no-plots"], newbie, env)
    finally:
        bad.unlink()
    assert corrupt.returncode == 2 and "smoke.json is not valid JSON" in corrupt.stderr
    assert "collected" not in corrupt.stdout, _said(corrupt)
    for proc in (rebase, fingerprint, smoke):  # (a baseline is tracked: git restores it)
        assert not _foreign(proc.stdout + proc.stderr), (
            _foreign(proc.stdout + proc.stderr),
            _said(proc),
        )


# a command line a report or message prints, as printed (in backticks)
HINT = re.compile(r"`(tilegate [^`]+)`")


def _hints_run(script: Path, texts: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """Every `tilegate ...` command line in `texts`, run as printed from `cwd`: each exits 0."""
    hints = list(dict.fromkeys(h for text in texts for h in HINT.findall(text)))
    for hint in hints:
        ran = _sh([str(script), *shlex.split(hint)[1:]], cwd, env, timeout=600)
        assert ran.returncode == 0, (hint, _said(ran))
    return hints


@pytest.mark.interpreter
def test_perf_from_a_subdirectory_and_every_hint_of_its_report_as_printed(
    site: Path,
    newbie: Path,
) -> None:
    """`tilegate perf` from perf_tests/ measures into the root's .perf/ and leaves no partial
    file; every `tilegate ...` its report and messages print exits 0 as printed, from there."""
    env, script, sub = _env(site), site / "bin" / "tilegate", newbie / "perf_tests"
    shutil.rmtree(newbie / ".benchmarks", ignore_errors=True)  # `pytest perf_tests`'s, above
    perf = _sh([str(script), "perf", "--profile", "smoke", "--report-only", "--no-plots"], sub, env)
    assert perf.returncode == 0, _said(perf)
    assert (newbie / ".perf" / "results.json").is_file() and not (sub / ".perf").exists()
    assert not list(newbie.rglob("*.partial")) and not (newbie / ".benchmarks").exists()
    report = (newbie / ".perf" / "report.md").read_text()
    # the other commands from the subdirectory, their paths typed as the report prints them
    for cmd in (
        ["compare", ".perf/results.json", "--report-only", "--no-plots", "--quiet"],
        ["report", ".perf/results.json", "--no-plots", "--quiet"],
        ["explain", ".perf/results.json"],
        ["rebaseline", "../.perf/results.json", "--out", "../.perf/b.json", "--check"],
        ["ab-noise", "--help"],
    ):
        ran = _sh([str(script), *cmd], sub, env)
        assert ran.returncode == 0, (cmd, _said(ran))
    try:
        hints = _hints_run(script, [report, perf.stdout, perf.stderr], sub, env)
    finally:
        (newbie / "baselines" / "smoke.json").unlink(missing_ok=True)  # a throwaway baseline
    assert any(h.startswith("tilegate rebaseline") for h in hints), hints
    assert any("--report-only" in h for h in hints), hints  # the advice and the command agree


@pytest.mark.interpreter
def test_sigint_during_perf_is_exit_2_in_one_line_and_leaves_perf_consistent(
    site: Path,
    newbie: Path,
) -> None:
    perf_dir = newbie / ".perf"
    if not (perf_dir / "results.json").is_file():  # this test alone, or first on its worker
        cmd = [str(site / "bin" / "tilegate"), "perf", "--profile", "smoke", "--report-only"]
        earlier = _sh([*cmd, "--no-plots"], newbie, _env(site))
        assert earlier.returncode == 0, _said(earlier)
    assert (perf_dir / "results.json").is_file()  # an earlier run's, with its report
    for _ in range(3):  # a run that ended before the signal landed is tried again
        proc = subprocess.Popen(
            [str(site / "bin" / "tilegate"), "perf", "--profile", "smoke", "--report-only"],
            cwd=newbie,
            env=_env(site),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # Ctrl-C: the whole process group, the suite's pytest too
        )
        assert proc.stdout is not None
        for line in proc.stdout:  # measuring has begun
            if "[tilegate" in line:
                break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            break
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "interrupted" in err.splitlines()[-1], err
    assert not list(newbie.rglob("*.partial"))
    report = perf_dir / "report.md"
    if not (perf_dir / "results.json").exists():  # nothing, or a report that says so
        assert not report.exists() or report.read_text().startswith("# tilegate: CANNOT JUDGE")


@pytest.mark.interpreter
def test_a_smoke_ab_of_a_num_warps_change_prints_one_report_and_is_not_failed_by_timings(
    site: Path,
    newbie: Path,
) -> None:
    env = _env(site)
    script = str(site / "bin" / "tilegate")
    kernels = next((newbie).glob("*/kernels.py"))
    kernels.write_text(kernels.read_text().replace("BLOCK=1024)", "BLOCK=1024, num_warps=2)"))
    _git(newbie, "commit", "-q", "-am", "num_warps 2")
    ab = _sh(
        [script, "perf", "--profile", "smoke", "--ab", "HEAD~1", "--no-plots"],
        newbie,
        env,
        timeout=600,
    )
    assert ab.returncode == 0, _said(ab)  # a smoke run's timings fail nothing
    assert ab.stdout.count("# tilegate") == 1, _said(ab)  # one run, one report
    report = (newbie / ".perf" / "report.md").read_text()
    headline = report.splitlines()[0].removeprefix("# ")
    assert "smoke run" in headline, headline
    explain = _sh([script, "explain", ".perf/results.json"], newbie, env)
    assert explain.returncode == 0 and explain.stdout.splitlines()[0] == headline, _said(explain)
    for text in (ab.stdout, ab.stderr, report, explain.stdout):
        assert not _foreign(text), _foreign(text)
    # what changed is named, whatever the verdict (the cases may be AMBIGUOUS, UNSTABLE, ...)
    (changed,) = [ln for ln in report.splitlines() if "**Compiled code changed**" in ln]
    assert "num_warps 4 -> 2" in changed, changed
    _hints_run(script, [report, ab.stdout, ab.stderr], newbie, env)
    subprocess.run(["git", "-C", str(newbie), "reset", "-q", "--hard", "HEAD~1"], check=True)
