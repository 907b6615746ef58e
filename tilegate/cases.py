"""Benchmark cases and profiles: which (variant, dtype, layout, K) the perf suite measures.

Shapes are data, in one place. The case id (``xtile_persistent-fp16-nt-K128``) is the key that
joins a result to its baseline row: renaming one is a rebaseline, on purpose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """A named set of cases: the cross product of its dtypes, layouts and K values."""

    name: str
    dtypes: tuple[str, ...]
    layouts: tuple[str, ...]
    ks: tuple[int, ...]
    m: int = 16384
    n: int = 16384
    rounds: int = 150  # at least this many timed rounds per group ...
    min_time_s: float = 3.0  # ... and at least this long (tilegate.harness.timing.TimerConfig)
    passes: int = 5  # each group's rounds are spread over this many sweeps across all groups
    soak_s: float = 15.0  # untimed run of the run's own kernels before the first sweep
    description: str = ""


PROFILES: dict[str, Profile] = {
    "quick": Profile(
        "quick",
        ("fp16",),
        ("nt",),
        (128, 512, 4096),
        min_time_s=2.5,
        passes=3,
        soak_s=3.0,
        description="pull-request check: the write-up's small, middle and large K",
    ),
    "default": Profile(
        "default",
        ("fp16",),
        ("nt", "nn"),
        (128, 256, 512, 1024, 2048, 4096),
        rounds=300,  # the K = 4096 groups, the noisiest (power-capped), get ~8 s instead of 5
        min_time_s=5.0,
        passes=10,
        description="both B layouts, every K of the write-up and the calibration",
    ),
    "full": Profile(
        "full",
        ("fp16", "bf16"),
        ("nt", "nn"),
        (64, 128, 256, 512, 1024, 2048, 4096, 8192),
        description="adds bf16 and the extreme K values",
    ),
    # CPU pipeline proof under TRITON_INTERPRET=1: tiny shapes, timings meaningless.
    "smoke": Profile(
        "smoke",
        ("fp16",),
        ("nt", "nn"),
        (24, 40),
        m=40,
        n=48,
        rounds=3,
        min_time_s=0.0,
        soak_s=0.0,
        description="CPU interpreter, tiny shapes: proves the pipeline, measures nothing",
    ),
}


@dataclass(frozen=True, order=True)
class Case:
    """One benchmark: a variant at one dtype, B layout and K (M and N come from the profile)."""

    dtype: str
    layout: str
    k: int
    variant_rank: int
    variant: str
    m: int
    n: int
    base: bool = False  # A/B runs: the base commit's version of the variant, timed beside it

    @property
    def id(self) -> str:
        """The case id, the same on both sides of an A/B run: the join key of every result."""
        return case_id(self.variant, self.dtype, self.layout, self.k)

    @property
    def slot(self) -> str:
        """Which kernel this case runs: the variant, or its base version (`<variant>@base`)."""
        return f"{self.variant}{BASE_SUFFIX}" if self.base else self.variant

    @property
    def test_id(self) -> str:
        """The pytest id: the case id, with "@base" for the base side of an A/B run."""
        return f"{self.id}{BASE_SUFFIX}" if self.base else self.id

    @property
    def group(self) -> str:
        """Cases of one group share inputs and are timed interleaved, round by round."""
        return f"{self.dtype}-{self.layout}-K{self.k}"

    @property
    def flops(self) -> float:
        return matmul_flops(self.m, self.n, self.k)


BASE_SUFFIX = "@base"


def matmul_flops(M: int, N: int, K: int) -> float:
    """Floating-point operations of one M x N x K matmul (a multiply and an add per term)."""
    return 2.0 * M * N * K


def case_id(variant: str, dtype: str, layout: str, k: int) -> str:
    return f"{variant}-{dtype}-{layout}-K{k}"


def select_variants(order: Sequence[str], wanted: Sequence[str] | None = None) -> tuple[str, ...]:
    """The variants to measure, in run order (`order`: the registry's); all of them by default."""
    if wanted is None:
        return tuple(order)
    unknown = [v for v in wanted if v not in order]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {list(order)}")
    return tuple(v for v in order if v in wanted)


def build_cases(
    profile: Profile,
    variants: Sequence[str],
    *,
    ks: tuple[int, ...] | None = None,
    m: int | None = None,
    n: int | None = None,
    only: frozenset[str] | None = None,
    base_variants: Sequence[str] = (),
) -> list[Case]:
    """All cases of a profile, grouped (dtype, layout, K) and in `variants` order inside a group.

    `variants` is in run order (`select_variants`). `base_variants` (an A/B run) adds, right
    after each variant, its base version where the base has it; a variant only the base has
    ("removed" in the head) comes last. `only` keeps the groups that contain at least one of the
    given case ids (a re-measurement of suspect rows re-times their whole group so that
    same-run ratios stay paired).
    """
    order = list(variants) + [v for v in base_variants if v not in variants]
    sides = [(v, False) for v in variants] + [(v, True) for v in base_variants]
    for k in ks or profile.ks:
        if k < 1:
            raise ValueError(f"K must be >= 1, got {k}")
    cases = sorted(
        Case(dtype, layout, k, order.index(v), v, m or profile.m, n or profile.n, base)
        for dtype in profile.dtypes
        for layout in profile.layouts
        for k in (ks or profile.ks)
        for v, base in sides
    )
    if only is not None:
        groups = {c.group for c in cases if c.id in only}
        missing = sorted(only - {c.id for c in cases})
        if missing:
            raise ValueError(f"case ids not in profile {profile.name!r}: {missing}")
        cases = [c for c in cases if c.group in groups]
    return cases
