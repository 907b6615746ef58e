"""Cross-tile against its twin: expectations checked on same-run ratios, pairs, crossover K.

An expectation ("`tma_xtile_persistent` takes at most 0.70 of `tma_swizzle_persistent`'s time
at fp16 nt K = 128") is baseline data, checked on the ratio measured in the same rounds of the
same run, so runner drift can neither break nor fake it; it is broken when the ratio exceeds
max_ratio in a majority of the runs (the first run and its confirmations). A cross-tile pair is
a cross-tile variant and its twin at one (dtype, layout), with their ratio per K now and at
rebaseline, and the crossover K where cross-tile stops winning.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from tilegate.judge import stats
from tilegate.judge.baseline import Baseline, Expectation
from tilegate.judge.results import Run


class Status(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    NOT_MEASURED = "NOT MEASURED"


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation at one K, checked on the runs of a comparison."""

    expectation: Expectation
    K: int
    max_ratio: float
    status: Status
    ratio: float | None = None  # median over runs of the same-run ratio
    run_ratios: tuple[float, ...] = ()
    baseline_ratio: float | None = None  # median of the ratios measured at rebaseline
    note: str = ""

    @property
    def rows(self) -> tuple[str, str]:
        e = self.expectation
        return (
            f"{e.faster}-{e.dtype}-{e.layout}-K{self.K}",
            f"{e.than}-{e.dtype}-{e.layout}-K{self.K}",
        )


def check_expectation(
    e: Expectation, K: int, max_ratio: float, runs: Sequence[Run], baseline_ratio: float | None
) -> ExpectationResult:
    """Broken when the same-run ratio exceeds max_ratio in a majority of the runs."""
    ratios = tuple(
        r
        for r in (run.ratio(e.faster, e.than, e.dtype, e.layout, K) for run in runs)
        if r is not None
    )
    if not ratios:
        return ExpectationResult(
            e,
            K,
            max_ratio,
            Status.NOT_MEASURED,
            baseline_ratio=baseline_ratio,
            note="both rows needed in the same run",
        )
    broken = stats.majority([r > max_ratio for r in ratios])
    ratio = stats.median(ratios)
    note = ""
    if broken:
        note = (
            "cross-tile stopped winning"
            if ratio >= 1
            else "cross-tile still wins, by less than it must"
        )
    elif any(r > max_ratio for r in ratios):
        note = f"broken in {sum(r > max_ratio for r in ratios)} of {len(ratios)} runs, not in most"
    return ExpectationResult(
        e, K, max_ratio, Status.FAIL if broken else Status.PASS, ratio, ratios, baseline_ratio, note
    )


@dataclass(frozen=True)
class CrossTilePair:
    """A cross-tile variant and its twin, at one (dtype, layout), over K."""

    faster: str
    than: str
    dtype: str
    layout: str
    Ks: tuple[int, ...]
    now: dict[int, float]  # same-run ratio per K in this run
    base: dict[int, float]  # ratio per K at rebaseline
    ab_base: dict[int, float] = field(default_factory=dict)  # A/B: the base commit's, same rounds

    @staticmethod
    def crossover(ratios: dict[int, float]) -> int | None:
        """The smallest K where cross-tile no longer wins (ratio >= 1); None if it wins at every K."""
        return next((K for K in sorted(ratios) if ratios[K] >= 1.0), None)


def crosstile_pairs(run: Run, baseline: Baseline | None) -> list[CrossTilePair]:
    """Every (cross-tile variant, twin, dtype, layout) this run measured, with ratios now and at baseline."""
    keys = sorted({(r.variant, r.twin, r.dtype, r.layout) for r in run.rows.values() if r.twin})
    order = {v: i for i, v in enumerate(run.variant_order)}
    keys.sort(key=lambda k: (order.get(k[0], 99), k[2], k[3]))
    out = []
    for faster, than, dtype, layout in keys:
        assert than is not None
        now: dict[int, float] = {}
        base: dict[int, float] = {}
        ab_base: dict[int, float] = {}
        for row in run.rows.values():
            if (row.variant, row.dtype, row.layout) != (faster, dtype, layout):
                continue
            ratio = run.ratio(faster, than, dtype, layout, row.K)
            if ratio is not None:
                now[row.K] = ratio
            theirs = run.ratio(faster, than, dtype, layout, row.K, side="base")
            if theirs is not None:
                ab_base[row.K] = theirs
        if baseline is not None:
            for b in baseline.rows.values():
                if (b.variant, b.twin, b.dtype, b.layout) == (
                    faster,
                    than,
                    dtype,
                    layout,
                ) and b.ratio_to_twin:
                    base[b.K] = b.ratio_to_twin
        if now:
            out.append(
                CrossTilePair(faster, than, dtype, layout, tuple(sorted(now)), now, base, ab_base)
            )
    return out
