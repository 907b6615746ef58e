"""The registry between the baseline and the head: a renamed variant (`renamed_from=`) judged
under its new name, a removed one's rows GONE and its expectations failed (a rename says so;
a removal would let its cases escape the gate)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from tilegate.judge.baseline import Baseline, expectation_id
from tilegate.judge.crosstile import ExpectationResult
from tilegate.judge.results import Run
from tilegate.judge.vocabulary import Status


def renamed_baseline(baseline: Baseline, run: Run) -> Baseline:
    """The baseline under the head's names (the results' `renamed`, from `renamed_from`)."""
    stored = {b.variant for b in baseline.rows.values()}
    stored |= {v for e in baseline.expectations for v in (e.faster, e.than)}
    moves = {
        old: new
        for new, olds in getattr(run.env, "renamed", {}).items()
        for old in olds
        if old in stored and new not in stored
    }
    if not moves:
        return baseline

    rows = {}
    for key, row in baseline.rows.items():
        new = moves.get(row.variant, row.variant)
        key = new + key[len(row.variant) :] if new != row.variant else key
        twin = moves.get(row.twin, row.twin) if row.twin is not None else None
        rows[key] = replace(row, key=key, variant=new, twin=twin)
    expectations = []
    for e in baseline.expectations:
        faster, than = moves.get(e.faster, e.faster), moves.get(e.than, e.than)
        expectations.append(
            replace(e, id=expectation_id(faster, than, e.where), faster=faster, than=than)
        )
    return replace(baseline, rows=MappingProxyType(rows), expectations=tuple(expectations))


def removed_variants(baseline: Baseline, run: Run) -> set[str]:
    """Variants the baseline holds rows or expectations of that the head's registry lacks."""
    if getattr(run.env, "registry", None) is None:
        return set()  # a results file from before the suite recorded its registry
    stored = {b.variant for b in baseline.rows.values()}
    stored |= {v for e in baseline.expectations for v in (e.faster, e.than)}
    return stored - set(run.env.registry)  # type: ignore[arg-type]


def gone_check(c: ExpectationResult, gone: set[str]) -> ExpectationResult:
    lost = [v for v in (c.expectation.faster, c.expectation.than) if v in gone]
    if not lost:
        return c
    return replace(
        c,
        status=Status.FAIL,
        note=f"variant {' and '.join(lost)} no longer in the registry: the expectation went "
        "with it (removed, not renamed)",
    )
