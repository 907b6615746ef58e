"""Which rounds of its group a row was timed in, and pairing two rows over the rounds both were.

An A/B run's budget (tilegate.harness.budget) times some rows in fewer rounds than others; a row
says which of its group's rounds (numbered in time order over all sweeps) its samples are, as
half-open ranges (`extra_info.tilegate.timed_in`). Pure logic: the judge reads it, the harness
writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Ranges = tuple[tuple[int, int], ...]


def add_range(ranges: Ranges, start: int, stop: int) -> Ranges:
    """`ranges` with [start, stop) appended (merged into the last range when adjacent)."""
    if stop <= start:
        return ranges
    if ranges and ranges[-1][1] > start:
        raise ValueError(f"rounds must be added in order: {ranges[-1]} then [{start}, {stop})")
    if ranges and ranges[-1][1] == start:
        return (*ranges[:-1], (ranges[-1][0], stop))
    return (*ranges, (start, stop))


def covered(ranges: Ranges) -> int:
    return sum(b - a for a, b in ranges)


def check_ranges(ranges: Any, samples: int) -> Ranges:
    """`ranges` read from a file, validated against the row's sample count; ValueError why not."""
    if not isinstance(ranges, list) or not all(
        isinstance(r, list)
        and len(r) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in r)
        for r in ranges
    ):
        raise ValueError(f"timed_in is {ranges!r}; expected [[start, stop], ...] round ranges")
    out: Ranges = ()
    last = 0
    for a, b in ranges:
        if a < last or b <= a:
            raise ValueError(f"timed_in {ranges!r}: ranges must be ordered, disjoint, non-empty")
        out, last = (*out, (a, b)), b
    if covered(out) != samples:
        raise ValueError(
            f"timed_in {ranges!r} covers {covered(out)} rounds but the row has {samples} samples"
        )
    return out


def _rounds(ranges: Ranges | None, n: int) -> list[int]:
    """The group's round numbers of a row's samples, in order (None: every round, 0..n)."""
    return [r for a, b in (ranges if ranges is not None else ((0, n),)) for r in range(a, b)]


def common_rounds(x_in: Ranges | None, nx: int, y_in: Ranges | None, ny: int) -> list[int]:
    """The group's round numbers both rows were timed in, in order: the rounds `aligned` pairs."""
    xs = set(_rounds(x_in, nx))
    return [r for r in _rounds(y_in, ny) if r in xs]


def aligned(
    x: Sequence[float], x_in: Ranges | None, y: Sequence[float], y_in: Ranges | None
) -> tuple[list[float], list[float]]:
    """The samples of x and y in the rounds both were timed in (None: every round, 0..len)."""
    if x_in == y_in:
        return list(x), list(y)
    xi = {r: i for i, r in enumerate(_rounds(x_in, len(x)))}
    yi = {r: i for i, r in enumerate(_rounds(y_in, len(y)))}
    common = sorted(set(xi) & set(yi))
    return [x[xi[r]] for r in common], [y[yi[r]] for r in common]
