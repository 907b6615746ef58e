"""Host time across processes: the host-bound pairs of a two-process A/B timed in fresh workers.

After the paired rounds `measure` times `Profile.host_procs` fresh workers a side, worker i of
each side a pair, whose two workers time each call in BLOCKS blocks alternated AB BA BA AB: a
machine's pace moves for a while at a time, and both sides' blocks of one moment share it. The
first pair profiles the calls. The workers make their calls side by side, then each pair is
pinned to one CPU (`pin_cpu`) for its turn, so only the timing is serial. Why and the verdict
(tilegate.judge.hostprocs): docs/measuring.md.
"""

from __future__ import annotations

import contextlib
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

BLOCKS, BLOCK_S = 10, 0.02  # each worker times each call in this many blocks of about this long
MIN_CALLS, MAX_CALLS = 1, 50  # ... each of this many calls (a slow interpreted call: 10 a side)
PROFILE_CALLS = 20  # calls profiled in the first pair's workers
PROFILE_TOP = 25  # functions kept, by cumulative time per call
SYNC_PROBE_MIN_S = 0.002  # the busy-wait queued ahead of a call: at least this, 4 x its host time
SIDES = ("head", "base")


def orders(blocks: int) -> list[tuple[str, str]]:
    """Which side's block i times first: AB BA BA AB (a trend falls on both alike)."""
    return [SIDES if i % 4 in (0, 3) else SIDES[::-1] for i in range(blocks)]


def pin_cpu() -> int | None:
    """The CPU that every host worker runs on: the highest this process may use (CPU 0 takes
    most interrupts); None where the OS has no CPU affinity (macOS)."""
    allowed = getattr(os, "sched_getaffinity", None)
    return max(allowed(0)) if allowed is not None else None


def measure(measurer: Any, prepared: Sequence[Any], procs: int) -> None:
    """Time the host-bound pairs in `procs` fresh workers per side (a failing one: SideFailure)."""
    todo: dict[str, dict[str, list[Any]]] = {s: {} for s in SIDES}
    couples, rows = [], {}
    for prep in prepared:
        for pair in prep.pairs.items():
            got = [prep.results[s] for s in pair]
            if measurer.device == "cuda" and not any(r.extra.get("host_bound") for r in got):
                continue  # under the interpreter every call is host
            couples.append({prep.fns[s]: (prep.group, s) for s in pair})
            for res in got:
                todo[prep.fns[res.case.slot]].setdefault(prep.group, []).append(res.case)
                rows[(prep.group, res.case.slot)] = res
    if procs < MIN_PAIRS or len(measurer.sides) < 2 or not couples:  # no verdict below
        return
    t0, cpu = time.perf_counter(), pin_cpu()
    groups = {
        side: [(g, [portable(c) for c in cs], group_seed(g)) for g, cs in by.items()]
        for side, by in todo.items()
    }
    logs = measurer.sides["head"].log_path.parent / "host"
    plan = [(i, side) for i in range(procs) for side in SIDES]
    with ThreadPoolExecutor(len(plan)) as pool:  # side by side; all up before one is timed
        started = [pool.submit(measurer.sides[s].fresh, logs / f"{s}-{i}") for i, s in plan]
        made = [pool.submit(_set_up, f, groups[s]) for f, (_, s) in zip(started, plan, strict=True)]
    try:
        workers = [f.result() for f in made]
        for i in range(procs):
            pair = dict(zip(SIDES, workers[2 * i : 2 * i + 2], strict=True))
            for worker in pair.values():
                worker.request("host", "pin", cpu)
            for couple in couples:
                _time_couple(pair, couple, rows)
            for worker in pair.values():
                for key, facts in (worker.request("host", "facts") if i == 0 else {}).items():
                    rows[key].extra.update(facts)  # the first pair's profiles and syncs_inside
                worker.close()
    finally:
        for f in started:
            if f.exception() is None:
                f.result().kill()
    seconds = round(time.perf_counter() - t0, 2)
    measurer.host_timing = {"per_side": procs, "seconds": seconds, "cpu": cpu, "blocks": BLOCKS}
    measurer.on_progress(
        f"host time of {len(couples)} host-bound pair(s) in {procs} processes per side"
        f"{'' if cpu is None else f' on CPU {cpu}'}: {seconds:.1f} s"
    )


def _set_up(started: Any, groups: list[Any]) -> Any:
    """A worker's calls made (inputs, compiles) beside the others', before any pair is timed."""
    worker = started.result()
    worker.request("host", "setup", groups)
    return worker


def _time_couple(pair: dict[str, Any], couple: dict[str, Any], rows: dict[Any, Any]) -> None:
    """One case pair in one pair of workers: BLOCKS blocks a side, alternated, as many calls in
    each side's block (from the slower side's pace): `host_blocks_s` and their median."""
    paces = [pair[s].request("host", "pace", couple[s]) for s in SIDES]
    if None in paces:  # a side that cannot run it here: no pair, so no verdict
        return
    calls = min(MAX_CALLS, max(MIN_CALLS, math.ceil(BLOCK_S / max(*paces, 1e-9))))
    blocks: dict[str, list[float]] = {s: [] for s in SIDES}
    for order in orders(BLOCKS):
        for side in order:
            blocks[side].append(pair[side].request("host", "block", couple[side], calls))
    for side in SIDES:
        extra = rows[couple[side]].extra
        extra.setdefault("host_blocks_s", []).append(blocks[side])
        extra.setdefault("host_procs_s", []).append(statistics.median(blocks[side]))


# --- in the worker ---------------------------------------------------------------------------


class HostCalls:
    """A worker's host-bound calls: made (`setup`), `pin`ned, warmed (`pace`), timed (`block`)."""

    def __init__(self, measurer: Any, root: Path, groups: list[Any]) -> None:
        self.measurer, self.root = measurer, root
        self.calls: dict[tuple[str, str], Callable[[], Any]] = {}
        self.inputs: list[Any] = []  # each group's, alive while its calls are timed
        self.last: dict[tuple[str, str], float] = {}  # each call's last block's host seconds
        for group, wired, seed in groups:
            cases = [local(c) for c in wired]
            params = cases[0].params
            self.inputs.append(measurer.benchmark.inputs(params, measurer.device, seed))
            for case in cases:
                variant = measurer.runnable(case.slot, case.variant, params)[0]
                if variant is not None:
                    self.calls[(group, case.slot)] = variant.make(params, self.inputs[-1])

    def pin(self, cpu: int | None) -> None:
        """From here on, this worker runs on `cpu` only (its pair's turn to be timed): every thread
        of it, those its setup started too (the CUDA driver's, torch's), and those started later."""
        if cpu is None:
            return
        for task in Path("/proc/self/task").iterdir():  # Linux's (pin_cpu: None elsewhere)
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(task.name), {cpu})  # type: ignore[attr-defined,unused-ignore]

    def pace(self, key: tuple[str, str]) -> float | None:
        """A fresh process compiles, tunes, allocates in a call's first calls: the last sets it."""
        call = self.calls.get(key)
        return None if call is None else self.measurer.timer.host_times({"c": call}, 3)["c"][-1]

    def block(self, key: tuple[str, str], calls: int) -> float:
        """The median host seconds of `calls` calls, nothing queued ahead of each."""
        got = self.measurer.timer.host_times({"c": self.calls[key]}, calls)["c"]
        self.last[key] = statistics.median(got)
        return self.last[key]

    def facts(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Each timed call's profile and, on a GPU, whether it waits on the GPU inside."""
        torch, gpu = self.measurer.torch, self.measurer.device == "cuda"
        sync = torch.cuda.synchronize if gpu else None
        return {
            key: {"host_profile": _profile(self.calls[key], PROFILE_CALLS, self.root, sync)}
            | ({"syncs_inside": _waits_inside(torch, self.calls[key], host)} if gpu else {})
            for key, host in self.last.items()
        }


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
