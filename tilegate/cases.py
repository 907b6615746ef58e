"""Benchmark cases: which (variant, grid point) a run measures, from a declared profile.

A case's parameters are its grid point (one value per axis of the profile) plus the profile's
fixed values. The case id (``xtile_persistent-fp16-nt-K128``: the variant and the axis labels)
is the key that joins a result to its baseline row: renaming one is a rebaseline, on purpose.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tilegate.declare import Profile

BASE_SUFFIX = "@base"


@dataclass(frozen=True)
class Case:
    """One benchmark: a variant at one grid point (`labels` in axis order, `params` all values)."""

    variant: str
    labels: tuple[str, ...]
    params: Mapping[str, Any] = field(compare=False)
    order: tuple[Any, ...] = ()  # the grid point's position: how cases sort
    variant_rank: int = 0
    base: bool = False  # A/B runs: the base commit's version of the variant, timed beside it

    @property
    def id(self) -> str:
        """The case id, the same on both sides of an A/B run: the join key of every result."""
        return "-".join((self.variant, *self.labels))

    @property
    def slot(self) -> str:
        """Which implementation this case runs: the variant, or its base version (`<variant>@base`)."""
        return f"{self.variant}{BASE_SUFFIX}" if self.base else self.variant

    @property
    def test_id(self) -> str:
        """The pytest id: the case id, with "@base" for the base side of an A/B run."""
        return f"{self.id}{BASE_SUFFIX}" if self.base else self.id

    @property
    def group(self) -> str:
        """Cases of one group share inputs and are timed interleaved, round by round."""
        return "-".join(self.labels)


def select_variants(order: Sequence[str], wanted: Sequence[str] | None = None) -> tuple[str, ...]:
    """The variants to measure, in run order (`order`: the declaration's); all of them by default."""
    if wanted is None:
        return tuple(order)
    unknown = [v for v in wanted if v not in order]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {list(order)}")
    return tuple(v for v in order if v in wanted)


def parse_value(text: str, like: Any) -> Any:
    """`text` as the type of `like` (an axis's declared value): int, float or str."""
    if isinstance(like, bool) or not isinstance(like, (int, float)):
        return text
    try:
        return type(like)(text)
    except ValueError as err:
        raise ValueError(f"{text!r} is not a {type(like).__name__}") from err


def build_cases(
    profile: Profile,
    variants: Sequence[str],
    *,
    axes: Mapping[str, Sequence[Any]] | None = None,
    fixed: Mapping[str, Any] | None = None,
    only: frozenset[str] | None = None,
    base_variants: Sequence[str] = (),
) -> list[Case]:
    """All cases of a profile, by grid point, in `variants` (run) order inside a group.

    `axes` and `fixed` replace some values (--perf-axis, --perf-set). `base_variants` (A/B) adds
    each variant's base version right after it; a variant only the base has comes last. `only`
    keeps the groups holding one of these case ids (a re-measurement re-times whole groups, so
    same-run ratios stay paired)."""
    axes = dict(axes or {})
    unknown = sorted(set(axes) - {a.name for a in profile.axes})
    if unknown:
        raise ValueError(
            f"unknown axis {unknown} for profile {profile.name!r}; its axes: "
            f"{[a.name for a in profile.axes]}"
        )
    consts = {**profile.fixed, **(fixed or {})}
    unknown = sorted(set(fixed or {}) - set(profile.fixed))
    if unknown:
        raise ValueError(
            f"unknown fixed parameter {unknown} for profile {profile.name!r}; its fixed "
            f"parameters: {sorted(profile.fixed)}"
        )
    grid = [(a, tuple(axes.get(a.name, a.values))) for a in profile.axes]
    if any(not values for _, values in grid):
        raise ValueError(f"profile {profile.name!r}: the grid has no cases")
    order = list(variants) + [v for v in base_variants if v not in variants]
    sides = [(v, False) for v in variants] + [(v, True) for v in base_variants]
    points = []
    for values in itertools.product(*(vs for _, vs in grid)):
        params = MappingProxyType(
            {**{a.name: v for (a, _), v in zip(grid, values, strict=False)}, **consts}
        )
        labels = tuple(a.show(v) for (a, _), v in zip(grid, values, strict=False))
        points.append((values, labels, params))
    cases = sorted(
        (
            Case(v, labels, params, values, order.index(v), base)
            for values, labels, params in points
            for v, base in sides
        ),
        key=lambda c: (c.order, c.variant_rank, c.base),
    )
    if only is not None:
        groups = {c.group for c in cases if c.id in only}
        missing = sorted(only - {c.id for c in cases})
        if missing:
            raise ValueError(f"case ids not in profile {profile.name!r}: {missing}")
        cases = [c for c in cases if c.group in groups]
    return cases
