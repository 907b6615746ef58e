"""Measure the groups of a run: same inputs per group, correctness first, then interleaved timing.

A group is every variant at one grid point. Only variants that passed their check are timed,
together, round by round, so their ratios are paired; what touches the code is a side's
(tilegate.harness.sides). In an A/B run every round times both sides back to back, in a
balanced random order, and a tuner flip is re-timed with both sides on the base's pick.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from textwrap import shorten
from typing import Any

from tilegate.cases import BASE_SUFFIX, Case
from tilegate.fingerprint.record import spent_s as explain_spent_s
from tilegate.harness.budget import GroupBudget, Tolerances, aligned
from tilegate.harness.identity import Identity
from tilegate.harness.sides import CaseResult, SideFailure, SideMeasurer
from tilegate.harness.timing import Samples, host_info
from tilegate.judge.autotune import retime_config
from tilegate.judge.stats import paired_ratio
from tilegate.warnlog import Warned, unique

# A side holds the GPU for at least this long before handing it to the other (whole rounds of
# its slots): a hand-over costs a synchronise and a message through a pipe, ~0.1 ms, and its
# first call is timed apart; short calls are timed several rounds to a hand-over.
HANDOVER_BLOCK_S = 0.01


def group_seed(group: str) -> int:
    return zlib.crc32(group.encode()) & 0x7FFFFFFF


def paired_rounds(
    rounds: int, block: int, sides: Sequence[str], rng: random.Random
) -> list[tuple[int, tuple[str, ...]]]:
    """The blocks of a sweep, `block` rounds each, each with the order its sides take the GPU
    in: as many start with one side as with the other (an odd one at random), shuffled."""
    if rounds < 1 or block < 1:
        return []
    n = math.ceil(rounds / block)
    ab, ba = tuple(sides), tuple(reversed(sides))
    orders = [ab, ba] * (n // 2) + ([rng.choice([ab, ba])] if n % 2 else [])
    rng.shuffle(orders)
    return [(min(block, rounds - i * block), order) for i, order in enumerate(orders)]


@dataclass
class _Prepared:
    """A group between its correctness checks and its last timed pass."""

    group: str
    results: dict[str, CaseResult]  # by slot: the variant, or "<variant>@base" in an A/B run
    fns: dict[str, str]  # the slots that are timed, each with the side that times it
    pairs: dict[str, str] = field(default_factory=dict)  # A/B: slot -> its base slot
    rounds_per_pass: int = 0
    rounds_done: int = 0  # the next round's number (its order)
    pace: dict[str, float] = field(default_factory=dict)  # per side: seconds per round (warm)
    samples: dict[str, list[float]] = field(default_factory=dict)
    pass_medians: dict[str, list[float]] = field(default_factory=dict)
    spans: list[tuple[float, float]] = field(default_factory=list)  # timed windows (perf_counter)
    seconds: float = 0.0
    # where the preparing went (inputs, compile, checks, identity): the progress line says it
    phases: dict[str, float] = field(default_factory=dict)
    budget: GroupBudget | None = None  # A/B: which slots each sweep times (tilegate.harness.budget)
    host: dict[str, list[float]] = field(default_factory=dict)  # host seconds per call, per round
    held: set[str] = field(default_factory=set)  # the slots timed held (host-bound: timing.py)
    host_probe: dict[str, float] = field(default_factory=dict)  # host s per call, queue empty
    # two processes: the base side's copy of the reference, timed whenever the head's reference
    # is and never reported, so both processes run the same calls (the reference's allocations
    # change a process's host time: Liger's cross_entropy 1.9 -> 19 ms per call on the H200)
    shadow: str | None = None
    handovers: list[tuple[str, float]] = field(default_factory=list)  # (slot, first call's s)
    # tuner flips: head slot -> the picks both sides are re-timed with (`_flips`), and per slot
    # the re-time's GPU samples and host seconds, round by round
    retime: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pinned: dict[str, list[float]] = field(default_factory=dict)
    pinned_host: dict[str, list[float]] = field(default_factory=dict)

    def identities(self) -> dict[str, tuple[Identity | None, Identity | None]]:
        """Each pair's head slot -> (its identity, its base's)."""
        got = self.results
        return {h: (got[h].identity, got[b].identity) for h, b in self.pairs.items()}


@dataclass(kw_only=True, eq=False)
class GroupMeasurer:
    """Measures every group of the run once, on the first request, and serves the results.

    All groups are prepared first; then each group's timed rounds are split over `passes` sweeps
    across all groups: the GPU's state drifts over seconds (power cap, temperature), shifting
    whole groups by +-0.5 % when each is timed in one go. `sides` (A/B: "head", "base") measure
    their cases' slots; without it one SideMeasurer here measures every slot of `registry`.
    """

    benchmark: Any
    registry: Mapping[str, Any]
    timer: Any
    device: str
    capability: tuple[int, int] | None
    groups: Mapping[str, list[Case]]
    passes: int = 1
    warmup_first_s: float = 2.0
    soak_s: float = 0.0
    sampler: Any = None
    on_group: Callable[[str, dict[str, CaseResult], float], None] | None = None
    on_progress: Callable[[str], None] = lambda line: None
    ab_budget: bool = True  # A/B: tilegate.harness.budget; False: --perf-ab-full
    ab_tolerances: Tolerances = field(default_factory=Tolerances)
    compile_threads: int = 0
    sides: Any = None  # {name: side}; None: one SideMeasurer here
    host_procs: int = 0  # two processes: tilegate.harness.hostworkers' workers a side

    def __post_init__(self) -> None:
        if self.passes < 1:
            raise ValueError(f"passes must be >= 1, got {self.passes}")
        if self.soak_s < 0:
            raise ValueError(f"soak_s must be >= 0, got {self.soak_s}")
        # the variant every row's ratio_to_reference is measured against (Variant.reference)
        self.reference = next(
            (name for name, v in self.registry.items() if getattr(v, "reference", False)), None
        )
        if self.sides is None:
            self.sides = {
                "head": SideMeasurer(
                    benchmark=self.benchmark,
                    registry=self.registry,
                    timer=self.timer,
                    device=self.device,
                    capability=self.capability,
                    compile_threads=self.compile_threads,
                )
            }
        self.sides = dict(self.sides)
        self._pace: dict[str, float] = {}  # seconds per round of each group, from the soak
        self._results: dict[str, CaseResult] = {}
        # a side's first call after a hand-over, as a fraction above the slot's median
        self.handover_offsets: list[float] = []
        self.blocks = {"head-first": 0, "base-first": 0}
        self.rounds_log: dict[str, list[tuple[float, str]]] = {}
        self._t0 = time.perf_counter()
        self.failure: str | None = None  # why a side's process failed (no results then)
        self.host_timing: dict[str, Any] | None = None  # what the host workers took

    def warnings_seen(self) -> list[dict[str, Any]]:
        """Every distinct Triton / torch warning of the run: how often, and the first case."""
        first: dict[Warned, str] = {}
        seen: list[Warned] = []
        for res in self._results.values():
            for w in res.warnings:
                first.setdefault(w, res.case.test_id)
            seen += res.warnings
        compiling: list[Warned] = []
        for side in self.sides.values():
            compiled, timed = side.warnings_seen()
            compiling += compiled
            seen += timed + compiled
        for w in seen:  # one not raised in a case's checks: the first while compiling or timing
            first.setdefault(w, "while compiling" if w in compiling else "while timing")
        return [{**w.to_json(), "count": n, "first_case": first[w]} for w, n in unique(seen)]

    def result(self, case: Case) -> CaseResult:
        if not self._results:
            try:
                self._measure_all()
            except SideFailure as err:  # a side's process died: nothing here can be judged
                import pytest

                self.failure = str(err)
                pytest.exit(f"tilegate: cannot judge: {err}", returncode=2)
        if case.test_id not in self._results:
            raise KeyError(f"case {case.test_id} is not in the groups this measurer was given")
        return self._results[case.test_id]

    def _prepare(self, group: str, group_cases: list[Case]) -> _Prepared:
        """Each side draws the group's inputs and checks its cases; the checked ones are timed."""
        t0 = time.perf_counter()
        prep = _Prepared(group, {}, {})
        by_side: dict[str, list[Case]] = {}
        for case in group_cases:  # a base case: the base's side, where there is one
            side = "base" if case.base and "base" in self.sides else "head"
            by_side.setdefault(side, []).append(case)
        ref = next((c for c in group_cases if c.variant == self.reference and not c.base), None)
        shadow = None
        if ref is not None and "base" in by_side and "base" in self.sides:
            shadow = replace(ref, base=True)
            by_side["base"].append(shadow)
        for name, cases in by_side.items():
            results, phases, timed = self.sides[name].prepare(group, cases, group_seed(group))
            if shadow is not None and name == "base":
                results.pop(shadow.slot, None)
                if shadow.slot in timed:
                    prep.shadow = shadow.slot
                    timed = [t for t in timed if t != shadow.slot]
            prep.results |= results
            prep.fns |= {slot: name for slot in timed}
            for k, v in phases.items():
                prep.phases[k] = prep.phases.get(k, 0.0) + v
        timed = prep.fns.keys()
        prep.pairs = {
            c.variant: c.slot for c in group_cases if c.base and {c.variant, c.slot} <= timed
        }
        self._explain_changed(prep)
        prep.retime = self._flips(prep)
        prep.seconds = time.perf_counter() - t0
        return prep

    @staticmethod
    def _flips(prep: _Prepared) -> dict[str, list[dict[str, Any]]]:
        """Tuner flips (same identity, other picks), each with the base's picks to re-time on."""
        out: dict[str, list[dict[str, Any]]] = {}
        for head, (h, b) in prep.identities().items():
            if h is None or b is None or not h.hash or not b.hash:
                continue
            if picks := retime_config(h.hash == b.hash, b.autotune, h.autotune):
                out[head] = [dict(p) for p in picks]
        return out

    def _explain_changed(self, prep: _Prepared) -> None:
        """The compile facts that explain a changed pair, from the side that ran each call."""
        want: dict[str, list[str]] = {}
        for head, (h, b) in prep.identities().items():
            if h is not None and b is not None and h.hash != b.hash:
                for slot in (head, prep.pairs[head]):
                    want.setdefault(prep.fns[slot], []).append(slot)
        for name, slots in want.items():
            for slot, facts in self.sides[name].explain(prep.group, slots).items():
                res = prep.results[slot]
                if res.identity is not None and facts is not None:
                    res.identity = replace(res.identity, explain=facts)

    def _measure_all(self) -> None:
        prepared = []
        for n, (group, cases) in enumerate(self.groups.items(), 1):
            prep = self._prepare(group, cases)
            prepared.append(prep)
            failures = [r.failure for r in prep.results.values() if r.failure is not None]
            self.on_progress(
                f"checked {n}/{len(self.groups)} {group}: {len(prep.fns)} to time"
                + (f", {len(failures)} FAILED" if failures else "")
                + f" ({prep.seconds:.1f} s: "
                + ", ".join(f"{k} {v:.1f}" for k, v in prep.phases.items())
                + ")"
                # the first reason now, not only in the report: a run cut short still says why
                + (f"; first: {shorten(failures[0], 300)}" if failures else "")
            )
        self._time(prepared)
        if len(self.sides) > 1 and self.host_procs:
            from tilegate.harness import hostworkers

            hostworkers.measure(self, prepared, self.host_procs)
        if len(self.sides) == 1:  # the side is this process (an A/B's sides log their own)
            self.on_progress(
                f"recording what explains each case took {explain_spent_s():.2f} s in this process"
            )

    def _time(self, prepared: list[_Prepared]) -> None:
        config = self.timer.config
        self._soak([p for p in prepared if p.fns])
        for p in range(self.passes):
            self.on_progress(f"timing pass {p + 1}/{self.passes} over {len(prepared)} groups")
            for i, prep in enumerate(prepared):
                t0 = time.perf_counter()
                if prep.fns:
                    if p == 0:
                        pace = self._pace.get(prep.group) or 0.0
                        if pace > 0:  # the soak just ran these kernels: 3 rounds re-warm them
                            self._warm(prep, list(prep.fns), 0.0)
                        else:
                            warm = self.warmup_first_s if i == 0 else config.warmup_s
                            pace = self._warm(prep, list(prep.fns), warm)
                        prep.rounds_per_pass = math.ceil(config.rounds_for(pace) / self.passes)
                        prep.budget = self._budget(prep)
                    self._sweep(prep, warm=p > 0)
                prep.seconds += time.perf_counter() - t0
                if p == self.passes - 1 and prep.budget is None:
                    self._finish(prep)
        # A/B: extension sweeps for the changed pairs the profile's rounds left undecided
        budgeted = [(prep, prep.budget) for prep in prepared if prep.budget is not None]
        for p in range(self.passes, max((b.looks_max for _, b in budgeted), default=0)):
            todo = [prep for prep, b in budgeted if b.active()]
            if not todo:
                break
            self.on_progress(
                f"timing extension sweep {p + 1 - self.passes}: {len(todo)} group(s) undecided"
            )
            for prep in todo:
                t0 = time.perf_counter()
                self._sweep(prep, warm=True)
                prep.seconds += time.perf_counter() - t0
        for prep, _ in budgeted:
            self._finish(prep)

    def _split(self, prep: _Prepared, names: Sequence[str]) -> dict[str, list[str]]:
        """`names` by the side that times them (the base's with the reference's shadow)."""
        out: dict[str, list[str]] = {}
        for side in self.sides:
            mine = [n for n in names if prep.fns.get(n) == side]
            if side == "base" and prep.shadow is not None and self.reference in names:
                mine.append(prep.shadow)
            if mine:
                out[side] = mine
        return out

    def _warm(self, prep: _Prepared, names: Sequence[str], seconds: float, **pin: Any) -> float:
        """Each side warms its slots (`seconds` shared out); seconds per round of all of them."""
        split = self._split(prep, names)
        found: set[str] = set()
        for side, mine in split.items():
            prep.pace[side], held = self.sides[side].warm(
                prep.group, mine, seconds / len(split), **pin
            )
            found |= {n.removesuffix(BASE_SUFFIX) for n in held if n != prep.shadow}
        if len(split) > 1:  # a host-bound call is held on both sides, or its ratio is no pair
            for side, mine in split.items():
                more = [n for n in mine if n.removesuffix(BASE_SUFFIX) in found]
                if set(more) - prep.held:
                    self.sides[side].hold(prep.group, more)
        prep.held |= {n for n in names if n.removesuffix(BASE_SUFFIX) in found}
        if prep.shadow is not None and self.reference in prep.held and len(split) > 1:
            self.sides["base"].hold(prep.group, [prep.shadow])
        return sum(prep.pace.get(side, 0.0) for side in split)

    def _timed(self, prep: _Prepared, names: Sequence[str], rounds: int, **pin: Any) -> Samples:
        """`rounds` rounds of `names`. Two sides: paired rounds, block by block (`paired_rounds`),
        a side's work finished before it hands the GPU over, its first call after a hand-over
        timed apart. `pinned=`: the calls' autotuners on these picks, host seconds kept apart."""
        split = self._split(prep, names)
        out: dict[str, list[float]] = {n: [] for n in names}
        first = prep.rounds_done
        prep.rounds_done += rounds
        host = prep.pinned_host if pin else prep.host
        if len(split) == 1:
            ((side, mine),) = split.items()
            pairs = {h: b for h, b in prep.pairs.items() if h in mine and b in mine}
            got = self.sides[side].time(
                prep.group, mine, rounds, first_round=first, pairs=pairs, **pin
            )
            self._took(prep, got, out, host)
            return out
        slowest = max(prep.pace.get(side) or 0.0 for side in split)
        block = max(1, math.floor(HANDOVER_BLOCK_S / slowest)) if slowest > 0 else 1
        rng = random.Random(group_seed(f"{prep.group}#{first}"))
        log = self.rounds_log.setdefault(prep.group, [])
        for k, order in paired_rounds(rounds, block, tuple(split), rng):
            log.append((round(time.perf_counter() - self._t0, 4), ",".join(order)))
            self.blocks[f"{order[0]}-first"] = self.blocks.get(f"{order[0]}-first", 0) + 1
            for side in order:
                got = self.sides[side].time(
                    prep.group, split[side], k, first_round=first, handover=True, **pin
                )
                self._took(prep, got, out, host)
                if got.handover is not None:
                    prep.handovers.append(got.handover)
            first += k
        return out

    @staticmethod
    def _took(
        prep: _Prepared, got: Any, out: dict[str, list[float]], host: dict[str, list[float]]
    ) -> None:
        """A side's answer: GPU samples into `out`, host seconds into `host` (not the shadow's)."""
        for n, xs in got.samples.items():
            if n != prep.shadow:
                out[n] += xs
        for n, xs in got.host.items():
            if n != prep.shadow:
                host.setdefault(n, []).extend(xs)  # beside the GPU samples, round by round
        if host is prep.host:  # not a re-time on one config (`_retime`): its probe is theirs
            prep.host_probe.update({n: s for n, s in got.host_probe.items() if n != prep.shadow})
        prep.held |= {n for n, held in got.held.items() if held and n != prep.shadow}

    def _sweep(self, prep: _Prepared, *, warm: bool) -> None:
        """Time one sweep of the group: every slot, or those its budget names."""
        names = prep.budget.active() if prep.budget is not None else list(prep.fns)
        if not names:
            return
        if warm:  # clocks are up: a short re-warm of this group's kernels only
            self._warm(prep, names, 0.0)
        t_begin = time.perf_counter()
        timed = self._timed(prep, names, prep.rounds_per_pass)
        prep.spans.append((t_begin, time.perf_counter()))
        for name, got in timed.items():
            prep.samples.setdefault(name, []).extend(got)
            if got:
                prep.pass_medians.setdefault(name, []).append(statistics.median(got))
        if prep.budget is not None:
            prep.budget.record(timed, prep.rounds_per_pass)

    def _budget(self, prep: _Prepared) -> GroupBudget | None:
        """The group's A/B plan, from the identities its correctness calls captured."""
        if not prep.pairs:
            return None
        unchanged = {
            head
            for head, (h, b) in prep.identities().items()
            if h is not None and b is not None and h.hash and h.hash == b.hash
        }
        return GroupBudget(
            list(prep.fns),
            pairs=prep.pairs,
            unchanged=unchanged,
            keys={head: prep.results[head].case.id for head in prep.pairs},
            reference=self.reference if self.reference in prep.fns else None,
            passes=self.passes,
            tolerances=self.ab_tolerances,
            enabled=self.ab_budget,
            keep_full=self._kept(prep.pairs, unchanged),
        )

    def _kept(self, pairs: Mapping[str, str], unchanged: set[str]) -> set[str]:
        """The heads an expectation pairs with a changed row of the group (both sides): that
        expectation judges the pull request, so both keep the profile's rounds."""
        changed = {h for h in pairs if h not in unchanged}
        kept: set[str] = set()
        for e in getattr(self.benchmark, "expectations", ()) or ():
            named = (getattr(e, "faster", None), getattr(e, "than", None))
            sides = {s for s in named if isinstance(s, str)}
            if sides & changed:
                kept |= sides & set(pairs)
        return kept

    def _soak(self, prepared: list[_Prepared]) -> None:
        """Run the groups' kernels in turn, untimed, for about `soak_s` seconds."""
        if self.soak_s <= 0 or not prepared:
            return
        self.on_progress(
            f"soaking the GPU for {self.soak_s:g} s with the run's kernels{self._now()}"
        )
        chunk = min(0.5, self.soak_s / len(prepared))
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.soak_s:
            for prep in prepared:
                # its pace at working temperature sizes the group's rounds (no warm-up after)
                self._pace[prep.group] = self._warm(prep, list(prep.fns), chunk)
                if time.perf_counter() - t0 >= self.soak_s:
                    break
        self.on_progress(f"soaked {time.perf_counter() - t0:.1f} s{self._now()}")

    def _now(self) -> str:
        """ " (now 61 C)": the GPU's temperature, where the sampler has it."""
        samples = getattr(self.sampler, "samples", None)
        temp = samples[-1].temperature_c if samples else None
        return f" (now {temp} C)" if temp is not None else ""

    def _retime(self, prep: _Prepared) -> None:
        """Each tuner flip of the group timed again, both sides on the base's pick, after its last
        sweep: the profile's rounds, after a short warm-up; the judge decides on these samples."""
        by_pick: dict[str, list[str]] = {}
        for head, picks in prep.retime.items():
            base = prep.pairs.get(head)
            if base is None or head not in prep.fns or base not in prep.fns:
                continue
            by_pick.setdefault(json.dumps(picks, sort_keys=True, default=str), []).append(head)
        rounds = max(prep.rounds_per_pass * self.passes, 1)
        for heads in by_pick.values():
            picks = prep.retime[heads[0]]
            names = [s for h in heads for s in (h, prep.pairs[h])]
            self.on_progress(
                f"re-timing {len(heads)} tuner flip(s) of {prep.group} with both sides on the "
                f"base's pick ({rounds} rounds)"
            )
            t0 = time.perf_counter()
            self._warm(prep, names, 0.0, pinned=picks)
            for name, got in self._timed(prep, names, rounds, pinned=picks).items():
                prep.pinned.setdefault(name, []).extend(got)
            prep.seconds += time.perf_counter() - t0

    def _pinned_extra(self, prep: _Prepared, slot: str) -> dict[str, Any] | None:
        """extra_info.tilegate.pinned of a re-timed slot: the picks, its times, its ratio."""
        samples = prep.pinned.get(slot)
        if not samples:
            return None
        head = slot.removesuffix(BASE_SUFFIX)
        out: dict[str, Any] = {
            "autotune": prep.retime[head],
            "samples_s": samples,
            "median_s": statistics.median(samples),
            **host_info(prep.pinned_host.get(slot), samples, slot in prep.held),
        }
        base = prep.pinned.get(prep.pairs.get(slot, ""))
        if slot == head and base:
            out["ratio_to_base"] = paired_ratio(samples, base)
        return out

    def _finish(self, prep: _Prepared) -> None:
        if prep.retime:
            self._retime(prep)
        state = self.sampler.window(prep.spans) if self.sampler is not None else None
        ranges = (
            {n: s.ranges for n, s in prep.budget.slots.items()} if prep.budget is not None else {}
        )
        for name, res in prep.results.items():
            res.samples_s = prep.samples.get(name, [])
            res.extra = self._extra(res, prep.samples, ranges)
            held, probe = name in prep.held, prep.host_probe.get(name)
            res.extra.update(host_info(prep.host.get(name), res.samples_s, held, probe))
            if prep.budget is not None and name in prep.budget.slots:
                # which of the group's rounds this row was timed in, and why it stopped
                res.extra["timed_in"] = prep.budget.timed_in(name)
                res.extra["budget"] = prep.budget.info(name)
            if (pinned := self._pinned_extra(prep, name)) is not None:  # a tuner flip's re-time
                res.extra["pinned"] = pinned
            if res.samples_s:
                res.extra["pass_medians_s"] = prep.pass_medians.get(name, [])
                if state is not None:
                    res.extra["gpu_state"] = state
            self._results[res.case.test_id] = res
        for slot, first in prep.handovers:
            med = statistics.median(prep.samples[slot]) if prep.samples.get(slot) else 0.0
            if med > 0:
                self.handover_offsets.append(first / med - 1.0)
        for side in set(prep.fns.values()) | ({"base"} if prep.shadow else set()):
            self.sides[side].release(prep.group)  # its inputs and calls: the memory they hold
        if self.on_group is not None:
            self.on_group(prep.group, prep.results, prep.seconds)

    def pairing(self) -> dict[str, Any] | None:
        """machine_info.tilegate.pairing: how two processes' rounds were paired (None: one side)."""
        if len(self.sides) < 2:
            return None
        offsets = sorted(self.handover_offsets)
        return {
            "processes": list(self.sides),
            "block_s": HANDOVER_BLOCK_S,
            "blocks": dict(self.blocks),
            "handover_first_call": {
                "calls": len(offsets),
                "median_offset": statistics.median(offsets) if offsets else None,
                "counted": False,
            },
            "rounds_log": {g: [list(b) for b in log] for g, log in self.rounds_log.items()},
            **({"host_procs": self.host_timing} if self.host_timing else {}),
        }

    def _extra(
        self, res: CaseResult, samples: dict[str, list[float]], ranges: Mapping[str, Any]
    ) -> dict[str, Any]:
        case = res.case

        def paired(other: str | None) -> float | None:
            """This row's ratio to `other`'s over the rounds both were timed in, or None."""
            ys = samples.get(other or "")
            if not ys or not res.samples_s:
                return None
            xs, ys = aligned(res.samples_s, ranges.get(case.slot), ys, ranges.get(other or ""))
            return paired_ratio(xs, ys)

        extra: dict[str, Any] = {
            "key": case.id,
            "variant": case.variant,
            "group": case.group,
            "params": dict(case.params),
            # the parameters also flat, as before (readers of results.json that predate "params")
            **case.params,
            "correct": res.correct,
            "rel_err": res.rel_err if res.rel_err is None or math.isfinite(res.rel_err) else None,
            "tolerance": res.tolerance,
            "samples_s": res.samples_s,
        }
        if case.variant == self.reference:
            extra["reference"] = True
        if case.base:
            extra["side"] = "base"
        if res.identity is not None:
            extra.update(res.identity.as_json())
        if res.error:
            extra["error"] = res.error
        if res.warnings:
            extra["warnings"] = [w.to_json() for w in res.warnings]
        if res.memory is not None:
            extra["memory"] = res.memory
        if res.samples_s:
            med = statistics.median(res.samples_s)
            extra["median_s"] = med
            work = self.benchmark.work_for(case.params)
            if work.dtype:  # which compute peak bounds it (tilegate.peaks)
                extra["work_dtype"] = work.dtype
            if work.flops is not None:
                extra["tflops"] = round(work.flops / med / 1e12, 3)
            if work.bytes is not None:
                extra["gbps"] = round(work.bytes / med / 1e9, 3)
            extra["ratio_to_reference"] = (
                paired(self.reference) if case.variant != self.reference else None
            )
        twin = getattr(self.registry.get(case.slot), "twin_of", None)
        if twin:
            extra["twin"] = twin
            extra["ratio_to_twin"] = paired(f"{twin}{BASE_SUFFIX}" if case.base else twin)
        # A/B: head / base, paired round by round (the pair ran back to back every round)
        if not case.base and (to_base := paired(f"{case.variant}{BASE_SUFFIX}")) is not None:
            extra["ratio_to_base"] = to_base
        return extra
