"""The host verdict over worker processes (issue 50, item 2) on recorded per-process medians:
tilegate.judge.hostprocs, and the A/B's case judged on it where the sides are two processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests._factories import bench, key, make_run, write
from tilegate.errors import InputError
from tilegate.harness.hostworkers import orders
from tilegate.judge import hostprocs
from tilegate.judge.abcompare import compare_ab
from tilegate.judge.abnoise import HOST_POLICY, build_noise, host_key
from tilegate.judge.vocabulary import ABVerdict
from tilegate.store.files import load_results

CASE = key("tiled", K=128)
BASE_MS = [0.212, 0.251, 0.198, 0.240, 0.231, 0.205]  # Liger's rms_norm host time: +-25 %
PROFILE = [["pkg/ops.py:rms_norm", 0.20e-3], ["<built-in method torch.empty>", 0.01e-3]]


def _results(tmp_path: Path, head_ms: list[float], aa: bool = False, **extra: Any) -> Path:
    """A two-process A/B whose `tiled` K128 pair is host-bound, its code changed (not in an
    `aa`), with these per-process host medians (the base's BASE_MS) and profiles."""
    old = None if aa else {"tiled": "sha256:old"}
    data = make_run(ks=(128,), ab={}, code={"tiled": "sha256:new"}, base_code=old)
    data["machine_info"]["tilegate"]["ab"]["processes"] = 2
    for param, ms, profile in (
        (CASE, head_ms, extra.pop("head_profile", PROFILE)),
        (f"{CASE}@base", BASE_MS, PROFILE),
    ):
        tg = bench(data, param)["extra_info"]["tilegate"]
        tg.update(host_s=0.3e-3, host_bound=True, held=True, host_profile=profile, **extra)
        tg["host_procs_s"] = [m / 1e3 for m in ms]
    tmp_path.mkdir(exist_ok=True)
    return write(tmp_path / "results.json", data)


def _scaled(*factors: float) -> list[float]:
    return [m * f for m, f in zip(BASE_MS, factors, strict=True)]


def _case(path: Path) -> Any:
    (case,) = [c for c in compare_ab(load_results(path), None).cases if c.key == CASE]
    return case


def test_a_wrapper_slower_in_every_process_pair_is_slower_on_its_host_time(tmp_path: Path) -> None:
    grown = [["pkg/ops.py:rms_norm", 0.32e-3], ["<built-in method torch.cuda.synchronize>", 0.1e-3]]
    case = _case(_results(tmp_path, [m * 1.5 for m in BASE_MS], head_profile=grown))
    assert case.verdict is ABVerdict.SLOWER and case.judged_on == "host", case.note
    assert case.ci is not None and case.ci[0] > 1 + HOST_POLICY.ceiling
    assert "host time over 6 process pairs" in case.note
    # the explanation: what grew per call, from the first worker's profile of each side
    assert "`pkg/ops.py:rms_norm` +0.12 ms" in case.note
    assert "`<built-in method torch.cuda.synchronize>` +0.1 ms" in case.note


def test_an_aa_over_processes_is_same_and_process_noise_is_not_a_verdict(tmp_path: Path) -> None:
    aa = _case(_results(tmp_path, _scaled(1.02, 0.97, 1.01, 0.99, 1.03, 0.98)))
    assert aa.verdict is ABVerdict.SAME and aa.judged_on == "host", aa.note
    assert "grew per call" not in aa.note
    # each process's Python 20-50 % off the other's, either way: undecided, not SLOWER
    noisy = _case(_results(tmp_path, _scaled(1.5, 0.7, 1.4, 0.8, 1.5, 0.75)))
    assert noisy.verdict is ABVerdict.AMBIGUOUS, noisy.note


def test_a_call_that_synchronises_inside_is_named_so_and_judged_on_its_gpu_time(
    tmp_path: Path,
) -> None:
    case = _case(_results(tmp_path, [m * 1.5 for m in BASE_MS], syncs_inside=True))
    assert case.judged_on == "gpu" and "synchronises inside" in case.note, case.note
    assert "host-bound, judged" not in case.note
    assert case.host_bound is False  # what bounds it is not the host: the report's line


def test_confirmation_runs_pool_their_process_pairs(tmp_path: Path) -> None:
    run = load_results(_results(tmp_path, [m * 1.5 for m in BASE_MS]))
    head, base = run.rows[CASE], run.base_rows[CASE]
    case = hostprocs.judge(CASE, [(run, head, base)] * 2, 0.25, "", HOST_POLICY)
    assert case is not None and "over 12 process pairs" in case.note and len(case.run_ratios) == 2


def test_workers_alternate_and_bad_per_process_medians_are_refused(tmp_path: Path) -> None:
    assert orders(4) == [("head", "base"), ("base", "head"), ("base", "head"), ("head", "base")]
    with pytest.raises(InputError, match="host_procs_s"):
        load_results(_results(tmp_path, [0.2, -1.0, 0.2, 0.2, 0.2, 0.2]))


def test_an_aa_noise_file_takes_its_host_noise_from_the_process_pairs(tmp_path: Path) -> None:
    """Two processes: a run's `#host` A/A ratio is its process pairs' (geometric mean), not its
    rounds' host times, which do not pair across processes."""
    factors = (1.03, 0.98, 1.01)
    runs = [
        load_results(_results(tmp_path / f"aa{f}", _scaled(*[f] * 6), aa=True)) for f in factors
    ]
    noise = build_noise(runs, tmp_path / "noise.json")
    assert noise.rows[host_key(CASE)].run_ratios == pytest.approx(factors)


def _blocks_results(tmp_path: Path, factor: float, blocks: bool = True) -> Path:
    """Six process pairs whose blocks (10 each, alternated) run at the machine's moment: 1 x or
    1.9 x, the same for a pair's two blocks of one moment but for one flip between them in every
    process pair, so each process's median lands on either pace; the head `factor` x the base."""
    path = _results(tmp_path, BASE_MS)
    data = json.loads(path.read_text())
    for param, scale in ((CASE, factor), (f"{CASE}@base", 1.0)):
        tg, per_proc = bench(data, param)["extra_info"]["tilegate"], []
        for i in range(6):
            slow = set(range(i % 3, i % 3 + 5))  # 5 of 10 blocks at the slow moment
            if param == CASE:  # the head's block of one moment fell on the other side of a flip
                slow ^= {(i % 3 + 5) if i % 2 else i % 3}
            jitter = [1 + 0.004 * ((3 * i + 7 * b + scale) % 5 - 2) for b in range(10)]
            per_proc.append(
                [0.2e-3 * scale * (1.9 if b in slow else 1) * jitter[b] for b in range(10)]
            )
        tg["host_procs_s"] = [float(np.median(b)) for b in per_proc]
        tg["host_blocks_s"] = per_proc if blocks else None
    return write(path, data)


def test_a_pair_is_its_blocks_median_ratio_so_a_moment_of_the_machine_is_not_a_verdict(
    tmp_path: Path,
) -> None:
    """Round 19 on the H100: Liger's worker medians were 65 us or 105 us whatever the side; a
    shared 2-core VM's Python pace flips 2 x for 50-300 ms. The blocks' paired ratios see past it."""
    aa = _case(_blocks_results(tmp_path / "aa", 1.0))
    assert aa.verdict is ABVerdict.SAME and aa.ci is not None, aa.note
    assert aa.ci[0] > 0.98 and aa.ci[1] < 1.02, aa.ci
    # the same processes judged on their medians alone (a file without blocks): undecided
    medians = _case(_blocks_results(tmp_path / "medians", 1.0, blocks=False))
    assert medians.verdict is ABVerdict.AMBIGUOUS, medians.note
    slower = _case(_blocks_results(tmp_path / "slower", 1.4))  # beyond the 25 % ceiling
    assert slower.verdict is ABVerdict.SLOWER and slower.ci is not None, slower.note
    assert slower.ci[0] > 1.37 and slower.ci[1] < 1.43, slower.ci
    short = _blocks_results(tmp_path / "short", 1.0)  # blocks that do not pair: the medians judge
    data = json.loads(short.read_text())
    del bench(data, CASE)["extra_info"]["tilegate"]["host_blocks_s"][0][-1]
    assert _case(write(short, data)).verdict is ABVerdict.AMBIGUOUS
    bare = _blocks_results(tmp_path / "bare", 1.4)  # blocks without the medians derived from them
    data = json.loads(bare.read_text())
    for param in (CASE, f"{CASE}@base"):
        del bench(data, param)["extra_info"]["tilegate"]["host_procs_s"]
    judged = _case(write(bare, data))
    assert (judged.verdict, judged.ci, judged.note) == (slower.verdict, slower.ci, slower.note)
    bad = _blocks_results(tmp_path / "bad", 1.0)
    data = json.loads(bad.read_text())
    bench(data, CASE)["extra_info"]["tilegate"]["host_blocks_s"][2][0] = -1.0
    with pytest.raises(InputError, match="host_blocks_s"):
        load_results(write(bad, data))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="pinning is Linux's")
def test_a_pinned_worker_runs_every_thread_it_has_on_the_timing_cpu() -> None:
    """A worker is pinned after its setup started threads (the CUDA driver's, torch's): each of
    them moves to the timing CPU, not only the thread that asks."""
    import os
    import threading

    from tilegate.harness.hostworkers import HostCalls, pin_cpu

    cpu, before = pin_cpu(), os.sched_getaffinity(0)
    release = threading.Event()
    started = threading.Thread(target=release.wait)
    started.start()
    try:
        HostCalls.pin(None, cpu)  # type: ignore[arg-type]  # it reads nothing of the worker
        assert started.native_id is not None and cpu is not None
        assert os.sched_getaffinity(started.native_id) == {cpu} == os.sched_getaffinity(0)
    finally:
        for task in Path("/proc/self/task").iterdir():
            os.sched_setaffinity(int(task.name), before)
        release.set()
        started.join()
