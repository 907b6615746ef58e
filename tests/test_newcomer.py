"""A newcomer's path, as written, from the installed wheel in a repository `tilegate init` made, on
the CPU (issue 40, point 4): `pytest perf_tests` runs the suite; the defaults name what exists;
a smoke A/B of a num_warps change prints one report, is not failed by its timings, and says the
same headline in the report and in `tilegate explain`; no message names what the repository
lacks (a noxfile, a GPU, the gate's temporary directories) or this repository's matmul.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_installed import _env, _git, _said, _sh, site  # noqa: F401 (a fixture)

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
def newbie(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
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
    site: Path,  # noqa: F811
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
def test_the_defaults_name_what_the_repository_has(site: Path, newbie: Path) -> None:  # noqa: F811
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


@pytest.mark.interpreter
def test_a_smoke_ab_of_a_num_warps_change_prints_one_report_and_is_not_failed_by_timings(
    site: Path,  # noqa: F811
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
    subprocess.run(["git", "-C", str(newbie), "reset", "-q", "--hard", "HEAD~1"], check=True)
