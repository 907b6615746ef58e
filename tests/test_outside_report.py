"""The report speaks of the benchmark it judges: for an outside repository (examples/liger: a
`torch` reference, memory-bound rows in GB/s, no `ab_noise` session) neither the report nor the
command line's help says cuBLAS, TFLOP/s, `nox -s ab_noise` or this repository's K axis."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests._factories import _benchmark, _machine_info, write
from tilegate.cli import main
from tilegate.judge.stats import paired_ratio
from tilegate.run.gate import gate

ROOT = Path(__file__).resolve().parents[1]
LIGER = ROOT / "examples/liger/baselines/nvidia-h200.json"
# what only this repository's matmul benchmark may say
MATMUL_WORDS = ("cuBLAS", "TFLOP/s", "nox -s ab_noise", "nox -s rebaseline", "K =", "matmul")


def liger_run(
    slow: dict[str, float], *, ab: dict[str, float] | None = None, seed: int = 7, rounds: int = 60
) -> dict[str, Any]:
    """A results file of examples/liger's quick profile around its committed baseline: its rows,
    params and code hashes, `gbps` as its work declares bytes; `slow` maps a case id to a factor;
    `ab` makes an A/B run (every liger row beside its base, head / base = the factor)."""
    baseline = json.loads(LIGER.read_text())
    rng = np.random.default_rng(seed)
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for case, row in baseline["rows"].items():
        groups.setdefault(row["group"], {})[case] = row
    benchmarks = []
    for group, rows in groups.items():
        common = np.exp(rng.normal(0.0, 0.003, rounds))
        samples = {
            case: [
                float(x)
                for x in row["median_s"]
                * slow.get(case, 1.0)
                * common
                * np.exp(rng.normal(0.0, 0.003, rounds))
            ]
            for case, row in rows.items()
        }
        ref = next(c for c, r in rows.items() if r["variant"] == "torch")
        for case, row in rows.items():
            x = samples[case]
            median = float(np.median(x))
            p = row["params"]
            tg: dict[str, Any] = {
                "key": case,
                "variant": row["variant"],
                "group": group,
                "params": p,
                **p,
                "correct": True,
                "rel_err": 1e-3,
                "tolerance": 2e-2,
                "samples_s": x,
                "median_s": median,
                "gbps": round(6.0 * p["tokens"] * p["hidden"] / median / 1e9, 3),
                "ratio_to_reference": None if case == ref else paired_ratio(x, samples[ref]),
                "code_hash": row["code_hash"],
                "code_hash_kind": "sass",
            }
            if case == ref:
                tg["reference"] = True
            benchmarks.append(_benchmark(case, group, tg, x))
            if ab is None or case == ref:
                continue
            base = [float(v) / ab.get(case, 1.0) for v in x]
            tg["ratio_to_base"] = paired_ratio(x, base)
            btg = dict(tg, samples_s=base, median_s=float(np.median(base)), side="base")
            btg.pop("ratio_to_base")
            btg["ratio_to_reference"] = paired_ratio(base, samples[ref])
            if case in ab:  # the pull request changed this kernel's code
                btg["code_hash"] = "case2:sha256:" + "0" * 64
            benchmarks.append(_benchmark(f"{case}@base", group, btg, base))
    prov = baseline["provenance"]
    mi = _machine_info(
        mode="gpu",
        profile="quick",
        m=0,
        n=0,
        ks=(),
        rounds=rounds,
        gpu=baseline["gpu"],
        software={**prov["software"], "torch": "2.12.0+cu130"},  # the environment moved
        throttled=False,
        injected=(),
        ab=ab,
    )
    tg_env = mi["tilegate"]
    for legacy in ("M", "N", "ks"):
        del tg_env[legacy]
    tg_env.update(timer=prov["timer"], l2_flush=prov["l2_flush"])
    tg_env.update(
        benchmark="liger", fixed=prov["fixed"], axes=["kernel", "dtype", "tokens", "hidden"]
    )
    return {
        "machine_info": mi,
        "commit_info": {"id": "c" * 40, "time": "2026-12-02T10:00:00+00:00", "dirty": False},
        "benchmarks": benchmarks,
        "datetime": "2026-12-02T10:00:00+00:00",
        "version": "5.3.1",
    }


def _assert_generic(text: str) -> None:
    said = [w for w in MATMUL_WORDS if w in text]
    assert said == [], f"the outside repository's report says {said}:\n{text}"


@pytest.fixture
def baselines(tmp_path: Path) -> Path:
    d = tmp_path / "baselines"
    d.mkdir()
    shutil.copy(LIGER, d / "nvidia-h200.json")
    return d


def test_a_stored_baseline_report_of_liger_speaks_of_liger(tmp_path: Path, baselines: Path) -> None:
    slow = {
        "liger-rms_norm-bwd-bf16-T8192-H4096": 1.15,  # regressed
        "torch-swiglu-fwd-bf16-T8192-H4096": 1.10,  # the reference moved
        "liger-layer_norm-fwd-bf16-T8192-H4096": 0.85,  # improved
    }
    results = write(tmp_path / "results.json", liger_run(slow))
    judged = gate(results, baselines_dir=baselines, report_path=tmp_path / "report.md")
    assert judged.error is None and judged.code == 1, judged.error or judged.text
    text = judged.text
    # what it does say, in the benchmark's own words
    assert "The reference (`torch`) is not the code under test" in text
    assert "reference (`torch`) are SHIFTED" in text  # torch moved: the environment banner
    assert (
        "`tilegate rebaseline --measure 3 --profile quick` on this GPU" in text
    )  # the improved row's hint
    _assert_generic(text)
    only = gate(results, baselines_dir=baselines, report_only=True)
    assert only.code == 0 and only.text.startswith("# tilegate: REPORT ONLY (would fail)")
    _assert_generic(only.text)
    # no baseline at all: the run alone, its rows in GB/s
    alone = gate(results, baselines_dir=tmp_path, report_only=True)
    assert "## All rows" in alone.text and "| GB/s |" in alone.text
    _assert_generic(alone.text)


def test_an_ab_report_of_liger_names_the_tilegate_command(tmp_path: Path, baselines: Path) -> None:
    changed = "liger-rms_norm-bwd-bf16-T8192-H4096"
    results = write(tmp_path / "ab.json", liger_run({}, ab={changed: 1.12}))
    judged = gate(results, baselines_dir=baselines)
    assert judged.error is None and judged.ab is not None, judged.error
    assert "Record one with `tilegate ab-noise --measure 4 --profile quick`" in judged.text
    _assert_generic(judged.text)


@pytest.mark.parametrize("command", ["upgrade-ab", "perf", "compare", "report", "ab-noise"])
def test_help_is_generic(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main([command, "--help"])
    except SystemExit as done:
        code = int(done.code or 0)
    assert code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert [w for w in ("cuBLAS", "K=128", "M=8192", "nox -s") if w in text] == []
    if command == "upgrade-ab":
        assert "paired per round" in text and "head / base" in text
