"""What a project declares to be gated: its benchmark (docs/plugin.md). No torch, no Triton here.

A project writes one `Benchmark`, a module-level BENCHMARK of its protocol
(`perf_tests/test_<name>.py`), and names its code in its pyproject.toml::

    [tool.tilegate]
    source = "kernels"                          # what an A/B run takes from the base commit
    registry = "kernels.registry:DECLARED"      # optional: its variants, module:attribute
    protocol = "perf_tests"
    baselines = "baselines"

Everything about the kernels (variants, shapes, reference, correctness tolerance, work per call,
relations between variants) is data of the declaration; tilegate measures and judges. A case is
one variant at one grid point (the profile's axis values plus its `fixed` values); its id joins
the variant and the axis labels with "-" (``xtile_persistent-fp16-nt-K128``); a grid point's cases
form a group (``fp16-nt-K128``), timed together round by round, so their ratios are paired.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

Params = Mapping[str, Any]
# make(params, inputs) -> the zero-argument call that is timed; its return value is checked
Factory = Callable[[Params, Any], Callable[[], Any]]

# keys of a result row that are not parameters (an axis must not be named like one)
RESERVED = frozenset(
    {
        "key", "variant", "group", "params", "correct", "rel_err", "tolerance", "samples_s",
        "median_s", "tflops", "gbps", "reference", "twin", "side", "error", "warnings",
        "memory", "work_dtype",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Axis:
    """A named parameter of the grid and the values a profile measures it at. `label`: a value's
    part of the case id, a format string (``"K{}"``) or a function; default the value (``fp16``)."""

    name: str
    values: tuple[Any, ...]
    label: str | Callable[[Any], str] = "{}"

    def show(self, value: Any) -> str:
        return self.label(value) if callable(self.label) else self.label.format(value)


HOST_PROCS = 6  # Profile.host_procs on a GPU


@dataclass(frozen=True)
class Profile:
    """A named grid (the cross product of its axes) and how long each group is timed."""

    name: str
    axes: tuple[Axis, ...]
    fixed: Params = field(default_factory=lambda: MappingProxyType({}))  # in params, not in ids
    rounds: int = 150  # at least this many timed rounds per group ...
    min_time_s: float = 3.0  # ... and at least this long (tilegate.harness.timing.TimerConfig)
    passes: int = 5  # each group's rounds are spread over this many sweeps across all groups
    soak_s: float = 15.0  # untimed run of the run's own kernels before the first sweep
    # the GPU waits until each timed call is queued (tilegate.harness.timing): for calls whose
    # host work (Python wrappers, autograd) is as long as their GPU work
    hold_host: bool = False
    # an A/B of two processes: a host-bound case's host time is timed again in this many fresh
    # worker processes per side, alternated (tilegate.harness.hostworkers; docs/measuring.md);
    # None: HOST_PROCS on a GPU, none under the interpreter (each costs a process start)
    host_procs: int | None = None
    interpreter: bool = False  # runs under Triton's CPU interpreter: timings mean nothing
    description: str = ""


@dataclass(frozen=True)
class Variant:
    """One implementation, timed beside the others of its group.

    `unsupported(capability)`: why it cannot run on a GPU of that compute capability (None: it
    can; capability None: the CPU interpreter); `unsupported(capability, params)` is asked per
    case (params empty where no case is asked, as for the AOT fingerprint's plans): a library that
    refuses some cases on some GPUs (fla-core's gated backward on Hopper with Triton < 3.7.1). A
    case it keeps off a machine is skipped with its reason on both sides of an A/B (no one's
    doing: not a shrunk coverage). `plan` (optional): what the AOT fingerprint compiles.
    `renamed_from`: its former names, so that an A/B pairs it with the base's variant of one.
    """

    name: str
    make: Factory
    reference: bool = False  # the row every other row's ratio_to_reference is measured against
    twin_of: str | None = None  # the variant this one is a version of (a relational pair)
    renamed_from: tuple[str, ...] = ()
    family: str = ""
    description: str = ""
    unsupported: Callable[..., str | None] | None = None  # (capability[, params]) -> why not
    plan: Callable[..., Any] | None = None
    # the variant's own function (what `make` times, on caller-given arguments): for code that
    # calls it outside a timed case, its tests and tools; never used by the gate
    call: Callable[..., Any] | None = None

    def unsupported_reason(
        self, capability: tuple[int, int] | None, params: Mapping[str, Any] | None = None
    ) -> str | None:
        if self.unsupported is None:
            return None
        if _takes_params(self.unsupported):
            return self.unsupported(capability, MappingProxyType(dict(params or {})))
        return self.unsupported(capability)


def _takes_params(fn: Callable[..., Any]) -> bool:
    """Whether `unsupported` is declared per case: a second positional parameter."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the one-argument form
        return False
    positional = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


@dataclass(frozen=True)
class Expectation:
    """`faster` beats `than`: their same-run time ratio stays below a bound at each value of `per`.

    The values and bounds are the baseline's: a rebaseline adds one where `faster` won clearly in
    every run (the policy's win_below and ratio_slack); the gate checks it on the same rounds'
    ratio. `where` limits it (``{"dtype": ("fp16",)}``); empty: wherever both are measured.
    """

    faster: str
    than: str
    per: str
    where: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def as_json(self) -> dict[str, Any]:
        """As results files carry it (machine_info.tilegate.expectations, its coverage)."""
        where = {k: list(v) for k, v in self.where.items()}
        return {"faster": self.faster, "than": self.than, "per": self.per, "where": where}


@dataclass(frozen=True)
class Work:
    """What one call does, for throughput: TFLOP/s from flops, GB/s from bytes."""

    flops: float | None = None
    bytes: float | None = None
    # the precision its FLOPs run at (fp16, bf16, fp8, tf32, fp32): which compute peak bounds
    # it (tilegate.peaks); None: no compute bound is known
    dtype: str | None = None


_BYTES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def parse_memory_tolerance(text: str | None) -> tuple[float, bool] | None:
    """A declared memory tolerance: (bytes, False) or (percent, True); None: not gated.
    '4 MiB' -> (4194304.0, False), '1 %' -> (1.0, True); ValueError for anything else."""
    if text is None:
        return None
    m = re.fullmatch(
        r"\s*(\d+(?:\.\d+)?)\s*(%|[KMG]i?B|B)?\s*", text if isinstance(text, str) else ""
    )
    if m is None:
        raise ValueError(
            f"memory_tolerance = {text!r}: expected bytes ('0', '4 MiB', '512 KB') or a "
            "percent ('1 %'), or None to record memory without gating it"
        )
    value, unit = float(m.group(1)), m.group(2) or "B"
    return (value, True) if unit == "%" else (value * _BYTES[unit], False)


@dataclass(frozen=True)
class Benchmark:
    """A project's benchmark: variants, grid, inputs, reference output, tolerance, work, relations.

    inputs(params, device, seed): the group's inputs, drawn once and shared by its variants.
    reference_output(params, inputs): the exact answer, in higher precision than the variants.
    tolerance: the error allowed, per dtype name (``params["dtype"]``) or a function of params.
    error(output, reference_output, params): the metric compared with it, run after the
    structural checks (count, shapes, unwritten NaN); None: the relative Frobenius error
    ||out - ref|| / ||ref||, the largest over a tuple's tensors (correctness.relative_error).
    work(params): a `Work` or a mapping {"flops", "bytes"}. tolerance_axes: the axes a tolerance
    override and the shard cost may name besides variant.
    """

    name: str
    variants: tuple[Variant, ...]
    profiles: tuple[Profile, ...]
    inputs: Callable[[Params, str, int], Any]
    reference_output: Callable[[Params, Any], Any]
    tolerance: Mapping[str, float] | Callable[[Params], float]
    error: Callable[[Any, Any, Params], float] | None = None
    work: Callable[[Params], Work | Mapping[str, float]] | None = None
    expectations: tuple[Expectation, ...] = ()
    tolerance_axes: tuple[str, ...] = ()
    default_profile: str | None = None  # None: the first profile
    # the profile whose grid the AOT fingerprint compiles (`tilegate fingerprint` without
    # --profile; None: the default profile), for variants that declare a `plan`
    fingerprint_profile: str | None = None
    # test-only injections (tilegate.plugin --inject wrong=NAME): a variant giving wrong output
    wrong: Callable[[Variant], Variant] | None = None
    description: str = ""
    # the peak GPU memory one call may allocate above its base's or baseline's: bytes ("0",
    # "4 MiB") or a percent ("1 %"); None: recorded, not gated (tilegate.judge.memory)
    memory_tolerance: str | None = "0"

    # -- derived ---------------------------------------------------------------------------

    @property
    def variant_map(self) -> Mapping[str, Variant]:
        return MappingProxyType({v.name: v for v in self.variants})

    @property
    def reference(self) -> Variant:
        return next(v for v in self.variants if v.reference)

    @property
    def profile_map(self) -> Mapping[str, Profile]:
        return MappingProxyType({p.name: p for p in self.profiles})

    def profile(self, name: str | None = None) -> Profile:
        name = name or self.default_profile or self.profiles[0].name
        found = self.profile_map.get(name)
        if found is None:
            raise KeyError(f"unknown profile {name!r}; known: {sorted(self.profile_map)}")
        return found

    def tolerance_for(self, params: Params) -> float:
        tol = self.tolerance
        return float(tol(params) if callable(tol) else tol[params["dtype"]])

    def work_for(self, params: Params) -> Work:
        got = Work() if self.work is None else self.work(params)
        return got if isinstance(got, Work) else Work(got.get("flops"), got.get("bytes"))

    def problems(self) -> list[str]:
        """What is wrong with this declaration (empty: nothing), each naming the part."""
        out = []
        names = [v.name for v in self.variants]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            out.append(f"two variants of one name: {dupes}")
        refs = [v.name for v in self.variants if v.reference]
        if len(refs) != 1:
            out.append(
                f"exactly one variant must have reference=True, found {len(refs)}"
                + (f" ({refs})" if refs else "")
            )
        known = set(names)
        for v in self.variants:
            if v.twin_of is not None and v.twin_of not in known:
                out.append(f"variant {v.name!r}: twin_of names an unknown variant {v.twin_of!r}")
        if not self.profiles:
            out.append("no profiles")
        try:
            parse_memory_tolerance(self.memory_tolerance)
        except ValueError as err:
            out.append(str(err))
        for p in self.profiles:
            axes = [a.name for a in p.axes]
            clash = sorted((set(axes) | set(p.fixed)) & RESERVED)
            if clash:
                out.append(f"profile {p.name!r}: parameter names reserved by tilegate: {clash}")
            if not p.axes or any(not a.values for a in p.axes):
                out.append(f"profile {p.name!r}: its grid has no cases (an axis without values)")
        every_axis = {a.name for p in self.profiles for a in p.axes}
        every_param = every_axis | {k for p in self.profiles for k in p.fixed}
        unknown_axes = [a for a in self.tolerance_axes if a not in every_axis]
        if unknown_axes:
            out.append(f"tolerance_axes name no axis of any profile: {unknown_axes}")
        for e in self.expectations:
            unknown_where = sorted(set(e.where) - every_param)
            if unknown_where:
                out.append(
                    f"expectation {e.faster} beats {e.than}: where names no parameter of any "
                    f"profile: {unknown_where}"
                )
            for who in (e.faster, e.than):
                if who not in known:
                    out.append(f"expectation {e.faster} beats {e.than}: unknown variant {who!r}")
            for p in self.profiles:
                if e.per not in {a.name for a in p.axes}:
                    out.append(
                        f"expectation {e.faster} beats {e.than}: per={e.per!r} is not an axis "
                        f"of profile {p.name!r}"
                    )
        return out
