"""A real H200 run (tests/fixtures/recorded-h200-quick.md) against the real committed baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilegate.cli import main
from tilegate.judge.results import load_results

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "recorded-h200-quick.json"
BASELINE = ROOT / "baselines" / "nvidia-h200.json"


def test_the_recorded_h200_run_passes_against_the_committed_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.md"
    code = main(["compare", str(RECORDED), str(BASELINE), "--report", str(report), "--no-plots"])
    assert code == 0, capsys.readouterr().err
    text = report.read_text()
    assert text.startswith("# tilegate: PASS")
    # the verdicts of the full recording (tests/fixtures/recorded-h200-quick.md), row by row
    for improved in (
        "tiled-fp16-nt-K512",
        "tma_swizzle_persistent-fp16-nt-K4096",
        "tma_xtile_persistent-fp16-nt-K4096",
    ):
        assert any(
            line.startswith(f"| `{improved}`") and "improved" in line for line in text.splitlines()
        )


def test_the_recorded_run_is_a_real_h200_recording() -> None:
    run = load_results(RECORDED)
    assert run.env.mode == "gpu" and run.env.profile == "quick"
    assert (run.env.gpu.name, run.env.gpu.sm_count, run.env.gpu.capability) == (
        "NVIDIA H200",
        132,
        (9, 0),
    )
    assert run.env.software["triton"] == "3.6.0" and run.env.gpu.driver == "580.159.04"
    assert len(run.rows) == 24
    assert {len(r.samples_s) for r in run.rows.values()} == {195, 99, 30}
    assert RECORDED.stat().st_size < 200_000
    data = json.loads(RECORDED.read_text())
    for bench in data["benchmarks"]:  # still what pytest-benchmark writes
        assert bench["stats"]["data"] == bench["extra_info"]["tilegate"]["samples_s"]
        assert bench["stats"]["rounds"] == len(bench["stats"]["data"])
