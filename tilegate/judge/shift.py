"""SHIFTED: whether a stored-baseline slowdown is the row's own or a shift of the machine.
Kernels timed in the same rounds share the GPU's power budget: one kernel's change moves cuBLAS
and unchanged neighbours too (4-5 % on the power-capped H200, docs/gate.md). A REGRESSED row
whose code is the baseline's and whose same-run ratio to the reference held is SHIFTED:
reported, never failed (`blame`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tilegate.judge import stats
from tilegate.judge.baseline import Baseline, BaselineRow
from tilegate.judge.results import Run
from tilegate.judge.vocabulary import Verdict

if TYPE_CHECKING:
    from tilegate.judge.verdict import RowVerdict


def base_ratio_to_reference(base: BaselineRow, baseline: Baseline, reference: str) -> float | None:
    """The row's ratio to the reference at rebaseline; for a baseline from before tilegate
    stored it, the ratio of the two rows' medians (not paired: a little noisier)."""
    if base.ratio_to_reference is not None:
        return base.ratio_to_reference
    ref = next(
        (b for b in baseline.rows.values() if (b.variant, b.group) == (reference, base.group)),
        None,
    )
    return base.median_s / ref.median_s if ref is not None else None


def blame(v: RowVerdict, runs: Sequence[Run], baseline: Baseline) -> RowVerdict:
    """Keep a REGRESSED row only if its code changed or it also slowed against the reference
    (the module's docstring); the reference row itself is judged on its own."""
    if v.base is None or v.now is None or v.reference or v.verdict is not Verdict.REGRESSED:
        return v
    row, base = v.now, v.base
    changed = None
    # Hashes compare code only under the same compiler: a Triton upgrade changes every hash,
    # and then only the ratio to the reference can tell which rows the upgrade slowed.
    then_triton = (baseline.provenance.get("software") or {}).get("triton")
    same_triton = runs[0].env.software.get("triton") == then_triton
    if (
        row.code_hash
        and base.code_hash
        and same_triton
        and same_scheme(row.code_hash, base.code_hash)
    ):
        changed = row.code_hash != base.code_hash
    reference = runs[0].reference
    then = base_ratio_to_reference(base, baseline, reference) if reference else None
    now = [
        r
        for run in runs
        if reference and (r := run.ratio(row.variant, reference, row.group)) is not None
    ]
    if then is None or not now:
        return replace(v, code_changed=changed, note=v.note + "; no reference row to tell a shift")
    rel = [stats.rel_change(r, then) for r in now]
    rel_delta = stats.median(rel)
    v = replace(v, rel_delta=rel_delta, code_changed=changed)
    if changed:  # once, though a confirmed row is judged here again
        said = "; its compiled code changed since the baseline"
        return replace(v, note=v.note if said in v.note else v.note + said)
    if stats.majority([d > base.tolerance for d in rel]):
        return replace(
            v, note=v.note + f"; also against {reference} in the same rounds ({rel_delta:+.1%})"
        )
    code = "was compiled by another Triton than the baseline's"
    if changed is False or same_triton:
        code = "is unchanged" if changed is False else "has no hash to compare"
    note = (
        f"slower by {v.delta:+.1%}, but its ratio to {reference} in the same rounds moved "
        f"{rel_delta:+.1%} and its code {code}: a machine or neighbour shift, not this row"
    )
    return replace(v, verdict=Verdict.SHIFTED, note=note)


def same_scheme(a: str, b: str) -> bool:
    """Whether two code hashes were taken the same way (a hash of another scheme: not comparable)."""
    return a.rsplit("sha256:", 1)[0] == b.rsplit("sha256:", 1)[0]
