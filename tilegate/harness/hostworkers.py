"""Host time across processes: the host-bound pairs of a two-process A/B timed in fresh workers.

Two processes' host times do not pair (one's Python runs 20-80 % slower than another's), so
after the paired rounds `measure` times `Profile.host_procs` fresh workers a side, one at a time,
AB BA BA AB: worker i of each side is a pair; the first of each side also profiles the call.
Every worker runs on one CPU, the same for all (`pin_cpu`): a process's Python pace moves with
the core it lands on, and the pairs should differ only by their code.
The verdict: tilegate.judge.hostprocs (docs/measuring.md).
"""

from __future__ import annotations

import cProfile
import math
import os
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tilegate.harness.measure import group_seed
from tilegate.harness.sides import local, portable
from tilegate.judge.hostprocs import MIN_PAIRS

HOST_CALLS_S = 0.2  # each worker times each call for about this long ...
MIN_CALLS, MAX_CALLS = 7, 500  # ... in this many calls
PROFILE_CALLS = 20  # calls profiled in each side's first worker
PROFILE_TOP = 25  # functions kept, by cumulative time per call
SYNC_PROBE_MIN_S = 0.002  # the busy-wait queued ahead of a call: at least this, 4 x its host time


def orders(procs: int) -> list[tuple[str, str]]:
    """Which side's worker of pair i times first: AB BA BA AB (a trend falls on both alike)."""
    return [("head", "base") if i % 4 in (0, 3) else ("base", "head") for i in range(procs)]


def pin_cpu() -> int | None:
    """The CPU that every host worker runs on: the highest this process may use (CPU 0 takes
    most interrupts); None where the OS has no CPU affinity (macOS)."""
    allowed = getattr(os, "sched_getaffinity", None)
    return max(allowed(0)) if allowed is not None else None


def measure(measurer: Any, prepared: Sequence[Any], procs: int) -> None:
    """Time the host-bound pairs in `procs` fresh workers per side (a failing one: SideFailure)."""
    todo: dict[str, dict[str, list[Any]]] = {"head": {}, "base": {}}
    rows: dict[tuple[str, str], Any] = {}
    for prep in prepared:
        for head, base in prep.pairs.items():
            pair = [prep.results[s] for s in (head, base)]
            if measurer.device == "cuda" and not any(r.extra.get("host_bound") for r in pair):
                continue  # under the interpreter every call is host
            for res in pair:
                todo[prep.fns[res.case.slot]].setdefault(prep.group, []).append(res.case)
                rows[(prep.group, res.case.slot)] = res
    if procs < MIN_PAIRS or len(measurer.sides) < 2 or not todo["head"]:  # no verdict below
        return
    t0, cpu = time.perf_counter(), pin_cpu()
    groups = {
        side: [(g, [portable(c) for c in cs], group_seed(g)) for g, cs in by.items()]
        for side, by in todo.items()
    }
    logs = measurer.sides["head"].log_path.parent / "host"
    plan = [(i, side) for i, order in enumerate(orders(procs)) for side in order]
    with ThreadPoolExecutor(len(plan)) as pool:  # side by side; all up before one is timed
        started = [pool.submit(measurer.sides[s].fresh, logs / f"{s}-{i}") for i, s in plan]
    try:
        for (i, side), worker in zip(plan, [f.result() for f in started], strict=True):
            answer = worker.request("host", groups=groups[side], first=i == 0, cpu=cpu)
            worker.close()
            for (group, slot), facts in answer.items():
                extra = rows[(group, slot)].extra
                extra.setdefault("host_procs_s", []).append(facts.pop("median_s"))
                extra.update(facts)  # the first worker's profile and syncs_inside
    finally:
        for f in started:
            if f.exception() is None:
                f.result().kill()
    seconds = round(time.perf_counter() - t0, 2)
    measurer.host_timing = {"per_side": procs, "seconds": seconds, "cpu": cpu}
    measurer.on_progress(
        f"host time of {len(rows) // 2} host-bound pair(s) in {procs} processes per side"
        f"{'' if cpu is None else f' on CPU {cpu}'}: {seconds:.1f} s"
    )


# --- in the worker ---------------------------------------------------------------------------


def time_host(
    measurer: Any, groups: list[Any], root: Path, *, first: bool, cpu: int | None
) -> dict[tuple[str, str], Any]:
    """A worker's host times, on CPU `cpu` where one is given: {(group, slot): {"median_s",
    first: "host_profile", ...}}."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})  # type: ignore[attr-defined,unused-ignore]
    out: dict[tuple[str, str], Any] = {}
    for group, wired, seed in groups:
        cases = [local(c) for c in wired]
        params = cases[0].params
        inputs = measurer.benchmark.inputs(params, measurer.device, seed)
        for case in cases:
            variant = measurer.runnable(case.slot, case.variant, params)[0]
            if variant is not None:
                call = variant.make(params, inputs)
                out[(group, case.slot)] = _host_of(measurer, call, root, first=first)
        del inputs
    return out


def _host_of(measurer: Any, call: Callable[[], Any], root: Path, *, first: bool) -> dict[str, Any]:
    timer, gpu = measurer.timer, measurer.device == "cuda"
    # a fresh process compiles, tunes, allocates in its first calls: the last sets the pace
    pace = timer.host_times({"c": call}, 3)["c"][-1]
    calls = min(MAX_CALLS, max(MIN_CALLS, math.ceil(HOST_CALLS_S / max(pace, 1e-9))))
    host = statistics.median(timer.host_times({"c": call}, calls)["c"])
    got: dict[str, Any] = {"median_s": host}
    if first:
        sync = measurer.torch.cuda.synchronize if gpu else None
        got["host_profile"] = _profile(call, min(calls, PROFILE_CALLS), root, sync)
    if first and gpu:
        got["syncs_inside"] = _waits_inside(measurer.torch, call, host)
    return got


def _waits_inside(torch: Any, call: Callable[[], Any], host_s: float) -> bool:
    """Whether the call waits on the GPU inside (a busy-wait queued ahead lengthens it)."""
    from tilegate.harness.timing import HOLD_CLOCK_HZ

    sleep = max(SYNC_PROBE_MIN_S, 4 * host_s)
    took = []
    for _ in range(3):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(sleep * HOLD_CLOCK_HZ))
        t0 = time.perf_counter()
        call()
        took.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(took) - host_s > sleep / 2


def _profile(
    call: Callable[[], Any], calls: int, root: Path, sync: Callable[[], Any] | None
) -> list[Any]:
    """The top PROFILE_TOP functions of `calls` calls by cumulative seconds per call, named by
    its file (relative to the side's tree, or to site-packages) and name: [[name, seconds]]."""
    prof = cProfile.Profile()
    for _ in range(calls):
        prof.enable()
        call()
        prof.disable()
        if sync is not None:
            sync()
    per_fn: dict[str, float] = {}
    for (path, _, name), (_, _, _, cum, _) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        if "_lsprof.Profiler" not in name:
            key = name if path == "~" else f"{_short(Path(path), root)}:{name}"
            per_fn[key] = max(per_fn.get(key, 0.0), cum / calls)
    top = sorted(per_fn.items(), key=lambda kv: -kv[1])[:PROFILE_TOP]
    return [[k, v] for k, v in top]


def _short(path: Path, root: Path) -> str:
    """A file as both sides name it: relative to the side's tree, else after site-packages."""
    path, root = path.resolve(), root.resolve()
    if path.is_relative_to(root):
        return str(path.relative_to(root))
    parts = path.parts
    cut = max((i for i, p in enumerate(parts) if p.endswith("-packages")), default=len(parts) - 3)
    return "/".join(parts[cut + 1 :])
