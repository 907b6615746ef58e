"""The timer: device time per call, interleaved rounds, an explicit L2 policy.

GPU work is asynchronous, so a host clock around a launch measures the launch queue: each call
is bracketed by CUDA events (read after the last round), the L2 flushed before every timed call
by default, and a group's variants take turns every round, so drift falls on all alike. A
host-bound call is held: a busy-wait queued before each sample, so the whole call is queued
before the GPU reaches its start event (docs/measuring.md, "Host-bound calls").
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

L2_FLUSH_MIN_BYTES = 256 * 2**20
Calls = Mapping[str, Callable[[], Any]]  # slot name -> its call
Pairs = Mapping[str, str] | None  # an A/B's head slot -> its base slot
Samples = dict[str, list[float]]  # slot name -> seconds, one per round


@dataclass(frozen=True)
class TimerConfig:
    """How long to time a group: at least `rounds` rounds and at least `min_time_s` of them.
    A power-capped GPU's calls jitter by several percent (clock changes over tens of ms): a median
    over 40 calls of 0.2 ms (8 ms of GPU time) still moves 2-3 % between processes; a fixed time
    puts hundreds of rounds into the fast groups and keeps every median to about 1 %."""

    rounds: int = 40  # the minimum number of rounds
    min_time_s: float = 0.0  # ... and the minimum time of the timed rounds of a group
    max_rounds: int = 2000
    warmup_s: float = 0.3  # interleaved warm-up before the timed rounds of a group
    l2_flush: bool = True
    hold_host: bool = False  # the GPU waits until each sample's call is queued (module doc)
    hold_host_bound: bool = True  # ... for the host-bound calls only (found in the warm-up)

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds}")
        if self.max_rounds < self.rounds:
            raise ValueError(f"max_rounds ({self.max_rounds}) must be >= rounds ({self.rounds})")
        if self.warmup_s < 0 or self.min_time_s < 0:
            raise ValueError(
                f"warmup_s and min_time_s must be >= 0, got {self.warmup_s}, {self.min_time_s}"
            )

    def rounds_for(self, seconds_per_round: float) -> int:
        """Rounds that fill `min_time_s` at the measured pace, within [rounds, max_rounds]."""
        if seconds_per_round <= 0 or self.min_time_s <= 0:
            return self.rounds
        return max(
            self.rounds, min(self.max_rounds, math.ceil(self.min_time_s / seconds_per_round))
        )


def round_order(names: list[str], r: int, pairs: Mapping[str, str] | None = None) -> list[str]:
    """The order of round `r`: rotated every round so no variant always runs first (or right
    after another). A pair (a variant and its base version) moves as one unit, back to back;
    which of the two goes first swaps once every rotation, so each side of a pair runs after
    every other unit as often as its partner. (Swapping every other round tied the swap to the
    rotation: fla on the H200, the held head's host time above its base's in 9 of 10 A/A rows,
    +0 to +34 %, docs/results-h200.md round 15.)"""
    units: list[tuple[str, ...]] = []
    placed: set[str] = set()
    for name in names:
        if name in placed:
            continue
        partner = (pairs or {}).get(name)
        unit = (name, partner) if partner in names and partner not in placed else (name,)
        units.append(unit)
        placed.update(unit)
    if not units:
        return []
    shift = r % len(units)
    rotated = units[shift:] + units[:shift]
    swap = (r // len(units)) % 2
    return [n for unit in rotated for n in (unit[::-1] if swap else unit)]


HOLD_CLOCK_HZ = 2.0e9  # cycles per second assumed for the hold (at a lower clock it lasts longer)
HOLD_MAX_S = 0.01
HOLD_MIN_S = 20e-6
# a call whose host enqueue time in the warm-up is at least this share of its event time is held:
# timed back to back, a host-bound call's events follow its host time (ratio ~1), a GPU-bound
# call's host returns long before its kernels end (the matmul's: < 0.1)
HOST_BOUND_RATIO = 0.8
HOST_PROBE_ROUNDS = 5  # calls per callable timed with nothing queued ahead (_probe_host)


class CudaTimer:
    """Times callables on the current CUDA device with event pairs."""

    def __init__(self, config: TimerConfig, l2_bytes: int = 0) -> None:
        import torch

        self.config = config
        self.name = "cuda-event+hold" if config.hold_host else "cuda-event"
        self._torch = torch
        self._enqueue_s: dict[str, list[float]] = {}  # host seconds to queue each call
        self._event_s: dict[str, float] = {}  # warm-up: median event seconds of each call
        # by callable (slot names recur in every group; a group's callables live for the run):
        # the held calls, those whose holding is decided (once, at their first warm-up, so a
        # call is held in every round or in none), their host seconds with nothing queued ahead
        self._held: set[int] = set()
        self._decided: set[int] = set()
        self._host_s: dict[int, float] = {}
        # after each time(), by slot name: each held sample's host seconds, and the probe's
        self.host_samples: dict[str, list[float]] = {}
        self.host_probe_s: dict[str, float] = {}
        self._flush_buf = None
        if config.l2_flush:
            nbytes = max(L2_FLUSH_MIN_BYTES, 4 * l2_bytes)
            self._flush_buf = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda")

    def _flush(self) -> None:
        if self._flush_buf is not None:
            self._flush_buf.zero_()

    def warm(self, fns: Calls, seconds: float, pairs: Pairs = None) -> float:
        """Run the callables in turn for about `seconds` (at least 3 rounds); return seconds per round."""
        torch = self._torch
        names = list(fns)
        events: dict[str, list[tuple[Any, Any]]] = {}
        rounds = 0
        start = time.perf_counter()
        paced_from = start
        while rounds < 3 or time.perf_counter() - start < seconds:
            if rounds == 1:  # the first round may compile or allocate: pace the others
                torch.cuda.synchronize()
                paced_from = time.perf_counter()
            for name in round_order(names, rounds, pairs):
                self._flush()
                if rounds:
                    begin = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    begin.record()
                fns[name]()
                if rounds:
                    end.record()
                    events.setdefault(name, []).append((begin, end))
            rounds += 1
        torch.cuda.synchronize()
        for name, got in events.items():
            self._event_s[name] = statistics.median(b.elapsed_time(e) / 1e3 for b, e in got)
        paced = (time.perf_counter() - paced_from) / (rounds - 1)
        # this group's only: slot names ("liger", "torch") recur in every group
        self._enqueue_s = self._probe(fns, pairs)
        self._find_host_bound(fns, pairs)
        return paced

    def _probe(self, fns: Calls, pairs: Pairs) -> Samples:
        """`_probe_host` of these calls, each call's median kept by callable."""
        got = self._probe_host(fns, pairs)
        self._host_s.update({id(fns[n]): statistics.median(xs) for n, xs in got.items() if xs})
        return got

    def _probe_host(self, fns: Calls, pairs: Pairs, rounds: int = HOST_PROBE_ROUNDS) -> Samples:
        """Each call's host seconds with nothing queued ahead (the GPU waited for before each):
        back to back, a GPU-bound call's host time would read as its GPU time."""
        torch = self._torch
        got: dict[str, list[float]] = {n: [] for n in fns}
        for r in range(rounds):
            for name in round_order(list(fns), r, pairs):
                self._flush()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                fns[name]()
                got[name].append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        return got

    def _find_host_bound(self, fns: Calls, pairs: Pairs) -> None:
        """Hold the calls host-bound in their first warm-up, each with its A/B partner (both
        sides of a pair are timed alike); a call decided before keeps its decision."""
        if not self.config.hold_host_bound or self.config.hold_host:
            return
        new = {n for n in fns if id(fns[n]) not in self._decided}  # decided once (__init__)
        self._decided |= {id(fns[n]) for n in new}
        found = set()
        for name in new:
            host, gpu = self._enqueue_s.get(name), self._event_s.get(name)
            if host and gpu and statistics.median(host) >= HOST_BOUND_RATIO * gpu:
                found.add(name)
        for pair in (pairs or {}).items():
            late = set(pair) & new
            if not late or not set(pair) <= set(fns):
                continue
            if late == set(pair):  # decided together: both held if either is host-bound
                if late & found:
                    found |= late
            else:  # one decided before: the other follows it
                (old,) = set(pair) - late
                found = (found | late) if id(fns[old]) in self._held else (found - late)
        self._held |= {id(fns[n]) for n in found if n in fns}

    def host_times(self, fns: Calls, rounds: int) -> Samples:
        """`rounds` host times per call, nothing queued ahead (tilegate.harness.hostworkers)."""
        return self._probe_host(fns, None, rounds)

    def is_held(self, fn: Any) -> bool:
        """Whether this call's samples are held (all with `hold_host`, else if host-bound)."""
        return self.config.hold_host or id(fn) in self._held

    def hold(self, fn: Any) -> None:
        """Hold this call's samples from now on (its partner in another process is host-bound)."""
        self._held.add(id(fn))

    def time(
        self, fns: Calls, rounds: int = 0, pairs: Pairs = None, *, first_round: int = 0
    ) -> Samples:
        """Seconds per call, one sample per round, interleaved from round `first_round` on."""
        torch = self._torch
        names = list(fns)
        unprobed = {n: f for n, f in fns.items() if id(f) not in self._host_s}
        if unprobed:  # timed without a warm-up of their own (a soak paced the first sweep)
            self._probe(unprobed, pairs)
            # not held now, so never: a later warm-up would hold only some of their rounds
            self._decided |= {id(f) for f in unprobed.values()}
        self.host_probe_s = {n: self._host_s[id(f)] for n, f in fns.items()}
        events: dict[str, list[tuple[Any, Any]]] = {n: [] for n in names}
        host: dict[str, list[float]] = {n: [] for n in names}
        hold = self.hold_cycles(names) if self.config.hold_host else 0
        holds = {
            n: hold or (self._held_cycles(n, pairs) if self.is_held(fns[n]) else 0) for n in names
        }
        for r in range(first_round, first_round + (rounds or self.config.rounds)):
            for name in round_order(names, r, pairs):
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                if holds[name]:
                    # nothing queued ahead: the host time of the call is its own (module doc)
                    torch.cuda.synchronize()
                    torch.cuda._sleep(holds[name])
                self._flush()
                begin.record()
                t0 = time.perf_counter()
                fns[name]()
                host[name].append(time.perf_counter() - t0)
                end.record()
                events[name].append((begin, end))
        torch.cuda.synchronize()
        # the held calls' only: another call's launches can wait on a full queue (module doc)
        self.host_samples = {n: xs for n, xs in host.items() if holds[n]}
        return {n: [b.elapsed_time(e) / 1e3 for b, e in pairs] for n, pairs in events.items()}

    def once(self, fn: Callable[[], Any]) -> float:
        """One call, flushed, timed and waited for: the first after another side had the GPU."""
        torch = self._torch
        hold = self.hold_cycles(list(self._enqueue_s)) if self.config.hold_host else 0
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if hold:
            torch.cuda._sleep(hold)
        self._flush()
        begin.record()
        fn()
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end) / 1e3)

    def hold_seconds(self, names: list[str]) -> float:
        """Twice the longest median host enqueue time of these calls (warm-up), clamped."""
        seen = [statistics.median(self._enqueue_s[n]) for n in names if self._enqueue_s.get(n)]
        need = 2 * max(seen) if seen else HOLD_MAX_S
        return min(HOLD_MAX_S, max(HOLD_MIN_S, need))

    def hold_cycles(self, names: list[str]) -> int:
        return int(self.hold_seconds(names) * HOLD_CLOCK_HZ)

    def _held_cycles(self, name: str, pairs: Pairs) -> int:
        """A held call's hold: twice the longer host time of it and its A/B partner."""
        partner = {**(pairs or {}), **{b: h for h, b in (pairs or {}).items()}}.get(name)
        return self.hold_cycles([n for n in (name, partner) if n])


class HostTimer:
    """Smoke mode only: a host clock around synchronous CPU (interpreter) calls. Measures nothing real."""

    name = "perf-counter"

    def __init__(self, config: TimerConfig) -> None:
        self.config = config
        # no host time apart from the samples: they are host times (the interpreter is the host)
        self.host_samples: dict[str, list[float]] = {}

    def is_held(self, fn: Any) -> bool:
        return False

    def hold(self, fn: Any) -> None:
        """Nothing to hold: the interpreter's calls are synchronous."""

    def warm(self, fns: Calls, seconds: float, pairs: Pairs = None) -> float:
        """One round, whose time is the pace; none for a re-warm (`seconds` 0): the interpreter
        has no clocks to bring up (a smoke case runs 7 times instead of 8)."""
        if seconds <= 0:
            return 0.0
        t0 = time.perf_counter()
        for fn in fns.values():
            fn()
        return time.perf_counter() - t0

    def time(
        self, fns: Calls, rounds: int = 0, pairs: Pairs = None, *, first_round: int = 0
    ) -> Samples:
        names = list(fns)
        out: dict[str, list[float]] = {n: [] for n in names}
        for r in range(first_round, first_round + (rounds or self.config.rounds)):
            for name in round_order(names, r, pairs):
                t0 = time.perf_counter()
                fns[name]()
                out[name].append(time.perf_counter() - t0)
        return out

    def host_times(self, fns: Calls, rounds: int) -> Samples:
        """The interpreter's calls are synchronous: their time is their host time."""
        return self.time(fns, rounds)

    @staticmethod
    def once(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


def event_time(fn: Callable[[], Any], reps: int = 5) -> float:
    """Median device seconds of `fn` over `reps` calls: to calibrate a test-only slowdown
    (tilegate.harness.inject), not to measure (no L2 flush, no interleaving)."""
    import torch

    times = []
    for _ in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end) / 1e3)
    return statistics.median(times)


def host_info(
    host_s: list[float] | None, gpu_s: list[float], held: bool, probe_s: float | None = None
) -> dict[str, Any]:
    """A results row's host time (extra_info.tilegate): `host_s` (median seconds per call),
    `host_samples_s` (a held call's, one per round), `host_bound` (host time >= GPU time),
    `held`. A call not held has its host time with nothing queued ahead (`probe_s`) and no host
    samples (its rounds' clock reads the queue); nothing without a host time of its own."""
    if not gpu_s:
        return {}
    gpu = statistics.median(gpu_s)
    if held and host_s and len(host_s) == len(gpu_s):
        host = statistics.median(host_s)
        return {
            "host_s": host,
            "host_samples_s": list(host_s),
            "host_bound": host >= gpu,
            "held": held,
        }
    if probe_s is None:
        return {}
    return {"host_s": probe_s, "host_bound": probe_s >= gpu, "held": held}
