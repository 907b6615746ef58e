"""The command line: exit codes, messages, files written (and not written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._factories import key, results_file
from tilegate.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
BASELINES = FIXTURES / "synthetic-baselines"


def compare(
    tmp_path: Path, results: str | Path, *options: str, baseline: Path | None = None
) -> int:
    """`tilegate compare RESULTS [BASELINE] [options]` on fixtures, the report into tmp_path."""
    positional = [str(FIXTURES / results)] + ([str(baseline)] if baseline else [])
    return main(
        [
            "compare",
            *positional,
            "--baselines",
            str(BASELINES),
            "--no-plots",
            "--report",
            str(tmp_path / "report.md"),
            *options,
        ]
    )


def test_pass_is_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(tmp_path, "synthetic-results-h200-quick.json") == 0
    out = capsys.readouterr().out
    assert out.startswith("# tilegate: PASS")
    assert (tmp_path / "report.md").read_text() == out


def test_regression_is_1_and_suspects_are_written(tmp_path: Path) -> None:
    suspects = tmp_path / "suspects.txt"
    assert (
        compare(tmp_path, "synthetic-results-regressed.json", "--suspects-out", str(suspects)) == 1
    )
    assert suspects.read_text().splitlines() == [
        key("xtile_persistent", K=128),
        key("persistent", K=4096),
        key("swizzle_persistent", K=128),
    ]


def test_confirmation_flow(tmp_path: Path) -> None:
    suspects = tmp_path / "suspects.txt"
    code = compare(
        tmp_path,
        "synthetic-results-regressed.json",
        "--confirm",
        str(FIXTURES / "synthetic-results-regressed-confirm.json"),
        "--suspects-out",
        str(suspects),
    )
    assert code == 1
    assert "confirmed by 1 re-measurement" in (tmp_path / "report.md").read_text()
    # a healthy re-measurement acquits the rows it re-measured
    code = compare(
        tmp_path,
        "synthetic-results-regressed.json",
        "--confirm",
        str(FIXTURES / "synthetic-results-h200-quick.json"),
    )
    assert code == 0


def test_pass_writes_an_empty_suspects_file(tmp_path: Path) -> None:
    suspects = tmp_path / "suspects.txt"
    assert (
        compare(tmp_path, "synthetic-results-h200-quick.json", "--suspects-out", str(suspects)) == 0
    )
    assert suspects.read_text() == ""


BAD_INPUT = [
    ("synthetic-results-corrupt.json", None, "synthetic-results-corrupt.json"),
    ("synthetic-results-nan-timing.json", None, "xtile_persistent-fp16-nt-K128"),
    ("synthetic-results-zero-timing.json", None, "swizzle_persistent-fp16-nt-K128"),
    ("synthetic-results-failed-row.json", None, "xtile_persistent-fp16-nt-K128"),
    ("synthetic-results-missing-row.json", None, "tma_xtile_persistent-fp16-nt-K512"),
    ("synthetic-results-not-tilegate.json", None, "synthetic-results-not-tilegate.json"),
    ("synthetic-results-rtx5090.json", BASELINES / "nvidia-h200.json", "nvidia-geforce-rtx-5090"),
    (
        "synthetic-results-h200-quick.json",
        FIXTURES / "synthetic-baseline-unknown-schema.json",
        "schema_version 99",
    ),
    (
        "synthetic-results-h200-quick.json",
        FIXTURES / "synthetic-baseline-corrupt.json",
        "synthetic-baseline-corrupt.json",
    ),
    ("synthetic-results-smoke.json", None, "smoke"),
]


@pytest.mark.parametrize(
    ("results", "baseline", "needle"), BAD_INPUT, ids=[f"{r}-{n}" for r, _, n in BAD_INPUT]
)
def test_bad_input_is_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    results: str,
    baseline: Path | None,
    needle: str,
) -> None:
    (tmp_path / "report.md").write_text("# an old report that must not survive\n")
    assert compare(tmp_path, results, baseline=baseline) == 2
    err = capsys.readouterr().err
    assert "cannot judge" in err and needle in err
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# tilegate: CANNOT JUDGE (exit 2)") and needle in report


def test_missing_baseline_is_2_or_report_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "compare",
        str(FIXTURES / "synthetic-results-h200-quick.json"),
        "--baselines",
        str(tmp_path),
        "--no-plots",
        "--report",
        str(tmp_path / "r.md"),
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert (
        f"{tmp_path / 'nvidia-h200.json'} does not exist" in err
        and "tilegate rebaseline --measure 3" in err
        and "--report-only" in err
    )
    assert main([*args, "--report-only"]) == 0
    assert capsys.readouterr().out.startswith("# tilegate: REPORT ONLY (no baseline, no verdict)")


def test_allow_missing(tmp_path: Path) -> None:
    assert compare(tmp_path, "synthetic-results-missing-row.json", "--allow-missing") == 0


def test_report_never_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "report",
            str(FIXTURES / "synthetic-results-regressed.json"),
            str(BASELINES / "nvidia-h200.json"),
            "--out",
            str(tmp_path / "r.md"),
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.startswith("# tilegate: REPORT ONLY (would fail)")
    assert (tmp_path / "r.md").is_file()


def test_report_still_refuses_bad_input(tmp_path: Path) -> None:
    assert main(["report", str(FIXTURES / "synthetic-results-nan-timing.json")]) == 2


def test_plots_are_written_and_linked(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    code = main(
        [
            "compare",
            str(FIXTURES / "synthetic-results-regressed.json"),
            "--baselines",
            str(BASELINES),
            "--report",
            str(tmp_path / "perf" / "report.md"),
            "--plots",
            str(tmp_path / "perf"),
            "--quiet",
        ]
    )
    assert code == 1
    assert (tmp_path / "perf" / "crosstile-fp16-nt.png").is_file()
    assert "![times-fp16-nt](times-fp16-nt.png)" in (tmp_path / "perf" / "report.md").read_text()


# --- rebaseline -----------------------------------------------------------------------------------------


def three_runs(tmp_path: Path, prefix: str = "run", **kwargs: object) -> list[str]:
    return [
        str(results_file(tmp_path, f"{prefix}-{s}.json", seed=s, rounds=20, **kwargs))
        for s in (31, 32, 33)
    ]


def test_rebaseline_writes_atomically_and_diffs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "baselines" / "nvidia-h200.json"
    assert main(["rebaseline", *three_runs(tmp_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "# Rebaseline nvidia-h200" in text and "every row is new" in text
    assert "+ xtile_persistent-beats-swizzle_persistent-fp16-nt K=128" in text
    assert "no tolerances file" in text  # none beside --out: built-in policy, said so
    assert json.loads(out.read_text())["schema_version"] == 1
    assert sorted(p.name for p in out.parent.iterdir()) == ["nvidia-h200.json"]
    # the baseline judges a run of the same machine
    fresh = results_file(tmp_path, "pr.json", seed=40, rounds=20)
    assert (
        main(
            [
                "compare",
                str(fresh),
                "--baselines",
                str(out.parent),
                "--no-plots",
                "--report",
                str(tmp_path / "r.md"),
            ]
        )
        == 0
    )


def test_rebaseline_check_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "nvidia-h200.json"
    assert main(["rebaseline", *three_runs(tmp_path), "--out", str(out), "--check"]) == 0
    assert not out.exists()


def test_rebaseline_refuses_a_slower_run_unless_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nvidia-h200.json"
    shutil.copy(BASELINES / "nvidia-h200.json", out)
    before = out.read_bytes()
    slower = three_runs(tmp_path, slow={key("persistent", K=4096): 1.10})
    assert main(["rebaseline", *slower, "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "REFUSED" in text and "persistent-fp16-nt-K4096" in text and "--accept-slower" in text
    assert out.read_bytes() == before
    assert main(["rebaseline", *slower, "--out", str(out), "--accept-slower"]) == 0
    assert out.read_bytes() != before


def test_rebaseline_uses_the_tolerances_file(tmp_path: Path) -> None:
    tol = tmp_path / "tol.toml"
    tol.write_text(
        '[policy]\nfloor = 0.05\n[[override]]\nvariant = "tiled"\ntolerance = 0.07\nreason = "test"\n'
    )
    out = tmp_path / "nvidia-h200.json"
    assert (
        main(["rebaseline", *three_runs(tmp_path), "--out", str(out), "--tolerances", str(tol)])
        == 0
    )
    rows = json.loads(out.read_text())["rows"]
    assert rows[key("tiled")]["tolerance"] == 0.07
    assert rows[key("tiled")]["tolerance_source"].startswith("override [variant=tiled]: test")
    assert min(r["tolerance"] for r in rows.values()) >= 0.05


@pytest.mark.parametrize(
    ("fixture", "needle"),
    [
        ("synthetic-results-failed-row.json", "correctness"),
        ("synthetic-results-rtx5090.json", "GPU model"),
        ("synthetic-results-nan-timing.json", "NaN"),
    ],
)
def test_rebaseline_refuses_bad_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fixture: str, needle: str
) -> None:
    out = tmp_path / "nvidia-h200.json"
    assert (
        main(["rebaseline", three_runs(tmp_path)[0], str(FIXTURES / fixture), "--out", str(out)])
        == 2
    )
    assert needle in capsys.readouterr().err
    assert not out.exists()


def test_rebaseline_needs_something(tmp_path: Path) -> None:
    assert main(["rebaseline", "--out", str(tmp_path / "x.json")]) == 2
    assert (
        main(
            ["rebaseline", "--out", str(tmp_path / "x.json"), "--old", str(tmp_path / "none.json")]
        )
        == 2
    )


# --- the command itself ---------------------------------------------------------------------------------------


def test_usage_errors_are_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["compare"]) == 2
    assert main(["--help"]) == 0
    assert "compare" in capsys.readouterr().out


def test_fingerprint_is_optional(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tilegate.fingerprint

    monkeypatch.setitem(sys.modules, "tilegate.fingerprint.gate", None)  # as if it did not exist
    # and not imported yet by another test of this process (`from package import gate` finds it)
    monkeypatch.delattr(tilegate.fingerprint, "gate", raising=False)
    assert main(["fingerprint"]) == 2
    assert "fingerprint is not available" in capsys.readouterr().err
    assert main(["compare", "--help"]) == 0


def test_python_dash_m(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tilegate",
            "compare",
            str(FIXTURES / "synthetic-results-regressed.json"),
            "--baselines",
            str(BASELINES),
            "--no-plots",
            "--report",
            str(tmp_path / "r.md"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parents[1],
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip() == "tilegate: FAIL: 2 regressions, 1 broken expectation"


def test_rebaseline_diff_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, diff = tmp_path / "nvidia-h200.json", tmp_path / "perf" / "rebaseline-diff.md"
    assert (
        main(["rebaseline", *three_runs(tmp_path), "--out", str(out), "--diff-out", str(diff)]) == 0
    )
    assert diff.read_text() == capsys.readouterr().out
    assert "Wrote" in diff.read_text()


# --- --profile: the configured benchmark's profiles ------------------------------------------------------

REPO = Path(__file__).parents[1]
PROFILE_COMMANDS = {  # every command that takes --profile, with what it needs to get that far
    "perf": ["--out-dir", "{tmp}/perf"],
    "rebaseline": ["--measure", "1"],
    "ab-noise": ["--measure", "1"],
    "upgrade-ab": ["--new", "{tmp}"],
    "bisect": ["HEAD~1", "HEAD"],
    "fingerprint": ["--report", "{tmp}/fingerprint.md", "--json-dir", "{tmp}/fingerprint"],
}


def _no_gpu_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever would look for a GPU or run the suite fails the test."""
    import tilegate.harness.device
    import tilegate.run.loop
    import tilegate.run.upgrade

    def gpu_work(*_args: object, **_kwargs: object) -> None:
        pytest.fail("the profile is checked before any GPU work")

    monkeypatch.setattr(tilegate.harness.device, "gpu_info", gpu_work)
    monkeypatch.setattr(tilegate.run.loop, "measure_runs", gpu_work)
    monkeypatch.setattr(tilegate.run.loop, "run_suite", gpu_work)
    monkeypatch.setattr(tilegate.run.loop.Perf, "run", gpu_work)


@pytest.mark.parametrize("command", sorted(PROFILE_COMMANDS))
def test_an_unknown_profile_is_2_naming_the_benchmarks_profiles(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(REPO)
    _no_gpu_work(monkeypatch)
    options = [o.format(tmp=tmp_path) for o in PROFILE_COMMANDS[command]]
    assert main([command, *options, "--profile", "nightly"]) == 2
    err = capsys.readouterr().err
    assert "'nightly' is not a profile of benchmark 'matmul'" in err
    assert "its profiles: quick, default, full, smoke" in err


def test_an_unknown_profile_fails_perf_with_a_cannot_judge_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    _no_gpu_work(monkeypatch)
    assert main(["perf", "--out-dir", str(tmp_path), "--profile", "nightly"]) == 2
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# tilegate: CANNOT JUDGE")
    assert "its profiles: quick, default, full, smoke" in report


@pytest.mark.parametrize("command", sorted(PROFILE_COMMANDS))
def test_help_lists_the_benchmarks_profiles(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main([command, "--help"]) == 0
    assert "--profile {quick,default,full,smoke}" in capsys.readouterr().out


def test_help_and_parsing_work_outside_a_configured_repo(tmp_path: Path) -> None:
    """No [tool.tilegate]: --help is exit 0 (no choices listed), nothing imports torch, and a
    command that needs the benchmark says there is no configuration (exit 2)."""
    script = f"""
import contextlib, io, sys
from tilegate.cli import main
for command in {sorted(PROFILE_COMMANDS)!r} + ["compare", "report", "baseline-diff"]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([command, "--help"]) == 0, command
    assert command not in {sorted(PROFILE_COMMANDS)!r} or "--profile PROFILE" in out.getvalue()
with contextlib.redirect_stdout(io.StringIO()) as out:
    assert main(["fingerprint", "--help"]) == 0
assert "--profile PROFILE" in out.getvalue()
with contextlib.redirect_stderr(io.StringIO()) as err:
    assert main(["rebaseline", "--measure", "1", "--profile", "nightly"]) == 2
assert "no [tool.tilegate] configuration" in err.getvalue(), err.getvalue()
assert "torch" not in sys.modules, "parsing imported torch"
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def starter_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A repository configured by `tilegate init`: its benchmark 'scale' has profiles quick, smoke."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["init", "--package", "clistarter"]) == 0
    yield tmp_path
    for name in [m for m in sys.modules if m == "clistarter" or m.startswith("clistarter.")]:
        del sys.modules[name]


def test_the_profiles_are_the_configured_benchmarks(
    starter_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_gpu_work(monkeypatch)
    capsys.readouterr()
    assert main(["ab-noise", "--help"]) == 0
    assert "--profile {quick,smoke}" in capsys.readouterr().out
    # an unknown profile is named with the benchmark's, before any GPU work
    assert main(["rebaseline", "--measure", "1", "--profile", "default"]) == 2
    err = capsys.readouterr().err
    assert "'default' is not a profile of benchmark 'scale'" in err
    assert "its profiles: quick, smoke" in err
    # no --profile: the benchmark's default profile (quick here), never a name it lacks
    import tilegate.run.loop

    measured: list[str] = []

    def measure_runs(n: int, profile: str, *_args: object, **_kwargs: object) -> object:
        measured.append(profile)
        return [], "stopped here by the test"

    monkeypatch.setattr(tilegate.run.loop, "gpu_slug", lambda: "nvidia-h200")
    monkeypatch.setattr(tilegate.run.loop, "measure_runs", measure_runs)
    assert main(["rebaseline", "--measure", "3"]) == 2
    assert measured == ["quick"], capsys.readouterr().err


def test_wants_help() -> None:
    from tilegate.run.profiles import wants_help

    assert wants_help(["perf", "--help"]) and wants_help(["perf", "-h"])
    assert wants_help(["perf", "--he"])  # argparse takes an unambiguous abbreviation
    assert not wants_help(["perf", "--", "--help"])  # pytest's
    assert not wants_help(["perf", "--profile", "quick"])


def test_ab_noise_also_measures_another_profile_and_pools_its_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ab-noise --measure 2 --also default=1`: the quick runs, then one default run, one noise
    file from all of them; the default-only cases, seen once, get the pooled tolerance."""
    import tilegate.run.loop

    monkeypatch.chdir(REPO)
    calls: list[tuple[int, str, str]] = []

    def measure_runs(n, profile, extra, out_dir, *, name):  # type: ignore[no-untyped-def]
        calls.append((n, profile, name))
        assert "--perf-ab-full" in extra  # A/A calibration: both sides every round
        ks = (128,) if profile == "quick" else (128, 4096)
        made = [
            results_file(tmp_path, f"{name}-{i}.json", seed=10 * len(calls) + i, ks=ks, ab={})
            for i in range(n)
        ]
        return made, None

    monkeypatch.setattr(tilegate.run.loop, "measure_runs", measure_runs)
    monkeypatch.setattr(tilegate.run.loop, "gpu_slug", lambda: "nvidia-h200")
    monkeypatch.setattr(tilegate.run.loop, "ab_args", lambda ref, out: [])
    out = tmp_path / "noise.json"
    argv = ["ab-noise", "--measure", "3", "--also", "default=1", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    assert calls == [(3, "quick", "ab-noise"), (1, "default", "ab-noise-default")]
    rows = json.loads(out.read_text())["rows"]
    assert len(rows[key("tiled", K=128)]["run_ratios"]) == 4
    # seen once: at least the largest tolerance of the cases seen 4 times (pooled), or more
    # when its own one-run bound is wider still (8 x |r - 1| at 90 %: up to the ceiling)
    seen4 = max(r["tolerance"] for r in rows.values() if len(r["run_ratios"]) == 4)
    once = rows[key("tiled", K=4096)]
    assert once["source"] in ("pooled", "ceiling") and once["tolerance"] >= seen4
    # a profile the benchmark lacks, or a malformed spec: exit 2 before anything is measured
    calls.clear()
    assert main(["ab-noise", "--measure", "1", "--also", "nightly=1"]) == 2
    assert "'nightly' is not a profile of benchmark 'matmul'" in capsys.readouterr().err
    assert main(["ab-noise", "--measure", "1", "--also", "default"]) == 2
    assert "expected PROFILE=N" in capsys.readouterr().err
    assert main(["ab-noise", "--also", "default=1", str(out)]) == 2
    assert calls == []


def test_compare_on_a_mistyped_path_leaves_the_last_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 48: `tilegate compare` given a bad path overwrote the last good report
    assert compare(tmp_path, "synthetic-results-h200-quick.json") == 0
    good = (tmp_path / "report.md").read_text()
    capsys.readouterr()
    for wrong in (["no-such.json"], ["synthetic-results-h200-quick.json", "--confirm", "x.json"]):
        assert compare(tmp_path, *wrong) == 2
        err = capsys.readouterr().err
        assert "does not exist" in err and "untouched" in err, err
        assert (tmp_path / "report.md").read_text() == good


def test_rebaseline_counts_the_too_noisy_rows_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 48: the table marked 4 rows "too noisy", the warning named 2: the reference's rows
    # are never called too noisy (tests/test_baseline.py), in the table neither
    args = [str(FIXTURES / "synthetic-results-smoke.json"), "--out", str(tmp_path / "b.json")]
    assert main(["rebaseline", *args, "--check"]) == 0
    out = capsys.readouterr().out
    marked = [ln for ln in out.splitlines() if ln.startswith("|") and "too noisy" in ln]
    (warning,) = [ln for ln in out.splitlines() if "TOO NOISY:" in ln]
    assert marked and f"TOO NOISY: {len(marked)} row(s)" in warning, out
    assert all(ln.split("|")[1].strip() in warning for ln in marked), out
    assert "torch-" not in warning and "torch-" not in "".join(marked)


def test_help_and_pointers_name_what_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 48: ab-noise --help named a constant (MIN_NOISE_RUNS), upgrade-ab a README section
    that does not exist, docs/plugin.md a command `tilegate dashboard`, the README `sudo`."""
    import re

    from tilegate.cli import COMMANDS
    from tilegate.errors import InputError
    from tilegate.judge.abnoise import MIN_NOISE_RUNS
    from tilegate.run.upgrade import check_dir

    assert main(["ab-noise", "--help"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "MIN_NOISE_RUNS" not in said and f"at least {MIN_NOISE_RUNS} A/A runs" in said
    with pytest.raises(InputError) as err:
        check_dir("--new", tmp_path)
    doc, section = re.search(r"\((docs/\S+\.md), '([^']+)'\)", str(err.value)).groups()  # type: ignore[union-attr]
    root = Path(__file__).resolve().parents[1]
    assert f"## {section}\n" in (root / doc).read_text()
    names = {c.NAME for c in COMMANDS}
    for page in (root / "docs" / "plugin.md", root / "README.md"):
        named = set(re.findall(r"`tilegate ([a-z][a-z-]*)", page.read_text()))
        assert named <= names, (page.name, named - names)
    # a root container has no sudo: the README's commands work as root and as a user
    assert not re.search(r"^sudo ", (root / "README.md").read_text(), re.M)


def test_report_only_with_a_baseline_of_another_grid_reports_the_run_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 48: `--report-only` exited 2 ("no case in common") after the report's own advice
    # to build a throwaway baseline (of another grid): --report-only needs no baseline
    smoke = FIXTURES / "synthetic-results-smoke.json"
    data = json.loads(smoke.read_text())
    for b in data["benchmarks"]:
        b["extra_info"]["tilegate"]["key"] = b["param"] = b["param"] + "-other"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    baseline = tmp_path / "smoke.json"
    assert main(["rebaseline", str(other), "--out", str(baseline)]) == 0
    capsys.readouterr()
    report = tmp_path / "r.md"
    args = ["compare", str(smoke), str(baseline), "--no-plots", "--report", str(report)]
    assert main(args) == 2  # judged, it cannot be
    assert main([*args, "--report-only"]) == 0
    assert "holds no case of this run" in report.read_text()


def test_a_command_from_a_subdirectory_runs_at_the_root_with_the_paths_typed_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 48: every command works from any directory of the repository; its outputs go to
    # the root's .perf/, a relative path typed in the subdirectory is found from there
    (tmp_path / "pyproject.toml").write_text('[tool.tilegate]\nsource = "pkg"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "baselines").mkdir()
    sub = tmp_path / "perf_tests" / "deeper"
    sub.mkdir(parents=True)
    shutil.copy(FIXTURES / "synthetic-results-h200-quick.json", sub / "r.json")
    monkeypatch.chdir(sub)
    assert main(["compare", "r.json", "--report-only", "--no-plots", "--quiet"]) == 0
    assert (tmp_path / ".perf" / "report.md").is_file() and not (sub / ".perf").exists()
    assert Path.cwd() == sub  # and back where it was


def test_gpu_prints_the_slug_or_says_there_is_none(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tilegate gpu --slug` (it was `python -m tilegate.harness.device`): the runner's label."""
    import tilegate.harness.device

    def none() -> None:
        raise RuntimeError("no CUDA GPU visible")

    monkeypatch.setattr(tilegate.harness.device, "gpu_info", none)
    assert main(["gpu", "--slug"]) == 2
    assert "cannot measure: no CUDA GPU visible" in capsys.readouterr().err
    info = type("Info", (), {"slug": "nvidia-h200"})()
    monkeypatch.setattr(tilegate.harness.device, "gpu_info", lambda: info)
    assert main(["gpu", "--slug"]) == 0
    assert capsys.readouterr().out == "nvidia-h200\n"
