"""Benchmark cases and profiles: which (variant, dtype, layout, K) the perf suite measures.

Shapes are data, in one place. The case id (``xtile_persistent-fp16-nt-K128``) is the key that
joins a result to its baseline row: renaming one is a rebaseline, on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DTYPES = ("fp16", "bf16")
LAYOUTS = ("nt", "nn")

# Measurement order inside a group. The reference goes first so that every other row's
# ratio_to_torch is paired with a torch sample of the same round.
VARIANT_ORDER = (
    "torch",
    "tiled",
    "grouped",
    "persistent",
    "swizzle_persistent",
    "xtile_persistent",
    "tma_swizzle_persistent",
    "tma_xtile_persistent",
)

_ID_RE = re.compile(
    r"^(?P<variant>[a-z0-9_]+)-(?P<dtype>fp16|bf16)-(?P<layout>nn|nt)-K(?P<k>[0-9]+)$"
)


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
    min_time_s: float = 3.0  # ... and at least this long (tilegate.timing.TimerConfig)
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

    @property
    def id(self) -> str:
        return case_id(self.variant, self.dtype, self.layout, self.k)

    @property
    def group(self) -> str:
        """Cases of one group share inputs and are timed interleaved, round by round."""
        return f"{self.dtype}-{self.layout}-K{self.k}"

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


def case_id(variant: str, dtype: str, layout: str, k: int) -> str:
    return f"{variant}-{dtype}-{layout}-K{k}"


def parse_case_id(key: str) -> tuple[str, str, str, int]:
    """Split ``variant-dtype-layout-K<k>``; raise ValueError naming the id when it does not parse."""
    match = _ID_RE.match(key)
    if match is None:
        raise ValueError(f"case id {key!r} is not of the form <variant>-<fp16|bf16>-<nn|nt>-K<k>")
    return match["variant"], match["dtype"], match["layout"], int(match["k"])


def build_cases(
    profile: Profile,
    variants: tuple[str, ...] = VARIANT_ORDER,
    *,
    ks: tuple[int, ...] | None = None,
    m: int | None = None,
    n: int | None = None,
    only: frozenset[str] | None = None,
) -> list[Case]:
    """All cases of a profile, grouped (dtype, layout, K) and in measurement order inside a group.

    `only` keeps the groups that contain at least one of the given case ids (a re-measurement of
    suspect rows re-times their whole group so that same-run ratios stay paired).
    """
    for k in ks or profile.ks:
        if k < 1:
            raise ValueError(f"K must be >= 1, got {k}")
    rank = {name: i for i, name in enumerate(VARIANT_ORDER)}
    unknown = [v for v in variants if v not in rank]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {list(VARIANT_ORDER)}")
    cases = sorted(
        Case(dtype, layout, k, rank[v], v, m or profile.m, n or profile.n)
        for dtype in profile.dtypes
        for layout in profile.layouts
        for k in (ks or profile.ks)
        for v in variants
    )
    if only is not None:
        groups = {c.group for c in cases if c.id in only}
        missing = sorted(only - {c.id for c in cases})
        if missing:
            raise ValueError(f"case ids not in profile {profile.name!r}: {missing}")
        cases = [c for c in cases if c.group in groups]
    return cases
