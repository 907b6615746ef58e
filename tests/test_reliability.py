"""Every failure reads as "cannot judge" (exit 2), never as a regression; no input crashes the gate.

Issue 12: each test here failed on main 823ada1. The inputs are real where they can be: the
recorded H200 run (tests/fixtures/recorded-h200-quick.json) and the committed H200 baseline.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tilegate.cli import main

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "recorded-h200-quick.json"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"
TOLERANCES = ROOT / "baselines" / "tolerances.toml"
STALE = "# tilegate: PASS\n\nthe previous run's report\n"


def cannot_judge(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """stderr of a command that could not judge: one line of cause, no traceback, naming things."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def compare(tmp_path: Path, results: Path, baseline: Path | None = BASELINE, *extra: str) -> int:
    report = tmp_path / "report.md"
    if not report.exists():
        report.write_text(STALE)
    args = ["compare", str(results), *([str(baseline)] if baseline else [])]
    return main([*args, "--report", str(report), "--no-plots", *extra])


def assert_cannot_judge_report(tmp_path: Path) -> None:
    assert (tmp_path / "report.md").read_text().startswith("# tilegate: CANNOT JUDGE")


# --- files that are not UTF-8 ---------------------------------------------------------------------


def _reencoded(src: Path, dst: Path, encoding: str = "utf-16") -> Path:
    """What an editor or PowerShell's `>` makes of a file: the same text, another encoding."""
    dst.write_bytes(src.read_text(encoding="utf-8").encode(encoding))
    return dst


def test_results_not_utf8_cannot_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _reencoded(RECORDED, tmp_path / "results.json")
    assert compare(tmp_path, bad) == 2
    cannot_judge(capsys, str(bad), "not UTF-8")
    assert_cannot_judge_report(tmp_path)


def test_baseline_not_utf8_cannot_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _reencoded(BASELINE, tmp_path / "nvidia-h200.json")
    assert compare(tmp_path, RECORDED, bad) == 2
    cannot_judge(capsys, str(bad), "not UTF-8")
    assert_cannot_judge_report(tmp_path)


def test_tolerances_not_utf8_cannot_rebaseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nvidia-h200.json"
    shutil.copy(BASELINE, out)
    before = out.read_bytes()
    tol = tmp_path / "tolerances.toml"
    tol.write_bytes(
        '[[override]]\nvariant = "tiled"\ntolerance = 0.05\nreason = "café"\n'.encode("latin-1")
    )
    assert main(["rebaseline", str(RECORDED), "--out", str(out), "--tolerances", str(tol)]) == 2
    cannot_judge(capsys, str(tol), "not UTF-8")
    assert out.read_bytes() == before


def test_ab_noise_file_not_utf8_cannot_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests._factories import results_file

    baselines = tmp_path / "baselines"
    baselines.mkdir()
    noise = _reencoded(
        ROOT / "baselines" / "nvidia-h200.ab.json", baselines / "nvidia-h200.ab.json"
    )
    run = results_file(tmp_path, "ab.json", seed=3, rounds=40, ab={})
    assert compare(tmp_path, run, None, "--baselines", str(baselines), "--report-only") == 2
    cannot_judge(capsys, str(noise), "not UTF-8")
    assert_cannot_judge_report(tmp_path)


def test_fingerprint_files_not_utf8_cannot_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tilegate.errors import InputError
    from tilegate.fingerprint.store import load_fingerprints

    stored = next((ROOT / "baselines" / "fingerprints").glob("triton-*/sm_90.json"))
    bad = _reencoded(stored, tmp_path / "sm_90.json")
    with pytest.raises(InputError, match="not UTF-8") as err:
        load_fingerprints(bad)
    assert str(bad) in str(err.value)
    rules = _reencoded(ROOT / "baselines" / "fingerprints" / "rules.json", tmp_path / "rules.json")
    report = tmp_path / "fingerprint.md"
    report.write_text(STALE)
    args = ["fingerprint", "--rules", str(rules), "--report", str(report)]
    assert main([*args, "--json-dir", str(tmp_path / "facts")]) == 2
    cannot_judge(capsys, str(rules), "not UTF-8")
    assert report.read_text().startswith("# ")
    assert "CANNOT JUDGE" in report.read_text().splitlines()[0]
