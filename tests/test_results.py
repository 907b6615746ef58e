"""Reading results files: the synthetic and recorded fixtures, and every way one can be bad."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._factories import bench, key, make_run, set_samples, write
from tilegate.errors import InputError
from tilegate.judge.results import SMOKE_SLUG, row_order
from tilegate.store.files import load_results

FIXTURES = Path(__file__).parent / "fixtures"


def test_valid_results_fixture() -> None:
    run = load_results(FIXTURES / "synthetic-results-h200-quick.json")
    assert len(run.rows) == 24
    assert run.env.gpu.slug == "nvidia-h200"
    assert run.env.gpu.sm_count == 132
    assert run.env.software["triton"] == "3.6.0"
    assert run.env.mode == "gpu" and not run.env.smoke
    assert run.env.throttled is False
    assert run.env.l2_flush is True and run.env.timer == "cuda-event"
    assert run.variant_order[0] == "torch" and run.variant_order[-1] == "tma_xtile_persistent"
    row = run.rows["xtile_persistent-fp16-nt-K128"]
    p = row.params
    assert (row.variant, p["dtype"], p["layout"], p["K"], p["M"]) == (
        "xtile_persistent",
        "fp16",
        "nt",
        128,
        16384,
    )
    assert row.twin == "swizzle_persistent"
    assert row.ratio_to_twin is not None and 0.6 < row.ratio_to_twin < 0.8
    assert len(row.samples_s) == 20
    assert row.median_s == pytest.approx(0.31e-3, rel=0.03)
    assert (
        run.find("swizzle_persistent", "fp16-nt-K128")
        is run.rows["swizzle_persistent-fp16-nt-K128"]
    )
    assert run.find("swizzle_persistent", "fp16-nn-K128") is None
    assert ("fp16-nt-K4096") in run.groups


def test_smoke_results_are_valid_input() -> None:
    run = load_results(FIXTURES / "synthetic-results-smoke.json")
    assert run.env.smoke
    assert run.env.gpu.slug == SMOKE_SLUG
    assert run.env.timer == "perf-counter"
    assert run.rows["torch-fp16-nt-K24"].tflops == 0.0  # rounds to zero on tiny shapes


@pytest.mark.parametrize(
    ("fixture", "needles"),
    [
        ("synthetic-results-corrupt.json", ["synthetic-results-corrupt.json", "not valid JSON"]),
        (
            "synthetic-results-nan-timing.json",
            [
                "synthetic-results-nan-timing.json",
                "xtile_persistent-fp16-nt-K128",
                "NaN timing",
                "round 4",
            ],
        ),
        (
            "synthetic-results-zero-timing.json",
            [
                "synthetic-results-zero-timing.json",
                "swizzle_persistent-fp16-nt-K128",
                "zero timing",
            ],
        ),
        (
            "synthetic-results-failed-row.json",
            [
                "synthetic-results-failed-row.json",
                "xtile_persistent-fp16-nt-K128",
                "correctness",
                "0.4172",
            ],
        ),
        (
            "synthetic-results-not-tilegate.json",
            ["synthetic-results-not-tilegate.json", "machine_info", "`tilegate perf`"],
        ),
        ("does-not-exist.json", ["does-not-exist.json", "does not exist"]),
    ],
)
def test_bad_results_name_the_file_and_row(fixture: str, needles: list[str]) -> None:
    with pytest.raises(InputError) as err:
        load_results(FIXTURES / fixture)
    for needle in needles:
        assert needle in str(err.value)


def _small() -> dict:
    return make_run(
        ks=(128,), variants=("torch", "swizzle_persistent", "xtile_persistent"), rounds=8, seed=3
    )


def _error(tmp_path: Path, data: dict) -> str:
    with pytest.raises(InputError) as err:
        load_results(write(tmp_path / "r.json", data))
    return str(err.value)


def test_errored_case_without_samples(tmp_path: Path) -> None:
    data = _small()
    tg = bench(data, key("xtile_persistent"))["extra_info"]["tilegate"]
    tg.update(correct=None, rel_err=None, error="RuntimeError: out of resource: shared memory")
    set_samples(data, key("xtile_persistent"), [])
    msg = _error(tmp_path, data)
    assert "xtile_persistent-fp16-nt-K128" in msg and "out of resource" in msg


def test_empty_and_negative_timings(tmp_path: Path) -> None:
    data = _small()
    set_samples(data, key("torch"), [])
    assert "no timing samples" in _error(tmp_path, data)
    data = _small()
    set_samples(data, key("torch"), [1e-3, -1e-3, 1e-3])
    assert "negative timing" in _error(tmp_path, data)


def test_nan_recorded_median(tmp_path: Path) -> None:
    data = _small()
    bench(data, key("torch"))["stats"]["median"] = float("nan")
    assert "torch-fp16-nt-K128" in _error(tmp_path, data)


def test_duplicate_case(tmp_path: Path) -> None:
    data = _small()
    data["benchmarks"].append(data["benchmarks"][0])
    assert "appears twice" in _error(tmp_path, data)


def test_no_benchmarks(tmp_path: Path) -> None:
    data = _small()
    data["benchmarks"] = []
    assert "no benchmarks" in _error(tmp_path, data)


def test_gpu_run_without_gpu_facts(tmp_path: Path) -> None:
    data = _small()
    data["machine_info"]["tilegate"]["gpu"] = None
    assert "gpu is missing" in _error(tmp_path, data)
    data["machine_info"]["tilegate"]["gpu"] = {"name": "NVIDIA H200"}
    assert "slug" in _error(tmp_path, data)


def test_unknown_mode(tmp_path: Path) -> None:
    data = _small()
    data["machine_info"]["tilegate"]["mode"] = "emulated"
    assert "mode" in _error(tmp_path, data)


def test_bad_ratio(tmp_path: Path) -> None:
    data = _small()
    bench(data, key("xtile_persistent"))["extra_info"]["tilegate"]["ratio_to_twin"] = 0.0
    assert "ratio_to_twin" in _error(tmp_path, data)


def test_samples_fall_back_to_pytest_benchmark_data(tmp_path: Path) -> None:
    data = _small()
    del bench(data, key("torch"))["extra_info"]["tilegate"]["samples_s"]
    run = load_results(write(tmp_path / "r.json", data))
    assert run.rows[key("torch")].samples_s == tuple(bench(data, key("torch"))["stats"]["data"])


def test_injections_are_recorded(tmp_path: Path) -> None:
    run = load_results(
        write(
            tmp_path / "r.json",
            make_run(ks=(128,), rounds=5, injected=("slow=swizzle_persistent:0.10",)),
        )
    )
    assert run.env.injected == ("slow=swizzle_persistent:0.10",)


def test_pytest_benchmark_compare_reads_our_results() -> None:
    """Contract: our results stay pytest-benchmark JSON that its own `compare` can read."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_benchmark",
            "compare",
            str(FIXTURES / "synthetic-results-h200-quick.json"),
            "--columns=median,rounds",
            "--group-by=group",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "xtile_persistent-fp16-nt-K128" in proc.stdout
    assert "fp16-nt-K4096" in proc.stdout


def test_fixtures_are_what_pytest_benchmark_writes() -> None:
    data = json.loads((FIXTURES / "synthetic-results-h200-quick.json").read_text())
    assert set(data) == {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    first = data["benchmarks"][0]
    assert {
        "group",
        "name",
        "fullname",
        "params",
        "param",
        "extra_info",
        "options",
        "stats",
    } <= set(first)
    assert first["stats"]["data"] == first["extra_info"]["tilegate"]["samples_s"]


def test_row_order_sorts_by_the_axes_then_the_suites_variant_order() -> None:
    axes = ["dtype", "K"]
    rows = [
        ({"K": 4096, "dtype": "fp16"}, "tiled"),
        ({"dtype": "fp16", "K": 128}, "zeta"),  # a variant the run lacks: after those it has
        ({"K": 128, "dtype": "fp16"}, "tiled"),
        ({"K": 128, "dtype": "fp16"}, "xtile"),
        ({"K": 128, "dtype": "bf16"}, "xtile"),
    ]
    got = sorted(rows, key=lambda r: row_order(r[0], r[1], axes, ["xtile", "tiled"]))
    assert [(p["dtype"], p["K"], v) for p, v in got] == [
        ("bf16", 128, "xtile"),
        ("fp16", 128, "xtile"),
        ("fp16", 128, "tiled"),
        ("fp16", 128, "zeta"),
        ("fp16", 4096, "tiled"),
    ]
    # without a variant order (a baseline's rows): by name within one set of parameters
    plain = sorted(rows[2:4], key=lambda r: row_order(r[0], r[1], axes))
    assert [v for _, v in plain] == ["tiled", "xtile"]
