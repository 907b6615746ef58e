"""A real H200 run (tests/fixtures/recorded-h200-quick.md) against the real committed baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilegate.cli import main
from tilegate.store.files import load_results

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
    # the verdicts of the full recording (tests/fixtures/recorded-h200-quick.md): every one of
    # its 27 rows, every registered variant at K = 128, 512 and 4096, within its tolerance
    judged = [
        line
        for line in text.splitlines()
        if line.startswith("| `") and "-fp16-nt-K" in line and "not measured" not in line
    ]
    assert len({line.split("`")[1] for line in judged}) == 27
    assert sum("| ok |" in line for line in judged) == 27


def test_the_recorded_run_is_a_real_h200_recording() -> None:
    run = load_results(RECORDED)
    assert run.env.mode == "gpu" and run.env.profile == "quick"
    assert (run.env.gpu.name, run.env.gpu.sm_count, run.env.gpu.capability) == (
        "NVIDIA H200",
        132,
        (9, 0),
    )
    assert run.env.software["triton"] == "3.6.0" and run.env.gpu.driver == "580.159.04"
    assert len(run.rows) == 27 and not run.base_rows  # the head side of an A/A run
    # every registered variant that runs on an H200 (tma_ws_xtile_persistent needs sm_100)
    from kernels.registry import REGISTRY

    on_h200 = {v.name for v in REGISTRY if v.unsupported_reason((9, 0)) is None}
    assert {r.variant for r in run.rows.values()} == on_h200
    assert {len(r.samples_s) for r in run.rows.values()} == {156, 78, 51}
    assert RECORDED.stat().st_size < 200_000
    data = json.loads(RECORDED.read_text())
    for bench in data["benchmarks"]:  # still what pytest-benchmark writes
        assert bench["stats"]["data"] == bench["extra_info"]["tilegate"]["samples_s"]
        assert bench["stats"]["rounds"] == len(bench["stats"]["data"])
