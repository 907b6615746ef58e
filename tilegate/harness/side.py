"""One side's calls, measured in the process that imported them: inputs, checks, identity, timing.

`SideMeasurer` does, for the slots of its side, everything that touches that code: it draws a
group's inputs (a fixed seed per group, the same on every side), checks each call against the
declared reference output before any of its timings count, records the compiled-code identity
of a second call, and times the calls with its own timer. It decides nothing about other sides:
the coordinator (tilegate.harness.measure.GroupMeasurer) says what to prepare and time, and
pairs the samples. In a stored-baseline run it lives in the suite's process; in an A/B run in
each side's worker (tilegate.harness.sides).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tilegate import warnlog
from tilegate.cases import Case
from tilegate.fingerprint.record import compile_launches
from tilegate.harness import memory
from tilegate.harness.correctness import check_call
from tilegate.harness.identity import Identity, capture, identity
from tilegate.harness.timing import round_order
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
    # the variant's `unsupported_reason` keeps it off this machine (a skip that is no one's doing)
    unsupported: bool = False
    memory: dict[str, Any] | None = None  # peak GPU memory of one call (tilegate.harness.memory)

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


@dataclass
class Timed:
    """What one `time` request measured: per slot its samples (one per round, in round order),
    and the first call after a hand-over from another side (timed, never counted)."""

    samples: dict[str, list[float]]
    handover: tuple[str, float] | None = None  # (slot, seconds)
    host: dict[str, list[float]] = field(default_factory=dict)  # held slots' host s per call
    held: dict[str, bool] = field(default_factory=dict)  # timed held (host-bound: timing.py)
    # every slot's host seconds per call with nothing queued ahead (CudaTimer.host_probe_s)
    host_probe: dict[str, float] = field(default_factory=dict)


@dataclass
class _Group:
    inputs: Any
    fns: dict[str, Callable[[], Any]] = field(default_factory=dict)
    identities: dict[str, Identity] = field(default_factory=dict)


class SideMeasurer:
    """The slots of one side (`registry`: slot -> variant) and their calls, group by group."""

    def __init__(
        self,
        *,
        benchmark: Any,
        registry: Mapping[str, Any],
        timer: Any,
        device: str,
        capability: tuple[int, int] | None,
        compile_threads: int = 0,
        name: str = "head",
    ) -> None:
        import torch

        self.name = name
        self.torch = torch
        self.benchmark = benchmark
        self.registry = registry
        self.timer = timer
        self.device = device
        self.capability = capability
        # the code under test: the host-code part of the identity
        self._owners = tuple(getattr(v, "make", v) for v in registry.values())
        # > 1: each group's kernels are compiled in this many threads before its checks
        # (tilegate.harness.precompile); on a GPU only (the interpreter compiles nothing)
        self.compile_threads = compile_threads if device == "cuda" else 0
        self.compile_warnings: list[Warned] = []  # what the side-by-side compiles warned
        self.timing_warnings: list[Warned] = []  # Triton / torch warnings while timing
        self._groups: dict[str, _Group] = {}

    # -- preparing ---------------------------------------------------------------------------

    def runnable(
        self, slot: str, variant_name: str, params: Any = None
    ) -> tuple[Any, str | None, bool]:
        """The variant that runs `slot` (at `params`) here, or None, why it cannot, and whether
        that is its `unsupported_reason` (this machine), not a missing variant."""
        variant = self.registry.get(slot)
        if variant is None:
            return None, f"variant {slot!r} is not in benchmark {self.benchmark.name}", False
        reason = variant.unsupported_reason(self.capability, params)
        if reason:
            return None, f"{variant_name} cannot run here: {reason}", True
        return variant, None, False

    def prepare(
        self, group: str, cases: Sequence[Case], seed: int
    ) -> tuple[dict[str, CaseResult], dict[str, float], list[str]]:
        """Draw the group's inputs and check each case's call; the checked ones can be timed.
        Returns the results by slot, where the seconds went (inputs, compile, checks,
        identity) and the slots that can be timed."""
        t0 = time.perf_counter()
        params = cases[0].params
        tol = self.benchmark.tolerance_for(params)
        results: dict[str, CaseResult] = {}
        runnable = {}
        for case in cases:
            res = results[case.slot] = CaseResult(case, tolerance=tol)
            runnable[case.slot], res.skip_reason, res.unsupported = self.runnable(
                case.slot, case.variant, params
            )
        if not any(runnable.values()):  # no inputs nor reference for a group nothing runs in
            return results, {"inputs": time.perf_counter() - t0}, []
        inputs = self.benchmark.inputs(params, self.device, seed)
        ref = self.benchmark.reference_output(params, inputs)
        metric = getattr(self.benchmark, "error", None)  # None: relative_error
        phases = {"inputs": time.perf_counter() - t0}
        if self.compile_threads > 1:
            t_compile = time.perf_counter()
            self._compile_first(cases, params, inputs)
            phases["compile"] = time.perf_counter() - t_compile
        phases |= {"checks": 0.0, "identity": 0.0}
        held = self._groups[group] = _Group(inputs)
        for case in cases:
            res, variant = results[case.slot], runnable[case.slot]
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
                    # and the torch ops those run). The host code counts from both calls and make.
                    with warnlog.recording() as seen_warnings, capture(*self._owners) as launches:
                        call()
                    warned += [w for w in seen_warnings if w not in warned]  # once per case
                    launches.code = first.code + launches.code
                    if self.device == "cuda":  # calls of their own, after the identity's
                        res.memory = memory.measure(self.torch, call)
            except Exception as exc:  # a kernel that raises fails its own case, not the group
                res.error = f"{type(exc).__name__}: {exc}"
                continue
            finally:
                res.warnings = list(warned)
                t_end = time.perf_counter()
                phases["checks"] += (t_second or t_end) - t_case
                phases["identity"] += t_end - (t_second or t_end)
            res.correct, res.rel_err, res.error = got.correct, got.rel_err, got.error
            res.identity = identity(launches)
            injected = getattr(call, "injected", None) or getattr(variant, "injected", None)
            if injected:  # tilegate.plugin --inject: test-only changes
                res.identity = res.identity.marked(str(injected))
            held.identities[case.slot] = res.identity
            # A wrong kernel is still timed (its row is written, marked incorrect, and refused
            # by the gate); a kernel that errored or wrote nothing is not.
            if got.error is None:
                held.fns[case.slot] = call
        del ref
        return results, phases, list(held.fns)

    def explain(self, group: str, slots: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        """The compile facts of these slots' interpreter launches (ahead of time; a GPU's
        launches have theirs already): what explains a changed case. Never raises."""
        out: dict[str, dict[str, Any] | None] = {}
        held = self._groups.get(group)
        for slot in slots:
            ident = held.identities.get(slot) if held is not None else None
            if ident is None:
                continue
            try:
                if ident.handles and any(h is not None for h in ident.handles):
                    compile_launches(ident.explain, list(ident.handles))
            except Exception:
                pass
            out[slot] = ident.explain
        return out

    def release(self, group: str) -> None:
        """The group is done: its inputs and calls go (the GPU memory they hold)."""
        self._groups.pop(group, None)

    def _compile_first(self, cases: Sequence[Case], params: Any, inputs: Any) -> None:
        """Compile the group's kernels side by side (tilegate.harness.precompile); the first
        group also starts the CUDA profiler meanwhile, for the identities that follow."""
        from tilegate.harness.identity import start_profiler
        from tilegate.harness.precompile import first_calls

        variants = [self.runnable(c.slot, c.variant, params)[0] for c in cases]
        with warnlog.recording() as warned:
            first_calls(
                [
                    functools.partial(_made_and_called, v, params, inputs)
                    for v in variants
                    if v is not None
                ],
                self.compile_threads,
                beside=start_profiler,  # once per process
            )
            self.torch.cuda.synchronize()
        self.compile_warnings += warned

    # -- timing ------------------------------------------------------------------------------

    def _fns(self, group: str, names: Sequence[str]) -> dict[str, Callable[[], Any]]:
        held = self._groups[group]
        return {n: held.fns[n] for n in names}

    def warm(
        self,
        group: str,
        names: Sequence[str],
        seconds: float,
        pinned: Sequence[Mapping[str, Any]] | None = None,
    ) -> tuple[float, list[str]]:
        """Run the slots' calls in turn for about `seconds` (at least 3 rounds); seconds per
        round of these slots, and those the timer holds from now on (host-bound). `pinned`:
        the autotuner picks every call runs (a tuner flip's re-time on one config: `time`)."""
        fns = self._fns(group, names)
        with warnlog.recording() as warned, _pinned(pinned):
            pace = float(self.timer.warm(fns, seconds))
        self.timing_warnings += warned
        return pace, [n for n, fn in fns.items() if self._held(fn)]

    def hold(self, group: str, names: Sequence[str]) -> None:
        """Time these slots held from now on: their partner on another side is host-bound."""
        for fn in self._fns(group, names).values():
            self.timer.hold(fn)

    def time(
        self,
        group: str,
        names: Sequence[str],
        rounds: int,
        *,
        first_round: int = 0,
        handover: bool = False,
        pairs: Mapping[str, str] | None = None,
        pinned: Sequence[Mapping[str, Any]] | None = None,
    ) -> Timed:
        """`rounds` rounds of the slots' calls, interleaved (the order of round `first_round`
        and on). `handover`: another side used the GPU just before: one call of the first slot
        runs first and is timed apart, never counted (tilegate.harness.sides). `pinned`: every
        autotuner these calls run uses the config these picks name
        (tilegate.harness.autotune.pinned; a tuner flip re-timed with both sides on one config,
        tilegate.harness.measure)."""
        fns = self._fns(group, names)
        with warnlog.recording() as warned, _pinned(pinned):
            first = None
            if handover and fns:
                order = round_order(list(fns), first_round)
                first = (order[0], float(self.timer.once(fns[order[0]])))
            samples = self.timer.time(fns, rounds, pairs or None, first_round=first_round)
        self.timing_warnings += warned
        host = dict(getattr(self.timer, "host_samples", {}))
        probe = dict(getattr(self.timer, "host_probe_s", {}))
        held = {n: self._held(fn) for n, fn in fns.items()}
        return Timed(samples, first, host, held, {n: probe[n] for n in fns if n in probe})

    def _held(self, fn: Any) -> bool:
        return bool(getattr(self.timer, "is_held", lambda fn: False)(fn))

    def warnings_seen(self) -> tuple[list[Warned], list[Warned]]:
        """(while compiling side by side, while timing)."""
        return list(self.compile_warnings), list(self.timing_warnings)


def _pinned(picks: Sequence[Mapping[str, Any]] | None) -> Any:
    """`tilegate.harness.autotune.pinned(picks)`, or nothing where no picks are given."""
    if not picks:
        return contextlib.nullcontext()
    from tilegate.harness.autotune import pinned

    return pinned(picks)


def wire_result(res: CaseResult) -> dict[str, Any]:
    """A case result as another process receives it (no Case: the coordinator has its own; the
    identity without its AOT handles, which stay in this process)."""
    ident = replace(res.identity, handles=()) if res.identity is not None else None
    return {
        "skip_reason": res.skip_reason,
        "correct": res.correct,
        "rel_err": res.rel_err,
        "error": res.error,
        "identity": ident,
        "warnings": list(res.warnings),
        "tolerance": res.tolerance,
        "unsupported": res.unsupported,
        "memory": res.memory,
    }


def unwire_result(case: Case, data: Mapping[str, Any]) -> CaseResult:
    return CaseResult(case, **dict(data))
