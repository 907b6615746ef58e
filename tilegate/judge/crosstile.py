"""Relational expectations checked on same-run ratios; the pairs behind them, over their axis.

An expectation ("`tma_xtile_persistent` takes at most 0.70 of `tma_swizzle_persistent`'s time
at fp16 nt K = 128") pairs two variants the benchmark declares (tilegate.declare.Expectation);
its bounds, one per value of its axis, are baseline data. Checked on the ratio of the same rounds
of the same run, so runner drift can neither break nor fake it. A pair is the two variants at
one setting of the other axes, their ratio per value now and at rebaseline, and the crossover:
the first value where `faster` stops winning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tilegate.judge import stats
from tilegate.judge.baseline import Baseline, Expectation
from tilegate.judge.results import Run, matches
from tilegate.judge.vocabulary import Status


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation at one value of its axis, checked on the runs of a comparison."""

    expectation: Expectation
    value: Any
    max_ratio: float
    status: Status
    ratio: float | None = None  # median over runs of the same-run ratio
    run_ratios: tuple[float, ...] = ()
    baseline_ratio: float | None = None  # median of the ratios measured at rebaseline
    note: str = ""
    group: str | None = None  # the group it was measured in (None: not measured)

    @property
    def at(self) -> str:
        """'K=128': where along its axis."""
        return f"{self.expectation.per}={self.value}"

    @property
    def rows(self) -> tuple[str, str]:
        e = self.expectation
        group = self.group or "-".join([*map(str, e.where.values()), str(self.value)])
        return (f"{e.faster}-{group}", f"{e.than}-{group}")


def same_run_ratios(
    runs: Sequence[Run], faster: str, than: str, at: Mapping[str, Any]
) -> list[tuple[float, str]]:
    """(faster / than, its group) in each run that measured both at `at`, in the runs' order."""
    groups = [(run, run.group_of(at)) for run in runs]
    got = [(run.ratio(faster, than, g), g) for run, g in groups if g is not None]
    return [(r, g) for r, g in got if r is not None]


def check_expectation(
    e: Expectation, value: Any, max_ratio: float, runs: Sequence[Run], baseline_ratio: float | None
) -> ExpectationResult:
    """Broken when the same-run ratio exceeds max_ratio in a majority of the runs."""
    found = same_run_ratios(runs, e.faster, e.than, e.at(value))
    result = ExpectationResult(
        e, value, max_ratio, Status.NOT_MEASURED, baseline_ratio=baseline_ratio
    )
    if not found:
        return replace(result, note="both rows needed in the same run")
    ratios = [r for r, _ in found]
    broken = stats.majority([r > max_ratio for r in ratios])
    ratio = stats.median(ratios)
    note = ""
    if broken:
        note = (
            f"{e.faster} stopped winning"
            if ratio >= 1
            else f"{e.faster} still wins, by less than it must"
        )
    elif any(r > max_ratio for r in ratios):
        note = f"broken in {sum(r > max_ratio for r in ratios)} of {len(ratios)} runs, not in most"
    status = Status.FAIL if broken else Status.PASS
    return replace(
        result, status=status, ratio=ratio, run_ratios=tuple(ratios), note=note, group=found[0][1]
    )


@dataclass(frozen=True)
class Pair:
    """Two related variants at one setting of the other axes (`where`), over axis `per`."""

    faster: str
    than: str
    where: Mapping[str, Any]
    per: str
    values: tuple[Any, ...]
    now: dict[Any, float]  # same-run ratio per value in this run
    base: dict[Any, float]  # ratio per value at rebaseline
    ab_base: dict[Any, float] = field(default_factory=dict)  # A/B: the base commit's, same rounds
    # per value of `per`: the medians (s) of the `than` and the `faster` row, None where unmeasured
    medians: dict[Any, tuple[float | None, float | None]] = field(default_factory=dict)
    # where `faster` stops winning (`crossover`): now, and at rebaseline up to the largest value
    # measured now (None: it wins at every value; the baseline's None too without a baseline)
    crossover_now: Any = None
    crossover_base: Any = None

    @property
    def label(self) -> str:
        return ", ".join(str(v) for v in self.where.values())

    @staticmethod
    def crossover(ratios: dict[Any, float]) -> Any:
        """The smallest value where `faster` no longer wins (ratio >= 1); None if it wins at every one."""
        return next((v for v in sorted(ratios) if ratios[v] >= 1.0), None)


CrossTilePair = Pair  # its name when the only pairs were cross-tile kernels and their twins


def relation_points(
    run: Run, faster: str, than: str, per: str, where: Mapping[str, Any]
) -> dict[tuple[tuple[str, Any], ...], dict[Any, str]]:
    """{setting of the other axes: {value of `per`: group}} where both variants were measured."""
    out: dict[tuple[tuple[str, Any], ...], dict[Any, str]] = {}
    others = run.series(per)
    for row in run.rows.values():
        # a declared expectation's `where`: each named parameter one of its values
        allowed = all(row.params.get(k) in tuple(v) for k, v in where.items())
        if row.variant != faster or per not in row.params or not allowed:
            continue
        if run.find(than, row.group) is None:
            continue
        setting = tuple((a, row.params[a]) for a in others if a in row.params)
        out.setdefault(setting, {})[row.params[per]] = row.group
    return out


def crosstile_pairs(run: Run, baseline: Baseline | None) -> list[Pair]:
    """Every declared pair this run measured, per setting, with ratios now and at baseline."""
    out = []
    for faster, than, per, where in run.relations():
        for setting, groups in sorted(relation_points(run, faster, than, per, where).items()):
            at = dict(setting)
            ratios = {
                v: (run.ratio(faster, than, g), run.ratio(faster, than, g, side="base"))
                for v, g in groups.items()
            }
            now = {v: r for v, (r, _) in ratios.items() if r is not None}
            if not now:
                continue
            ab_base = {v: r for v, (_, r) in ratios.items() if r is not None}
            base = {
                b.params[per]: b.ratio_to_twin
                for b in (baseline.rows.values() if baseline is not None else ())
                if (b.variant, b.twin) == (faster, than)
                and matches(b.params, at)
                and b.ratio_to_twin
                and per in b.params
            }
            medians: dict[Any, tuple[float | None, float | None]] = {}
            for value, group in groups.items():
                slow, fast = run.find(than, group), run.find(faster, group)
                medians[value] = (slow.median_s if slow else None, fast.median_s if fast else None)
            top, values = max(now), tuple(sorted(now))
            was = Pair.crossover({k: r for k, r in base.items() if k <= top})
            pair = (faster, than, at, per, values, now, base, ab_base, medians)
            out.append(Pair(*pair, Pair.crossover(now), was))
    order = {v: i for i, v in enumerate(run.variant_order)}
    out.sort(key=lambda p: (order.get(p.faster, 99), tuple(p.where.values())))
    return out
