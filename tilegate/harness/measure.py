"""Measure the groups of a run: same inputs per group, correctness first, then interleaved timing.

A group is every variant at one grid point of the declared benchmark (tilegate.declare). Its
inputs are drawn once (the declaration's `inputs`, a fixed seed per group); each variant's call
(its factory's, `Variant.make`) is checked against the declared higher-precision reference
output before any of its timings count. Only variants that passed are timed,
all together, round by round, so the ratios between them are paired; each group's rounds are
spread over several sweeps of the whole run (see GroupMeasurer).
"""

from __future__ import annotations

import functools
import math
import statistics
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tilegate import warnlog
from tilegate.cases import BASE_SUFFIX, Case
from tilegate.fingerprint.record import compile_changed
from tilegate.fingerprint.record import spent_s as explain_spent_s
from tilegate.harness.budget import GroupBudget, Tolerances, aligned
from tilegate.harness.correctness import check_call
from tilegate.harness.identity import Identity, capture, identity
from tilegate.harness.timing import host_info
from tilegate.judge.stats import paired_ratio
from tilegate.warnlog import Warned


@dataclass
class CaseResult:
    case: Case
    skip_reason: str | None = None
    correct: bool | None = None
    rel_err: float | None = None
    error: str | None = None
    samples_s: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    identity: Identity | None = None  # the compiled code the correctness call ran
    # what Triton or torch warned while this case was compiled and checked: recorded, not raised
    warnings: list[Warned] = field(default_factory=list)
    tolerance: float = 0.0  # the relative error allowed (the declaration's)

    @property
    def failure(self) -> str | None:
        """Why this case must fail its test, or None."""
        if self.error is not None:
            return f"{self.case.id}: {self.error}"
        if self.correct is False:
            return (
                f"{self.case.id}: wrong result: relative error {self.rel_err:.3g} > "
                f"{self.tolerance:g} against the reference; its timing does not count"
            )
        return None


def _made_and_called(variant: Any, params: Any, inputs: Any) -> Any:
    return variant.make(params, inputs)()


def group_seed(group: str) -> int:
    return zlib.crc32(group.encode()) & 0x7FFFFFFF


@dataclass
class _Prepared:
    """A group between its correctness checks and its last timed pass."""

    group: str
    results: dict[str, CaseResult]  # by slot: the variant, or "<variant>@base" in an A/B run
    fns: dict[str, Callable[[], Any]]
    pairs: dict[str, str] = field(default_factory=dict)  # A/B: slot -> its base slot
    rounds_per_pass: int = 0
    samples: dict[str, list[float]] = field(default_factory=dict)
    pass_medians: dict[str, list[float]] = field(default_factory=dict)
    spans: list[tuple[float, float]] = field(default_factory=list)  # timed windows (perf_counter)
    seconds: float = 0.0
    # where the preparing went: drawing the inputs and the reference output, the correctness
    # calls (the first call compiles on a cold cache), the identity calls (a second call under
    # the CUDA profiler): the progress line says it, so a slow run's minutes can be placed
    phases: dict[str, float] = field(default_factory=dict)
    budget: GroupBudget | None = None  # A/B: which slots each sweep times (tilegate.harness.budget)
    host: dict[str, list[float]] = field(default_factory=dict)  # host seconds per call, per round


class GroupMeasurer:
    """Measures every group of the run once, on the first request, and serves the results.

    All groups are prepared first (inputs drawn, every variant checked); then the timed rounds
    of each group are split over `passes` sweeps across all groups. The GPU's state drifts over
    seconds (power cap, temperature), shifting whole groups by +-0.5 % when each is timed in
    one go; spreading a group over the run averages that out.
    """

    def __init__(
        self,
        *,
        benchmark: Any,
        registry: Mapping[str, Any],
        timer: Any,
        device: str,
        capability: tuple[int, int] | None,
        groups: Mapping[str, list[Case]],
        passes: int = 1,
        warmup_first_s: float = 2.0,
        soak_s: float = 0.0,
        sampler: Any = None,
        on_group: Callable[[str, dict[str, CaseResult], float], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
        ab_budget: bool = True,
        ab_tolerances: Tolerances | None = None,
        compile_threads: int = 0,
    ) -> None:
        import torch

        if passes < 1:
            raise ValueError(f"passes must be >= 1, got {passes}")
        if soak_s < 0:
            raise ValueError(f"soak_s must be >= 0, got {soak_s}")
        self.soak_s = soak_s
        self.sampler = sampler
        self.soaked_s = 0.0
        self.torch = torch
        self.benchmark = benchmark
        self.registry = registry
        # the variant every row's ratio_to_reference is measured against (Variant.reference)
        self.reference = next(
            (name for name, v in registry.items() if getattr(v, "reference", False)), None
        )
        self.timer = timer
        # the code under test, head's and base's copies: the host-code part of the identity
        self._owners = tuple(getattr(v, "make", v) for v in registry.values())
        self.device = device
        self.capability = capability
        self.groups = groups
        self.passes = passes
        self.warmup_first_s = warmup_first_s
        self.on_group = on_group
        # A/B: identity-aware budgeting (tilegate.harness.budget); False: both sides of every
        # case timed every round (A/A calibration, --perf-ab-full)
        self.ab_budget = ab_budget
        self.ab_tolerances = ab_tolerances or Tolerances()
        self.on_progress = on_progress or (lambda line: None)
        # > 1: each group's kernels are compiled in this many threads before its checks
        # (tilegate.harness.precompile); on a GPU only (the interpreter compiles nothing)
        self.compile_threads = compile_threads if device == "cuda" else 0
        self.compile_warnings: list[Warned] = []  # what the side-by-side compiles warned
        self._pace: dict[str, float] = {}  # seconds per round of each group, from the soak
        self._results: dict[str, CaseResult] = {}
        self.warnings: list[Warned] = []  # Triton / torch warnings while timing (not per case)

    def warnings_seen(self) -> list[dict[str, Any]]:
        """Every distinct Triton / torch warning of the run: how often, and the first case."""
        first: dict[Warned, str] = {}
        seen: list[Warned] = []
        for res in self._results.values():
            for w in res.warnings:
                first.setdefault(w, res.case.test_id)
            seen += res.warnings
        seen += self.warnings + self.compile_warnings
        compiling = set(self.compile_warnings)
        return [
            {
                **w.to_json(),
                "count": n,
                "first_case": first.get(w, "while compiling" if w in compiling else "while timing"),
            }
            for w, n in warnlog.unique(seen)
        ]

    def result(self, case: Case) -> CaseResult:
        if not self._results:
            self._measure_all()
        if case.test_id not in self._results:
            raise KeyError(f"case {case.test_id} is not in the groups this measurer was given")
        return self._results[case.test_id]

    # -- internals -------------------------------------------------------------------------

    def _prepare(self, group: str, group_cases: list[Case]) -> _Prepared:
        """Draw the group's inputs and check every variant; the checked ones get a timed callable."""
        t0 = time.perf_counter()
        params = group_cases[0].params
        inputs = self.benchmark.inputs(params, self.device, group_seed(group))
        ref = self.benchmark.reference_output(params, inputs)
        tol = self.benchmark.tolerance_for(params)
        metric = getattr(self.benchmark, "error", None)  # None: relative_error
        prep = _Prepared(group, {}, {})
        prep.phases = {"inputs": time.perf_counter() - t0}
        if self.compile_threads > 1:
            t_compile = time.perf_counter()
            self._compile_first(group_cases, params, inputs)
            prep.phases["compile"] = time.perf_counter() - t_compile
        prep.phases |= {"checks": 0.0, "identity": 0.0}
        for case in group_cases:
            res = prep.results[case.slot] = CaseResult(case, tolerance=tol)
            variant, res.skip_reason = self._runnable(case)
            if variant is None:
                continue
            warned: list[Warned] = []
            t_case = time.perf_counter()
            t_second = None
            try:
                # the correctness call: its host code counts; its torch ops and GPU activity
                # would be the first call's (compiling), so they come from the second call only
                # and are not recorded here (a CUDA profiler session per case saved)
                with (
                    warnlog.recording() as seen_warnings,
                    capture(*self._owners, host_only=True) as first,
                ):
                    call = variant.make(params, inputs)
                    got = check_call(call, ref, tol, error=metric, params=params)
                warned += seen_warnings
                launches = first
                t_second = time.perf_counter()
                if got.error is None:
                    # the identity of a second call: what is timed, in steady state. A first call
                    # also does what a process does once (compiling, a library's cache filled,
                    # and the torch ops those run): the head's first call did it and the base's,
                    # sharing the library, did not, so a Liger layer_norm backward was "changed"
                    # in every A/A run on the H200. The host code counts from both calls and make.
                    with warnlog.recording() as seen_warnings, capture(*self._owners) as launches:
                        call()
                    warned += [w for w in seen_warnings if w not in warned]  # once per case
                    launches.code = first.code + launches.code
            except Exception as exc:  # a kernel that raises fails its own case, not the group
                res.error = f"{type(exc).__name__}: {exc}"
                continue
            finally:
                res.warnings = list(warned)
                t_end = time.perf_counter()
                prep.phases["checks"] += (t_second or t_end) - t_case
                prep.phases["identity"] += t_end - (t_second or t_end)
            res.correct, res.rel_err, res.error = got.correct, got.rel_err, got.error
            res.identity = identity(launches)
            injected = getattr(call, "injected", None) or getattr(variant, "injected", None)
            if injected:  # tilegate.plugin --inject: test-only changes
                res.identity = res.identity.marked(str(injected))
            # A wrong kernel is still timed (its row is written, marked incorrect, and refused
            # by the gate); a kernel that errored or wrote nothing is not.
            if got.error is None:
                prep.fns[case.slot] = call
        prep.pairs = {
            c.variant: c.slot
            for c in group_cases
            if c.base and c.variant in prep.fns and c.slot in prep.fns
        }
        # the compile facts that explain a changed pair (tilegate.explain; AOT under the interpreter)
        compile_changed(
            (prep.results[h].identity, prep.results[b].identity) for h, b in prep.pairs.items()
        )
        del ref, inputs
        prep.seconds = time.perf_counter() - t0
        return prep

    def _measure_all(self) -> None:
        prepared = []
        for n, (group, cases) in enumerate(self.groups.items(), 1):
            prep = self._prepare(group, cases)
            prepared.append(prep)
            failed = sum(r.failure is not None for r in prep.results.values())
            self.on_progress(
                f"checked {n}/{len(self.groups)} {group}: {len(prep.fns)} to time"
                + (f", {failed} FAILED" if failed else "")
                + f" ({prep.seconds:.1f} s: "
                + ", ".join(f"{k} {v:.1f}" for k, v in prep.phases.items())
                + ")"
            )
        config = self.timer.config
        with warnlog.recording() as warned:
            self._time(prepared, config)
        self.warnings += warned
        self.on_progress(
            f"recording what explains each case took {explain_spent_s():.2f} s in this process"
        )

    def _time(self, prepared: list[_Prepared], config: Any) -> None:
        self._soak([p for p in prepared if p.fns])
        for p in range(self.passes):
            self.on_progress(f"timing pass {p + 1}/{self.passes} over {len(prepared)} groups")
            for i, prep in enumerate(prepared):
                t0 = time.perf_counter()
                if prep.fns:
                    if p == 0:
                        pace = self._pace.get(prep.group) or 0.0
                        if pace > 0:  # the soak just ran these kernels: 3 rounds re-warm them
                            self.timer.warm(prep.fns, 0.0, pairs=prep.pairs)
                        else:
                            warm = self.warmup_first_s if i == 0 else config.warmup_s
                            pace = self.timer.warm(prep.fns, warm, pairs=prep.pairs)
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

    def _runnable(self, case: Case) -> tuple[Any, str | None]:
        """The variant that runs `case` here, or None and why it cannot (the case's skip reason)."""
        variant = self.registry.get(case.slot)
        if variant is None:
            return None, f"variant {case.slot!r} is not in benchmark {self.benchmark.name}"
        reason = variant.unsupported_reason(self.capability)
        if reason:
            return None, f"{case.variant} cannot run here: {reason}"
        return variant, None

    def _compile_first(self, group_cases: list[Case], params: Any, inputs: Any) -> None:
        """Compile the group's kernels side by side (tilegate.harness.precompile); the first
        group also starts the CUDA profiler meanwhile, for the identities that follow."""
        from tilegate.harness.identity import start_profiler
        from tilegate.harness.precompile import first_calls

        variants = [v for v, _ in map(self._runnable, group_cases) if v is not None]
        with warnlog.recording() as warned:
            first_calls(
                [functools.partial(_made_and_called, v, params, inputs) for v in variants],
                self.compile_threads,
                beside=start_profiler,  # once per process
            )
            self.torch.cuda.synchronize()
        self.compile_warnings += warned

    def _budget(self, prep: _Prepared) -> GroupBudget | None:
        """The group's A/B plan, from the identities its correctness calls captured."""
        if not prep.pairs:
            return None
        unchanged = set()
        for head, base in prep.pairs.items():
            h, b = prep.results[head].identity, prep.results[base].identity
            if h is not None and b is not None and h.hash and b.hash and h.hash == b.hash:
                unchanged.add(head)
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
            sides = {
                s
                for s in (getattr(e, "faster", None), getattr(e, "than", None))
                if isinstance(s, str)
            }
            if sides & changed:
                kept |= sides & set(pairs)
        return kept

    def _sweep(self, prep: _Prepared, *, warm: bool) -> None:
        """Time one sweep of the group: every slot, or those its budget names."""
        names = prep.budget.active() if prep.budget is not None else list(prep.fns)
        fns = {n: prep.fns[n] for n in names}
        if not fns:
            return
        if warm:  # clocks are up: a short re-warm of this group's kernels only
            self.timer.warm(fns, 0.0, pairs=prep.pairs)
        t_begin = time.perf_counter()
        timed = self.timer.time(fns, prep.rounds_per_pass, pairs=prep.pairs)
        prep.spans.append((t_begin, time.perf_counter()))
        for name, got in getattr(self.timer, "host_samples", {}).items():
            prep.host.setdefault(name, []).extend(got)  # beside the GPU samples, round by round
        for name, got in timed.items():
            prep.samples.setdefault(name, []).extend(got)
            if got:
                prep.pass_medians.setdefault(name, []).append(statistics.median(got))
        if prep.budget is not None:
            prep.budget.record(timed, prep.rounds_per_pass)

    def _soak(self, prepared: list[_Prepared]) -> None:
        """Run the groups' kernels in turn, untimed, for about `soak_s` seconds."""
        if self.soak_s <= 0 or not prepared:
            return
        temp = self._temperature()
        self.on_progress(
            f"soaking the GPU for {self.soak_s:g} s with the run's kernels"
            + (f" (now {temp} C)" if temp is not None else "")
        )
        chunk = min(0.5, self.soak_s / len(prepared))
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.soak_s:
            for prep in prepared:
                # its pace at working temperature sizes the group's rounds (no warm-up after)
                self._pace[prep.group] = self.timer.warm(prep.fns, chunk, pairs=prep.pairs)
                if time.perf_counter() - t0 >= self.soak_s:
                    break
        self.soaked_s = time.perf_counter() - t0
        temp = self._temperature()
        self.on_progress(
            f"soaked {self.soaked_s:.1f} s" + (f" (now {temp} C)" if temp is not None else "")
        )

    def _temperature(self) -> int | None:
        samples = getattr(self.sampler, "samples", None)
        return samples[-1].temperature_c if samples else None

    def _finish(self, prep: _Prepared) -> None:
        ref_samples = prep.samples.get(self.reference) if self.reference else None
        state = self.sampler.window(prep.spans) if self.sampler is not None else None
        ranges = (
            {n: s.ranges for n, s in prep.budget.slots.items()} if prep.budget is not None else {}
        )
        for name, res in prep.results.items():
            res.samples_s = prep.samples.get(name, [])
            res.extra = self._extra(res, ref_samples, prep.samples, ranges)
            held = bool(getattr(self.timer, "is_held", lambda fn: False)(prep.fns.get(name)))
            res.extra.update(host_info(prep.host.get(name), res.samples_s, held))
            if prep.budget is not None and name in prep.budget.slots:
                # which of the group's rounds this row was timed in, and why it stopped
                res.extra["timed_in"] = prep.budget.timed_in(name)
                res.extra["budget"] = prep.budget.info(name)
            if res.samples_s:
                res.extra["pass_medians_s"] = prep.pass_medians.get(name, [])
                if state is not None:
                    res.extra["gpu_state"] = state
            self._results[res.case.test_id] = res
        if self.on_group is not None:
            self.on_group(prep.group, prep.results, prep.seconds)

    def _extra(
        self,
        res: CaseResult,
        ref_samples: list[float] | None,
        samples: dict[str, list[float]],
        ranges: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        case = res.case
        ranges = ranges or {}

        def paired(x: list[float], other: str | None, y: list[float]) -> float:
            # rows budgeted into different rounds are paired over the rounds both were timed in
            xs, ys = aligned(x, ranges.get(case.slot), y, ranges.get(other or ""))
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
        if res.samples_s:
            med = statistics.median(res.samples_s)
            extra["median_s"] = med
            work = self.benchmark.work_for(case.params)
            if work.flops is not None:
                extra["tflops"] = round(work.flops / med / 1e12, 3)
            if work.bytes is not None:
                extra["gbps"] = round(work.bytes / med / 1e9, 3)
            extra["ratio_to_reference"] = (
                paired(res.samples_s, self.reference, ref_samples)
                if ref_samples and case.variant != self.reference
                else None
            )
        variant = self.registry.get(case.slot)
        twin = getattr(variant, "twin_of", None)
        if twin:
            extra["twin"] = twin
            twin_slot = f"{twin}{BASE_SUFFIX}" if case.base else twin
            twin_samples = samples.get(twin_slot)
            extra["ratio_to_twin"] = (
                paired(res.samples_s, twin_slot, twin_samples)
                if twin_samples and res.samples_s
                else None
            )
        base_samples = None if case.base else samples.get(f"{case.variant}{BASE_SUFFIX}")
        if base_samples and res.samples_s:
            # A/B: head / base, paired round by round (the pair ran back to back every round)
            extra["ratio_to_base"] = paired(
                res.samples_s, f"{case.variant}{BASE_SUFFIX}", base_samples
            )
        return extra
