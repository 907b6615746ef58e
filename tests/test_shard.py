"""Several GPUs of one runner (tilegate/run/shard.py): the plan, the merge, the off-GPU rule, and the
whole sharded run on the CPU interpreter (two processes standing in for two GPUs)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import VARIANTS
from perf_tests.test_matmul import BENCHMARK
from tests._factories import H200_GPU, build_baseline, key, make_run, write
from tilegate.cases import build_cases
from tilegate.errors import InputError
from tilegate.judge.offgpu import off_gpus
from tilegate.judge.outcome import outcome
from tilegate.judge.verdict import Verdict, compare
from tilegate.run.shard import group_cost, merge, parse_shard, plan
from tilegate.store.files import load_results


def test_the_plan_never_splits_a_group_and_balances_the_long_ones() -> None:
    profile = BENCHMARK.profile("default")
    cases = build_cases(profile, tuple(VARIANTS), base_variants=("tiled", "xtile_persistent"))
    groups: dict[str, list] = {}
    for c in cases:
        groups.setdefault(c.group, []).append(c)
    costs = {
        g: group_cost(BENCHMARK.work_for(cs[0].params), len(cs), profile.rounds, profile.min_time_s)
        for g, cs in groups.items()
    }
    for n in (1, 2, 3, 8, 13):
        shards = plan(costs, n)
        assert len(shards) == n
        flat = [g for s in shards for g in s]
        assert sorted(flat) == sorted(groups), "every group on exactly one GPU"
        assert plan(costs, n) == shards, "deterministic"
    two = plan(costs, 2)
    loads = [sum(costs[g] for g in s) for s in two]
    assert max(loads) / sum(loads) < 0.6, "two GPUs: the default profile's time at most 0.6x"
    # the two K = 4096 groups, the longest, go to different GPUs
    k4096 = [i for i, s in enumerate(two) for g in s if g.endswith("K4096")]
    assert sorted(k4096) == [0, 1]


def test_a_shard_keeps_whole_groups_with_their_ab_pairs() -> None:
    from tilegate.plugin import _my_shard

    profile = BENCHMARK.profile("quick")
    cases = build_cases(profile, tuple(VARIANTS), base_variants=("tiled", "xtile_persistent"))
    parts = [_my_shard(cases, f"{i}/2", profile, BENCHMARK) for i in range(2)]
    assert sorted(c.test_id for p in parts for c in p) == sorted(c.test_id for c in cases)
    for part in parts:
        groups = {c.group for c in part}
        assert {c.test_id for c in part} == {c.test_id for c in cases if c.group in groups}
    with pytest.raises(ValueError, match="I/N"):
        parse_shard("2")
    with pytest.raises(ValueError, match="0 <= I < N"):
        parse_shard("2/2")


def _shard_file(tmp_path: Path, name: str, ks: tuple[int, ...], serial: str, **kw: object) -> Path:
    data = make_run(ks=ks, **kw)  # type: ignore[arg-type]
    data["machine_info"]["tilegate"]["gpu"] = {**H200_GPU, "serial": serial}
    return write(tmp_path / name, data)


def test_merge_tags_every_row_with_its_gpu_and_pytest_benchmark_reads_it(tmp_path: Path) -> None:
    parts = [
        _shard_file(tmp_path, "r.gpu0.json", (4096,), "SER-A", seed=1),
        _shard_file(tmp_path, "r.gpu1.json", (128, 512), "SER-B", seed=2),
    ]
    out = tmp_path / "results.json"
    merge(parts, out)
    run = load_results(out)
    assert len(run.rows) == 3 * 8
    assert {(r.params["K"], r.gpu_index, r.gpu_serial) for r in run.rows.values()} == {
        (4096, 0, "SER-A"),
        (128, 1, "SER-B"),
        (512, 1, "SER-B"),
    }
    assert [g["gpu"]["serial"] for g in run.env.gpus] == ["SER-A", "SER-B"]
    exe = shutil.which("pytest-benchmark", path=str(Path(sys.executable).parent))
    assert exe
    proc = subprocess.run(
        [exe, "compare", str(out), "--columns=median"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and "torch-fp16-nt-K4096" in proc.stdout


def test_merge_refuses_a_case_measured_twice_or_another_gpu_model(tmp_path: Path) -> None:
    a = _shard_file(tmp_path, "a.json", (128,), "A", seed=3)
    b = _shard_file(tmp_path, "b.json", (128,), "B", seed=4)
    with pytest.raises(InputError, match="in both"):
        merge([a, b], tmp_path / "x.json")
    other = make_run(ks=(512,), seed=5)
    other["machine_info"]["tilegate"]["gpu"] = {
        **H200_GPU,
        "slug": "nvidia-h100-80gb-hbm3",
        "name": "NVIDIA H100 80GB HBM3",
    }
    with pytest.raises(InputError, match="one GPU model"):
        merge([a, write(tmp_path / "h100.json", other)], tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_off_gpus_names_the_outlier_and_with_two_both() -> None:
    three = off_gpus({0: [0.01, 0.0], 1: [0.005], 2: [0.09, 0.11]}, 0.04, {2: "SER-C"})
    assert [(g.index, g.serial) for g in three] == [(2, "SER-C")]
    assert "+10.0%" in three[0].why
    two = off_gpus({0: [0.0], 1: [0.08]}, 0.04, {})
    assert [g.index for g in two] == [0, 1] and "cannot be told" in two[0].why
    assert off_gpus({0: [0.0], 1: [0.02]}, 0.04, {}) == []
    assert off_gpus({0: [0.09]}, 0.04, {}) == [], "one GPU: the stored-baseline rules decide"


def test_the_rows_of_an_off_gpu_are_not_judged_and_the_run_cannot_judge(tmp_path: Path) -> None:
    baseline = build_baseline(tmp_path)
    ks = (128, 512, 4096)
    slow = {
        key(v, K=512): 1.10
        for v in VARIANTS
        if v not in ("tma_ws_persistent", "tma_ws_xtile_persistent")
    }
    parts = [
        _shard_file(
            tmp_path,
            f"g{i}.json",
            (k,),
            f"SER-{i}",
            seed=10 + i,
            slow=slow if k == 512 else {},
            drift=False,
        )
        for i, k in enumerate(ks)
    ]
    merge(parts, tmp_path / "results.json")
    run = load_results(tmp_path / "results.json")
    cmp = compare(run, baseline)
    assert [g.index for g in cmp.off_gpus] == [1]
    off = [r for r in cmp.rows if r.verdict is Verdict.OFF_GPU]
    assert {r.params["K"] for r in off} == {512} and len(off) == 8
    assert not any(r.fails for r in cmp.rows)
    assert outcome(cmp, None).code == 2


def test_a_sharded_smoke_run_merges_two_processes_into_one_results_file(tmp_path: Path) -> None:
    """The real thing on the CPU: `tilegate perf --gpus 2` on the interpreter (no CUDA here, so
    CUDA_VISIBLE_DEVICES changes nothing), two pytest processes at once, one results file."""
    from tilegate.run.loop import Perf

    lines: list[str] = []
    perf = Perf(
        profile="smoke",
        report_only=True,
        out_dir=tmp_path / "perf",
        plots=False,
        gpus=2,
        pytest_args=["--perf-variants=torch,swizzle_persistent,xtile_persistent"],
        log=lines.append,
    )
    assert perf.run() == 0, lines
    data = json.loads((tmp_path / "perf" / "results.json").read_text())
    by_gpu: dict[int, set[str]] = {}
    for b in data["benchmarks"]:
        tg = b["extra_info"]["tilegate"]
        by_gpu.setdefault(tg["gpu_index"], set()).add(f"{tg['layout']}-K{tg['K']}")
    assert sorted(by_gpu) == [0, 1]
    assert not (by_gpu[0] & by_gpu[1]), "a group is measured on one GPU only"
    assert len(data["machine_info"]["tilegate"]["gpus"]) == 2
    # coverage is judged on the merged file: each GPU's cases are the other's "selected" ones
    report = (tmp_path / "perf" / "report.md").read_text()
    assert "must be measured: all measured" in report, report[:2000]
    assert copy.deepcopy(data["machine_info"]["tilegate"]["shard"]) in ("0/2", "1/2")
