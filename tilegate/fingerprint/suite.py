"""Which kernels the fingerprint covers: every Triton variant of the registry x dtype x layout x
architecture of a perf profile, each planned exactly as the suite plans it; every suite K planned
and specialized, and the Ks grouped by compile key (docs/fingerprint.md, "One K": a case's ids
gain `@K<first K of the group>` where K changes the compiled kernel).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tilegate.errors import InputError

from .compile import Specialization, Target, specialize

# A mutation hook for tests and experiments: (case, launch) -> launch actually compiled.
Mutator = Callable[["KernelCase", Any], Any]


@dataclass(frozen=True)
class KernelCase:
    """One compiled kernel of the suite."""

    id: str  # "xtile_persistent-fp16-nn-sm90"
    variant: str
    dtype: str
    layout: str
    target: Target
    ks: tuple[int, ...]  # the suite's Ks that run exactly this compiled kernel
    xtile: bool  # a cross-tile variant (the registry names its twin)
    launch: Any  # tilegate.launch.KernelLaunch (the variant's declared plan)
    spec: Specialization

    @property
    def pipelined(self) -> bool:
        """The plan asks Triton for a software pipeline (num_stages >= 2)."""
        return int(self.launch.num_stages) >= 2

    def config(self) -> dict[str, Any]:
        """The launch configuration, as stored beside the facts."""
        return {
            "num_warps": int(self.launch.num_warps),
            "num_stages": int(self.launch.num_stages),
            "constexprs": {k: _plain(v) for k, v in sorted(self.launch.constexprs.items())},
            "signature": self.spec.signature_text(),
        }


@dataclass(frozen=True)
class Skipped:
    id: str
    reason: str


def _plain(v: Any) -> Any:
    """A JSON-friendly constexpr value."""
    v = getattr(v, "value", v)  # tl.constexpr
    return v if isinstance(v, (bool, int, float, str)) or v is None else str(v)


def kernel_id(variant: str, dtype: str, layout: str, target: Target) -> str:
    return f"{variant}-{dtype}-{layout}-{target.short}"


def _matches(name: str, patterns: Sequence[str] | None) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def collect(
    targets: Sequence[Target],
    *,
    profile: GridView,
    variants: Sequence[str] | None = None,
    mutate: Mutator | None = None,
) -> tuple[list[KernelCase], list[Skipped]]:
    """Plan and specialize every kernel of `profile`."""
    registry = benchmark().variant_map
    unknown = [p for p in variants or () if not any(fnmatch.fnmatchcase(n, p) for n in registry)]
    if unknown:
        raise InputError(f"no variant matches {unknown}; known: {sorted(registry)}")
    cases: list[KernelCase] = []
    skipped: list[Skipped] = []
    for name, variant in registry.items():
        if variant.plan is None or not _matches(name, variants):
            continue  # the torch reference has no Triton kernel
        xtile = variant.twin_of is not None
        for target, dtype, layout in itertools.product(targets, profile.dtypes, profile.layouts):
            base = kernel_id(name, dtype, layout, target)
            reason = variant.unsupported_reason(target.capability)
            if reason:
                skipped.append(Skipped(base, reason))
                continue
            groups: dict[str, list[tuple[int, Any, Specialization]]] = {}
            for k in profile.ks:
                try:
                    launch = variant.plan(
                        profile.m,
                        profile.n,
                        k,
                        dtype=dtype,
                        layout=layout,
                        capability=target.capability,
                        num_sms=target.num_sms,
                    )
                except (ValueError, TypeError) as err:
                    raise InputError(f"{base}: plan(K={k}) failed: {err}") from err
                probe = KernelCase(base, name, dtype, layout, target, (k,), xtile, launch, _NO_SPEC)
                if mutate is not None:
                    launch = mutate(probe, launch)
                spec = specialize(launch, target)
                groups.setdefault(spec.key, []).append((k, launch, spec))
            for members in groups.values():
                ks = tuple(k for k, _, _ in members)
                cid = base if len(groups) == 1 else f"{base}@K{ks[0]}"
                _, launch, spec = members[-1]
                # what Triton warned while specializing any K of the group
                warned = tuple(w for _, _, sp in members for w in sp.warned)
                spec = dataclasses.replace(spec, warned=warned)
                cases.append(KernelCase(cid, name, dtype, layout, target, ks, xtile, launch, spec))
    return cases, skipped


_NO_SPEC = Specialization({}, {}, {}, {}, "")


# --- the configured benchmark ([tool.tilegate]), as the fingerprint sees it -------------------


def benchmark() -> Any:
    """The benchmark [tool.tilegate] names (its variants' `plan` is what is compiled)."""
    from tilegate.config import find

    return find().load_benchmark()


@dataclass(frozen=True)
class GridView:
    """A profile of a matmul-shaped benchmark (axes dtype, layout, K; fixed M, N): what the
    fingerprint's plans take."""

    name: str
    dtypes: tuple[str, ...]
    layouts: tuple[str, ...]
    ks: tuple[int, ...]
    m: int
    n: int


def profiles() -> dict[str, GridView]:
    """The configured benchmark's profiles that the fingerprint can plan (InputError if none)."""
    out = {}
    for p in benchmark().profiles:
        axes = {a.name: tuple(a.values) for a in p.axes}
        if {"dtype", "layout", "K"} <= set(axes) and {"M", "N"} <= set(p.fixed):
            out[p.name] = GridView(
                p.name, axes["dtype"], axes["layout"], axes["K"], p.fixed["M"], p.fixed["N"]
            )
    if not out:
        raise InputError(
            "the fingerprint plans matmul-shaped profiles (axes dtype, layout, K; fixed M, N); "
            "the configured benchmark has none"
        )
    return out
