"""Rebaseline: a new baseline from repeated runs of the suite (docs/gate.md, "Baselines").

Rows are measured again (median of the per-run medians, drift from their spread, a tolerance from
the policy), the old baseline's unmeasured rows kept, expectation checks derived for the declared
pairs where `faster` beat `than` clearly in EVERY run (ratio <= win_below; max_ratio the worst
ratio plus `ratio_slack`, capped); a run slower than the old baseline allows is refused unless
accepted (tilegate.judge.rebasereview: what the reviewer reads).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tilegate.errors import InputError
from tilegate.judge import autotune, memory, stats
from tilegate.judge.baseline import (
    Baseline,
    BaselineRow,
    Bound,
    Expectation,
    baseline_path,
    expectation_id,
)
from tilegate.judge.crosstile import relation_points, same_run_ratios
from tilegate.judge.policy import Policy, Tolerances
from tilegate.judge.rebasereview import Rebaseline, review, run_warnings
from tilegate.judge.results import Row, Run, describe_gpu, gpu_json, gpu_mismatch, provenance_of
from tilegate.markdown import listing


def _same(runs: Sequence[Run], what: str, get: Any) -> None:
    values = {r.path.name: get(r) for r in runs}
    if len(set(map(repr, values.values()))) > 1:
        which = ", ".join(f"{v!r} ({name})" for name, v in values.items())
        raise InputError(
            f"the runs differ in {what}: {which}. A baseline is one environment: rebaseline from runs of one."
        )


def _ensure_one_environment(runs: Sequence[Run]) -> None:
    for run in runs:
        if run.env.injected:
            raise InputError(
                f"results {run.path} ran with TEST-ONLY injections {list(run.env.injected)}; "
                "it cannot become a baseline"
            )
    _same(runs, "GPU model", lambda r: r.env.gpu.slug)
    # the slug is a label: the same label on another GPU is another GPU
    _same(runs, "GPU", lambda r: describe_gpu(r.env.gpu))
    _same(runs, "mode (gpu vs smoke)", lambda r: r.env.mode)
    _same(runs, "driver", lambda r: r.env.gpu.driver)
    _same(runs, "CUDA", lambda r: r.env.gpu.cuda)
    _same(runs, "software versions", lambda r: dict(r.env.software))
    _same(runs, "harness version", lambda r: r.env.harness_version)
    _same(runs, "L2 flush", lambda r: r.env.l2_flush)
    _same(runs, "timer", lambda r: r.env.timer)
    _same(runs, "benchmark", lambda r: r.env.benchmark)
    shapes: dict[str, tuple[dict[str, Any], Path]] = {}
    for run in runs:
        for row in run.rows.values():
            seen = shapes.setdefault(row.key, (dict(row.params), run.path))
            if seen[0] != dict(row.params):
                raise InputError(
                    f"row {row.key} has parameters {seen[0]} in {seen[1]} but {dict(row.params)} "
                    f"in {run.path}; rebaseline from runs of one shape"
                )


def _measured_row(key: str, per_run: list[tuple[Run, Row]], tolerances: Tolerances) -> BaselineRow:
    first = per_run[0][1]
    run_medians = tuple(r.median_s for _, r in per_run)
    pooled = [s for _, r in per_run for s in r.samples_s]
    if len(per_run) >= 2:
        drift, source = stats.run_drift(run_medians), f"{len(per_run)} runs"
    else:
        drift, source = stats.single_run_drift(first.samples_s), "1 run (95% CI of the median)"
    tol, tol_source, noisy = tolerances.tolerance(first.variant, first.params, drift)
    twin = first.twin
    ratios = [
        r
        for run, row in per_run
        if twin and (r := run.ratio(row.variant, twin, row.group)) is not None
    ]
    to_ref = [
        r
        for run, row in per_run
        if run.reference
        and not row.reference
        and (r := run.ratio(row.variant, run.reference, row.group)) is not None
    ]
    hashes = {row.code_hash for _, row in per_run}
    if len(hashes) > 1:
        raise InputError(
            f"row {key} ran different compiled code in different runs ({len(hashes)} code hashes): "
            "a baseline is one commit's code; rebaseline from runs of one"
        )
    tflops = [r.tflops for _, r in per_run if r.tflops is not None]
    last = max(per_run, key=lambda rr: rr[0].env.datetime or "")[0].env
    return BaselineRow(
        key=key,
        variant=first.variant,
        params=first.params,
        group=first.group,
        median_s=stats.median(run_medians),
        run_medians_s=run_medians,
        drift=drift,
        drift_source=source,
        tolerance=tol,
        tolerance_source=tol_source,
        too_noisy=noisy,
        samples_s=tuple(stats.quantile_summary(pooled, tolerances.policy.quantiles)),
        n_samples=len(pooled),
        measured=MappingProxyType(
            {
                "date": last.datetime,
                "commit": last.commit,
                "triton": last.software.get("triton"),
                "torch": last.software.get("torch"),
            }
        ),
        twin=first.twin,
        ratio_to_twin=stats.median(ratios) if ratios else None,
        ratio_to_twin_runs=tuple(ratios),
        tflops=stats.median(tflops) if tflops else None,
        ratio_to_reference=stats.median(to_ref) if to_ref else None,
        autotune=autotune.per_run([r.autotune for _, r in per_run]),
        code_hash=hashes.pop(),
        memory=memory.of_runs([r.memory for _, r in per_run], last.memory_tolerance),
    )


Slot = tuple[str, str, str, tuple[tuple[str, Any], ...]]  # faster, than, per, where


def _derive_bounds(runs: Sequence[Run], policy: Policy) -> dict[Slot, dict[Any, Bound | None]]:
    """Per declared pair and setting of the other axes, per measured value of its axis: a Bound
    where `faster` clearly won in every run, else None."""
    points: dict[Slot, dict[Any, list[tuple[Run, str]]]] = {}
    for run in runs:
        for faster, than, per, where in run.relations():
            for setting, groups in relation_points(run, faster, than, per, where).items():
                slot = points.setdefault((faster, than, per, setting), {})
                for value, group in groups.items():
                    slot.setdefault(value, []).append((run, group))
    found: dict[Slot, dict[Any, Bound | None]] = {}
    for key in sorted(points, key=repr):
        faster, than, _, _ = key
        for value in sorted(points[key]):
            got = (run.ratio(faster, than, group) for run, group in points[key][value])
            ratios = tuple(r for r in got if r is not None)
            if not ratios:
                continue
            worst, bounds = max(ratios), found.setdefault(key, {})
            up = math.ceil(worst * (1 + policy.ratio_slack) * 1000 - 1e-9) / 1000  # 3 digits
            won = worst <= policy.win_below
            bounds[value] = Bound(value, min(up, policy.ratio_cap), ratios) if won else None
    return found


def _merge_expectations(
    runs: Sequence[Run], old: Baseline | None, policy: Policy
) -> tuple[list[Expectation], list[str], list[str], int]:
    """New expectations (measured K replaced, unmeasured K kept), the diff lines, refusals, and
    how many checks loosened (max_ratio grew)."""
    derived = _derive_bounds(runs, policy)
    old_exps = {e.id: e for e in old.expectations} if old is not None else {}
    lines: list[str] = []
    refusals: list[str] = []
    merged, loosened = [], 0
    keys: dict[str, Slot] = {
        e.id: (e.faster, e.than, e.per, tuple(e.where.items())) for e in old_exps.values()
    }
    for slot in derived:
        keys.setdefault(expectation_id(slot[0], slot[1], dict(slot[3])), slot)
    for eid, (faster, than, per, setting) in sorted(keys.items()):
        where = dict(setting)
        before = old_exps.get(eid)
        old_checks = {c.value: c for c in before.bounds} if before else {}
        measured = derived.get((faster, than, per, setting), {})
        # an unmeasured check is kept as reviewed
        checks = {v: c for v, c in old_checks.items() if v not in measured}
        checks.update({v: c for v, c in measured.items() if c is not None})
        for value in sorted(measured):
            was, fresh = old_checks.get(value), measured[value]
            at = f"{per}={value}"
            got = (
                fresh.measured
                if fresh is not None
                else tuple(r for r, _ in same_run_ratios(runs, faster, than, {**where, per: value}))
            )
            if was is None and fresh is not None:
                lines.append(
                    f"+ {eid} {at}: max_ratio {fresh.max_ratio:.3f} (measured {_ratios(got)})"
                )
            elif was is not None and fresh is None:
                lines.append(
                    f"- {eid} {at}: REMOVED, {faster} no longer wins clearly (measured {_ratios(got)}, "
                    f"was max_ratio {was.max_ratio:.3f})"
                )
            elif was and fresh and abs(was.max_ratio - fresh.max_ratio) >= 0.0005:
                tag = "  LOOSENED" if fresh.max_ratio > was.max_ratio else ""
                loosened += bool(tag)
                lines.append(
                    f"~ {eid} {at}: max_ratio {was.max_ratio:.3f} -> {fresh.max_ratio:.3f}{tag} (measured {_ratios(got)})"
                )
            if was is not None and got and stats.median(got) > was.max_ratio:
                refusals.append(
                    f"expectation {eid} at {at}: these runs break it (ratio {stats.median(got):.3f} > "
                    f"max_ratio {was.max_ratio:.3f}); a run where {faster} stopped winning must not remove it silently"
                )
        if checks:
            bounds = tuple(sorted(checks.values(), key=lambda c: c.value))
            merged.append(Expectation(eid, faster, than, MappingProxyType(where), per, bounds))
    return merged, lines, refusals, loosened


def _provenance(
    runs: Sequence[Run], tolerances_path: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(gpu, provenance) of a baseline built from these (already checked to agree) runs."""
    env = runs[0].env
    last = max(runs, key=lambda r: r.env.datetime or "")
    gpu = {**gpu_json(env.gpu), "memory_gib": env.gpu.memory_gib}
    provenance = provenance_of(runs)
    for entry, r in zip(provenance["runs"], runs, strict=True):
        entry.update(dirty=r.env.dirty, profile=r.env.profile, throttled=r.env.throttled)
    provenance.update(
        created=last.env.datetime,
        mode=env.mode,
        harness_version=env.harness_version,
        benchmark=env.benchmark,
        fixed=dict(env.fixed),
        rounds=env.rounds,
        timer=env.timer,
        l2_flush=env.l2_flush,
        tolerances_file=tolerances_path,
    )
    return gpu, provenance


def _references(
    runs: Sequence[Run], old: Baseline | None, tolerances: Tolerances
) -> tuple[str, ...]:
    """The reference variants: those the runs mark as reference, the old baseline's, the file's."""
    names = set(tolerances.policy.reference_variants)
    names |= {row.variant for run in runs for row in run.rows.values() if row.reference}
    if old is not None:
        names |= set(old.policy.reference_variants)
    return tuple(sorted(names))


def _check_overrides(runs: Sequence[Run], old: Baseline | None, tolerances: Tolerances) -> None:
    """Every override of tolerances.toml matches on parameters the benchmark has."""
    known = {k for run in runs for row in run.rows.values() for k in row.params}
    if old is not None:
        known |= {k for row in old.rows.values() for k in row.params}
    for i, ov in enumerate(tolerances.overrides):
        unknown = sorted(set(ov.params) - known)
        if unknown and known:
            raise InputError(
                f"tolerances file {tolerances.source}, override #{i + 1}: unknown key(s) "
                f"{unknown}; match on variant and the benchmark's parameters {sorted(known)}, "
                "set tolerance, floor, ceiling or multiple"
            )


def _ensure_old_fits(runs: Sequence[Run], old: Baseline | None, out: Path) -> list[str]:
    """The runs are one environment, of the old baseline's GPU, mode and timing (its kept rows
    and the new ones must be times of the same kind); the warning of an unusual file name."""
    _ensure_one_environment(runs)
    env = runs[0].env
    named = listing([str(r.path) for r in runs], limit=3)
    warnings = []
    if out.name != f"{env.gpu.slug}.json":
        warnings.append(
            f"the runs are on {env.gpu.slug}, but the output file is {out} "
            f"(expected {env.gpu.slug}.json)"
        )
    if old is None:
        return warnings
    if old.slug != env.gpu.slug:
        raise InputError(
            f"old baseline {old.path} is for {old.slug}, the runs ({named}) for {env.gpu.slug}: a "
            f"baseline holds one GPU model (write {baseline_path(env.gpu.slug, out.parent)} instead)"
        )
    differs = gpu_mismatch(old.gpu, env.gpu)
    if differs:
        raise InputError(
            f"old baseline {old.path} was recorded on {describe_gpu(old.gpu)}, the runs "
            f"({named}) on {describe_gpu(env.gpu)}, both labelled {env.gpu.slug}: "
            f"{', '.join(differs)}. A baseline holds one GPU: fix the label, or write a new "
            "baseline for this GPU (--out elsewhere, no --old)"
        )
    if old.mode != env.mode:
        raise InputError(
            f"old baseline {old.path} is a {old.mode} baseline, the runs ({named}) are "
            f"{env.mode} runs"
        )
    for setting, now, then in (
        ("L2 flush", env.l2_flush, old.provenance.get("l2_flush")),
        ("timer", env.timer, old.provenance.get("timer")),
    ):
        if now is not None and then is not None and now != then:
            raise InputError(
                f"the runs ({named}) were timed with {setting} = {now!r}, old baseline {old.path} "
                f"with {then!r}: its kept rows and the new ones would not be comparable. Measure "
                "with the baseline's settings, or write a new baseline (--out elsewhere)"
            )
    return warnings


def rebaseline(
    runs: Sequence[Run],
    *,
    out: Path,
    old: Baseline | None,
    tolerances: Tolerances,
    tolerances_path: str | None = None,
) -> Rebaseline:
    """Build the new baseline from runs (plus the old one's unmeasured rows) and explain the
    change. With no runs, the old rows' tolerances are derived again from their stored drift."""
    if not runs and old is None:
        raise InputError(
            "rebaseline needs results files, or --old BASELINE to re-derive tolerances"
        )
    policy = replace(tolerances.policy, reference_variants=_references(runs, old, tolerances))
    _check_overrides(runs, old, tolerances)
    warnings: list[str] = []
    if runs:
        warnings += _ensure_old_fits(runs, old, out)
        gpu, provenance = _provenance(runs, tolerances_path)
    else:
        assert old is not None
        gpu, provenance = dict(old.gpu), {**old.provenance, "tolerances_file": tolerances_path}
    per_key: dict[str, list[tuple[Run, Row]]] = {}
    for run in runs:
        for row in run.rows.values():
            per_key.setdefault(row.key, []).append((run, row))
    rows = {key: _measured_row(key, per_run, tolerances) for key, per_run in per_key.items()}
    kept = [key for key in (old.rows if old is not None else {}) if key not in rows]
    for b in (old.rows[key] for key in kept if old is not None):  # tolerance from its drift
        tol, source, noisy = tolerances.tolerance(b.variant, b.params, b.drift)
        rows[b.key] = replace(b, tolerance=tol, tolerance_source=source, too_noisy=noisy)
    rows = dict(sorted(rows.items()))
    warnings += run_warnings(runs, rows, per_key, policy)
    expectations, exp_lines, refusals, loosened_checks = _merge_expectations(runs, old, policy)
    new = Baseline(
        path=out,
        gpu=MappingProxyType(gpu),
        provenance=MappingProxyType(provenance),
        policy=policy,
        rows=MappingProxyType(rows),
        expectations=tuple(expectations),
    )
    lines, loosened, slower = review(new, runs, old, tolerances, per_key, kept, exp_lines)
    if loosened or loosened_checks:
        loose = [f"{loosened} tolerance(s)"] if loosened else []
        loose += [f"{loosened_checks} expectation check(s)"] if loosened_checks else []
        warnings.insert(
            0,
            f"{' and '.join(loose)} LOOSENED: review them in the Rows and Expectations tables "
            "before committing",
        )
    return Rebaseline(
        baseline=new,
        old=old,
        lines=tuple(lines),
        warnings=tuple(warnings),
        refusals=tuple(slower + refusals),
    )


def _ratios(values: Iterable[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values) or "nothing"
