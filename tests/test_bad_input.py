"""Issue 19, item 5: bad input is named for what it is, with what to do about it (exit 2)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from tilegate.cli import main
from tilegate.run.loop import Perf

ROOT = Path(__file__).resolve().parents[1]


def test_compare_and_report_on_a_missing_results_file_say_what_makes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("compare", "report"):
        assert main([command, str(tmp_path / "results.json"), "--no-plots"]) == 2
        err = capsys.readouterr().err
        assert "does not exist" in err and "`tilegate perf`" in err, err
        assert "`tilegate perf`" in err and ".perf/results.json" in err, err
        assert "nox" not in err, err  # a repository may have no noxfile


def test_an_empty_results_file_is_a_run_that_did_not_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "results.json"
    empty.write_bytes(b"")
    assert main(["compare", str(empty), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "is empty (0 bytes)" in err and "did not finish" in err, err


def test_a_suite_that_dies_is_named_by_its_exit_code_and_errors_not_by_its_empty_file(
    tmp_path: Path,
) -> None:
    """pytest-benchmark 5.2.3 leaves a 0-byte results file behind a suite that dies."""

    def dying_suite(out: Path, profile: str, extra: Sequence[str]) -> int:
        out.write_bytes(b"")
        out.with_suffix(".log").write_text(
            "collected 0 items\nINTERNALERROR> Traceback (most recent call last):\n"
            "INTERNALERROR> RuntimeError: CUDA driver went away\n== 1 error in 0.1s ==\n"
        )
        return 3

    lines: list[str] = []
    perf = Perf(
        profile="smoke",
        report_only=True,
        out_dir=tmp_path,
        plots=False,
        suite=dying_suite,
        log=lines.append,
    )
    assert perf.run() == 2
    report = (tmp_path / "report.md").read_text()
    assert "pytest exit 3" in report and "empty results file" in report, report
    assert "CUDA driver went away" in report.splitlines()[2], report  # on the reason's first line
    assert "CUDA driver went away" in lines[-1]
    assert "not valid JSON" not in report
    assert not (tmp_path / "results.json").exists(), "the 0-byte file is not left to be judged"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


@pytest.mark.interpreter
def test_an_ab_base_whose_kernels_fail_to_import_is_named_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    for part in ("kernels", "perf_tests"):  # the code and its protocol
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", repo / "pyproject.toml")
    init = repo / "kernels" / "__init__.py"
    good = init.read_text()
    init.write_text(good + '\nraise ImportError("the base kernels are broken")\n')
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base: broken kernels")
    init.write_text(good)
    _git(repo, "commit", "-qam", "head: fixed")
    monkeypatch.chdir(repo)
    lines: list[str] = []
    perf = Perf(
        profile="smoke",
        ab="HEAD~1",
        report_only=True,
        out_dir=tmp_path / "out",
        plots=False,
        pytest_args=["--perf-axis", "K=24", "--perf-variants=torch"],
        log=lines.append,
    )
    assert perf.run() == 2
    report = (tmp_path / "out" / "report.md").read_text()
    assert "pytest exit 4" in report, report
    assert "HEAD~1" in report and "the base kernels are broken" in report, report
    assert "HEAD~1" in lines[-1] and "the base kernels are broken" in lines[-1], lines[-1]


def test_a_suite_failure_quotes_its_error_not_the_smoke_banner(tmp_path: Path) -> None:
    # issue 48: "the suite wrote no results" quoted "tilegate: SMOKE mode ..." as the cause
    from tilegate.run.loop import suite_failure

    log = tmp_path / "results.log"
    log.write_text(
        "FileNotFoundError: [Errno 2] No such file or directory: 'x.partial'\n"
        "tilegate: SMOKE mode (CPU interpreter): timings are meaningless\n"
    )
    said = suite_failure(1, tmp_path / "results.json", log)
    assert said.splitlines()[0].endswith("No such file or directory: 'x.partial'"), said
    assert "SMOKE mode" not in said
