"""Measure the groups of a run: same inputs per group, correctness first, then interleaved timing.

A group is every variant at one (dtype, layout, K). Its inputs are drawn once (random normal,
fixed seed per group); each variant's output buffer is poisoned with NaN and checked against a
higher-precision reference before any of its timings count. Only variants that passed are timed,
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

from tilegate.cases import BASE_SUFFIX, Case
from tilegate.harness import warnlog
from tilegate.harness.correctness import REL_ERR_TOL, check_call, reference
from tilegate.harness.identity import Identity, capture, identity
from tilegate.harness.warnlog import Warned
from tilegate.judge.stats import paired_ratio


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

    @property
    def failure(self) -> str | None:
        """Why this case must fail its test, or None."""
        if self.error is not None:
            return f"{self.case.id}: {self.error}"
        if self.correct is False:
            return (
                f"{self.case.id}: wrong result: relative error {self.rel_err:.3g} > "
                f"{REL_ERR_TOL[self.case.dtype]:g} against the reference; its timing does not count"
            )
        return None


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
        self.registry = registry
        # the variant every row's ratio_to_torch is measured against (kernels.REFERENCE)
        self.reference = next(
            (name for name, v in registry.items() if getattr(v, "reference", False)), None
        )
        self.timer = timer
        self.device = device
        self.capability = capability
        self.groups = groups
        self.passes = passes
        self.warmup_first_s = warmup_first_s
        self.on_group = on_group
        self.on_progress = on_progress or (lambda line: None)
        self._results: dict[str, CaseResult] = {}
        self.warnings: list[Warned] = []  # Triton / torch warnings while timing (not per case)
        self._outs: dict[tuple[str, str, int, int], Any] = {}

    def warnings_seen(self) -> list[dict[str, Any]]:
        """Every distinct Triton / torch warning of the run: how often, and the first case."""
        first: dict[Warned, str] = {}
        seen: list[Warned] = []
        for res in self._results.values():
            for w in res.warnings:
                first.setdefault(w, res.case.test_id)
            seen += res.warnings
        seen += self.warnings
        return [
            {**w.to_json(), "count": n, "first_case": first.get(w, "while timing")}
            for w, n in warnlog.unique(seen)
        ]

    def result(self, case: Case) -> CaseResult:
        if not self._results:
            self._measure_all()
        if case.test_id not in self._results:
            raise KeyError(f"case {case.test_id} is not in the groups this measurer was given")
        return self._results[case.test_id]

    # -- internals -------------------------------------------------------------------------

    def _inputs(self, case: Case) -> tuple[Any, Any]:
        from kernels import DTYPES

        torch = self.torch
        dtype = DTYPES[case.dtype]
        gen = torch.Generator(device=self.device).manual_seed(group_seed(case.group))
        a = torch.randn(case.m, case.k, dtype=dtype, device=self.device, generator=gen)
        if case.layout == "nn":
            b = torch.randn(case.k, case.n, dtype=dtype, device=self.device, generator=gen)
        else:  # "nt": B stored N x K (K contiguous), passed as its transpose with no copy
            b = torch.randn(case.n, case.k, dtype=dtype, device=self.device, generator=gen).T
        return a, b

    def _out(self, case: Case, dtype: Any) -> Any:
        """One output buffer per (variant, dtype, M, N), shared by the groups of the run."""
        key = (case.variant, case.dtype, case.m, case.n)
        if key not in self._outs:
            self._outs[key] = self.torch.empty(case.m, case.n, dtype=dtype, device=self.device)
        return self._outs[key]

    def _prepare(self, group: str, group_cases: list[Case]) -> _Prepared:
        """Draw the group's inputs and check every variant; the checked ones get a timed callable."""
        t0 = time.perf_counter()
        a, b = self._inputs(group_cases[0])
        ref = reference(a, b)
        prep = _Prepared(group, {}, {})
        for case in group_cases:
            res = prep.results[case.slot] = CaseResult(case)
            variant = self.registry.get(case.slot)
            if variant is None:
                res.skip_reason = f"variant {case.slot!r} is not in kernels.VARIANTS"
                continue
            reason = variant.unsupported_reason(self.capability)
            if reason:
                res.skip_reason = f"{case.variant} cannot run here: {reason}"
                continue
            # Both sides of an A/B pair write the same buffer: same memory, same placement.
            out = self._out(case, a.dtype)
            try:
                with warnlog.recording() as warned, capture() as launches:
                    got = check_call(variant.matmul, a, b, ref, out, REL_ERR_TOL[case.dtype])
            except Exception as exc:  # a kernel that raises fails its own case, not the group
                res.error = f"{type(exc).__name__}: {exc}"
                continue
            finally:
                res.warnings = list(warned)
            res.correct, res.rel_err, res.error = got.correct, got.rel_err, got.error
            res.identity = identity(launches)
            if getattr(variant, "injected", None):  # perf_tests/inject.py: test-only changes
                res.identity = res.identity.marked(str(variant.injected))
            # A wrong kernel is still timed (its row is written, marked incorrect, and refused
            # by the gate); a kernel that errored or wrote nothing is not.
            if got.error is None:
                prep.fns[case.slot] = functools.partial(variant.matmul, a, b, out=out)
        prep.pairs = {
            c.variant: c.slot
            for c in group_cases
            if c.base and c.variant in prep.fns and c.slot in prep.fns
        }
        del ref
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
                + f" ({prep.seconds:.1f} s)"
            )
        config = self.timer.config
        with warnlog.recording() as warned:
            self._time(prepared, config)
        self.warnings += warned

    def _time(self, prepared: list[_Prepared], config: Any) -> None:
        self._soak([p for p in prepared if p.fns])
        for p in range(self.passes):
            self.on_progress(f"timing pass {p + 1}/{self.passes} over {len(prepared)} groups")
            for i, prep in enumerate(prepared):
                t0 = time.perf_counter()
                if prep.fns:
                    if p == 0:
                        warm = self.warmup_first_s if i == 0 else config.warmup_s
                        pace = self.timer.warm(prep.fns, warm, pairs=prep.pairs)
                        prep.rounds_per_pass = math.ceil(config.rounds_for(pace) / self.passes)
                    else:  # clocks are up: a short re-warm of this group's kernels only
                        self.timer.warm(prep.fns, 0.0, pairs=prep.pairs)
                    t_begin = time.perf_counter()
                    timed = self.timer.time(prep.fns, prep.rounds_per_pass, pairs=prep.pairs)
                    prep.spans.append((t_begin, time.perf_counter()))
                    for name, got in timed.items():
                        prep.samples.setdefault(name, []).extend(got)
                        if got:
                            prep.pass_medians.setdefault(name, []).append(statistics.median(got))
                prep.seconds += time.perf_counter() - t0
                if p == self.passes - 1:
                    self._finish(prep)

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
                self.timer.warm(prep.fns, chunk, pairs=prep.pairs)
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
        torch_samples = prep.samples.get(self.reference) if self.reference else None
        state = self.sampler.window(prep.spans) if self.sampler is not None else None
        for name, res in prep.results.items():
            res.samples_s = prep.samples.get(name, [])
            res.extra = self._extra(res, torch_samples, prep.samples)
            if res.samples_s:
                res.extra["pass_medians_s"] = prep.pass_medians.get(name, [])
                if state is not None:
                    res.extra["gpu_state"] = state
            self._results[res.case.test_id] = res
        if self.on_group is not None:
            self.on_group(prep.group, prep.results, prep.seconds)

    def _extra(
        self, res: CaseResult, torch_samples: list[float] | None, samples: dict[str, list[float]]
    ) -> dict[str, Any]:
        case = res.case
        extra: dict[str, Any] = {
            "key": case.id,
            "variant": case.variant,
            "dtype": case.dtype,
            "layout": case.layout,
            "M": case.m,
            "N": case.n,
            "K": case.k,
            "correct": res.correct,
            "rel_err": res.rel_err if res.rel_err is None or math.isfinite(res.rel_err) else None,
            "tolerance": REL_ERR_TOL[case.dtype],
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
            extra["tflops"] = round(case.flops / med / 1e12, 3)
            # the JSON key says "torch": it is the reference's, whatever the registry names it
            extra["ratio_to_torch"] = (
                paired_ratio(res.samples_s, torch_samples)
                if torch_samples and case.variant != self.reference
                else None
            )
        variant = self.registry.get(case.slot)
        twin = getattr(variant, "xtile_twin_of", None)
        if twin:
            extra["twin"] = twin
            twin_samples = samples.get(f"{twin}{BASE_SUFFIX}" if case.base else twin)
            extra["ratio_to_twin"] = (
                paired_ratio(res.samples_s, twin_samples)
                if twin_samples and res.samples_s
                else None
            )
        base_samples = None if case.base else samples.get(f"{case.variant}{BASE_SUFFIX}")
        if base_samples and res.samples_s:
            # A/B: head / base, paired round by round (the pair ran back to back every round)
            extra["ratio_to_base"] = paired_ratio(res.samples_s, base_samples)
        return extra
