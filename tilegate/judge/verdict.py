"""Verdicts: each row against its baseline, the expectations (tilegate.judge.crosstile).

The decision rule (docs/gate.md, "The decision rule", explains the numbers): REGRESSED when the
median is slower than the baseline by more than the row's tolerance AND its per-round samples
are significantly slower (one-sided Mann-Whitney U, p < alpha); UNSURE when slower than the
tolerance but not significant, or significant within `unsure_band` below it; IMPROVED when
faster than the tolerance and significant. With confirmation runs a suspect is judged on all its
runs: slower than the tolerance in a majority of them (ties acquit) and significant on the
pooled samples. An expectation is checked on the ratio measured in the same run, broken when it
exceeds max_ratio in a majority of the runs. The words (Verdict, Status) are
tilegate.judge.vocabulary's; the exit rule is tilegate.judge.outcome.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tilegate.errors import InputError
from tilegate.judge import stats
from tilegate.judge.baseline import Baseline, BaselineRow, baseline_path, how_to_create
from tilegate.judge.crosstile import ExpectationResult, Status, check_expectation
from tilegate.judge.offgpu import OffGpu, off_gpus
from tilegate.judge.policy import Policy
from tilegate.judge.renames import gone_check, removed_variants, renamed_baseline
from tilegate.judge.results import Row, Run, describe_gpu, gpu_mismatch
from tilegate.judge.shift import blame
from tilegate.judge.vocabulary import Verdict
from tilegate.markdown import listing


@dataclass(frozen=True)
class RowVerdict:
    key: str
    verdict: Verdict
    base: BaselineRow | None
    now: Row | None  # the row of the first (not a confirmation) run
    reference: bool = False  # reported, never fails the gate (cuBLAS is not our code)
    now_median_s: float | None = None  # median over runs of the run's median
    delta: float | None = None  # median over runs of (run median / baseline median - 1)
    run_deltas: tuple[float, ...] = ()  # the original run first, then confirmations
    p_slower: float | None = None
    p_faster: float | None = None
    note: str = ""
    # the change of the row's same-run ratio to the reference (median over runs), and whether
    # its compiled code differs from the baseline's (None: one side has no code hash)
    rel_delta: float | None = None
    code_changed: bool | None = None

    @property
    def _row(self) -> Row | BaselineRow:
        row = self.now if self.now is not None else self.base
        assert row is not None, "a verdict has a row on at least one side"
        return row

    @property
    def variant(self) -> str:
        return self._row.variant

    @property
    def params(self) -> Mapping[str, Any]:
        return self._row.params

    @property
    def tolerance(self) -> float | None:
        return self.base.tolerance if self.base is not None else None

    @property
    def fails(self) -> bool:
        regressed = self.verdict is Verdict.REGRESSED and not self.reference
        return regressed or self.verdict is Verdict.GONE


@dataclass(frozen=True)
class Comparison:
    run: Run
    baseline: Baseline
    confirmations: tuple[Run, ...]
    rows: tuple[RowVerdict, ...]
    expectations: tuple[ExpectationResult, ...]
    missing_allowed: tuple[str, ...] = ()  # baseline rows of measured groups absent from the run
    off_gpus: tuple[OffGpu, ...] = ()  # the host's GPUs whose rows were not judged (offgpu)

    def by(self, *verdicts: Verdict) -> list[RowVerdict]:
        return [r for r in self.rows if r.verdict in verdicts]

    @property
    def broken(self) -> list[ExpectationResult]:
        """The expectations that failed."""
        return [c for c in self.expectations if c.status is Status.FAIL]

    def suspects(self, cannot_fail: Collection[str] = ()) -> list[str]:
        """Case ids to measure again: regressed or unsure rows, and both rows of a broken
        expectation; not `cannot_fail`'s (drift, judge.outcome) unless an expectation names them."""
        keys = [
            r.key
            for r in self.by(Verdict.REGRESSED, Verdict.UNSURE)
            if not r.reference and r.key not in cannot_fail
        ]
        for c in self.broken:
            keys += [k for k in c.rows if k in self.run.rows]
        return list(dict.fromkeys(keys))


def judge_row(
    base: BaselineRow, runs: Sequence[Sequence[float]], policy: Policy
) -> tuple[Verdict, float, tuple[float, ...], float | None, float | None]:
    """(verdict, delta, run deltas, p_slower, p_faster) of one row measured in one or more runs;
    only the p-value in the direction of the change is computed (the other one is None)."""
    tol = base.tolerance
    run_deltas = tuple(stats.rel_change(stats.median(s), base.median_s) for s in runs)
    delta = stats.median(run_deltas)
    pooled = [x for s in runs for x in s]
    ps = stats.p_slower(pooled, base.samples_s) if delta >= 0 else None
    pf = stats.p_faster(pooled, base.samples_s) if delta < 0 else None
    slower = stats.majority([d > tol for d in run_deltas])
    faster = stats.majority([d < -tol for d in run_deltas])
    significant_slower = ps is not None and ps < policy.alpha
    if slower and significant_slower:
        verdict = Verdict.REGRESSED
    elif faster and pf is not None and pf < policy.alpha:
        verdict = Verdict.IMPROVED
    elif slower or (delta > (1 - policy.unsure_band) * tol and significant_slower):
        verdict = Verdict.UNSURE
    else:
        verdict = Verdict.OK
    return verdict, delta, run_deltas, ps, pf


def _row_note(
    verdict: Verdict, delta: float, tol: float, ps: float | None, alpha: float, runs: int
) -> str:
    p = 1.0 if ps is None else ps
    if verdict is Verdict.REGRESSED:
        return f"slower than the {tol:.1%} tolerance, significant (p={p:.2g})" + (
            f" in {runs} runs" if runs > 1 else ""
        )
    if verdict is Verdict.UNSURE:
        if delta > tol:
            return f"slower than the tolerance but not significant (p={p:.2g} >= {alpha:g}): measure more"
        if p < alpha:
            return f"significantly slower, close to the {tol:.1%} tolerance: measure more"
        return "slower than the tolerance in some runs, not in most: measure more"
    if verdict is Verdict.IMPROVED:
        return "faster beyond the tolerance: rebaseline to lock it in"
    if delta < -tol:  # OK, yet not within the tolerance: said, not folded with the rows that are
        return f"faster than the tolerance but not significant (p={p:.2g} >= {alpha:g})"
    return ""


def ensure_comparable(run: Run, baseline: Baseline) -> None:
    """Refuse (InputError) a baseline that cannot judge this run."""
    slug = run.env.gpu.slug
    if baseline.slug != slug:
        right = baseline_path(slug, baseline.path.parent)
        raise InputError(
            f"baseline {baseline.path} is for {baseline.slug} ({baseline.gpu.get('name')}), but results {run.path} "
            f"were measured on {slug} ({run.env.gpu.name}). Times of different GPU models cannot be compared: "
            f"use {right}. " + (how_to_create(slug, right) if not right.exists() else "")
        )
    remedy = (
        "These are different GPUs: fix the label (the runner's, or machine_info.tilegate.gpu."
        "slug), or record a baseline on this GPU with `tilegate rebaseline --measure 3`."
    )
    baseline.ensure_gpu_of(run, "baseline", remedy)
    if baseline.mode != run.env.mode:
        raise InputError(
            f"results {run.path} is a {run.env.mode} run but baseline {baseline.path} is a {baseline.mode} baseline"
        )
    prov = baseline.provenance
    for what, now, then in (
        ("L2 flush", run.env.l2_flush, prov.get("l2_flush")),
        ("timer", run.env.timer, prov.get("timer")),
    ):
        if now is not None and then is not None and now != then:
            raise InputError(
                f"results {run.path} were timed with {what} = {now!r}, baseline {baseline.path} with {then!r}: "
                "the times are not comparable. Run the suite with the baseline's settings, or rebaseline."
            )


def _ensure_same_setup(run: Run, conf: Run) -> None:
    differs = gpu_mismatch(run.env.gpu, conf.env.gpu)
    if conf.env.gpu.slug != run.env.gpu.slug or conf.env.mode != run.env.mode or differs:
        raise InputError(
            f"confirmation run {conf.path} is a {conf.env.mode} run on {conf.env.gpu.slug} "
            f"({describe_gpu(conf.env.gpu)}), results {run.path} a {run.env.mode} run on "
            f"{run.env.gpu.slug} ({describe_gpu(run.env.gpu)}): a confirmation must re-measure on the "
            "same GPU model"
        )
    for key in (
        k for k, row in conf.rows.items() if k in run.rows and run.rows[k].params != row.params
    ):
        raise InputError(
            f"confirmation run {conf.path}, row {key}: its parameters differ from results "
            f"{run.path}"
        )


def _ensure_enough_samples(runs: Sequence[Run], baseline: Baseline) -> None:
    """Refuse rows with too few samples to ever be significantly slower (they could never fail)."""
    alpha = baseline.policy.alpha
    for run in runs:
        few = [
            f"{key} ({len(row.samples_s)} of {need})"
            for key, row in run.rows.items()
            if (base := baseline.rows.get(key)) is not None
            and len(row.samples_s)
            < (need := stats.min_samples_rank_sum(alpha, len(base.samples_s)))
        ]
        if few:
            raise InputError(
                f"results {run.path}: {len(few)} row(s) have too few samples to be judged: "
                f"{listing(few)}. Against the baseline's summary of its rounds, a one-sided "
                f"Mann-Whitney test needs that many to reach p < {alpha:g} at all "
                "(docs/gate.md, 'Minimum samples'), so such a row could never fail. Measure "
                "more rounds (drop --perf-rounds, or raise it)."
            )


def _ensure_shared(run: Run, baseline: Baseline) -> None:
    """The run and the baseline share cases, each at the same parameters."""
    shared = [k for k in run.rows if k in baseline.rows]
    if not shared:
        raise InputError(
            f"results {run.path} and baseline {baseline.path} have no case in common: nothing to judge. "
            f"The run measured {listing(list(run.rows))}; the baseline holds {listing(list(baseline.rows))}."
        )
    for key in shared:
        r, b = run.rows[key], baseline.rows[key]
        if dict(r.params) != dict(b.params):
            apart = {k for k in {**r.params, **b.params} if r.params.get(k) != b.params.get(k)}
            differ = ", ".join(f"{k}={r.params[k]}" for k in r.params if k in apart)
            held = ", ".join(f"{k}={b.params[k]}" for k in b.params if k in apart)
            raise InputError(
                f"results {run.path}, row {key}: measured at {differ}, but baseline {baseline.path} holds "
                f"{held}. Run the baseline's shape, or rebaseline."
            )


def _missing(
    run: Run, baseline: Baseline, gone: set[str], accounted: frozenset[str], allow: bool
) -> list[str]:
    """Baseline rows of groups that ran, missing though their variant was selected: they stopped
    running and would escape the gate (InputError unless `allow`)."""
    selected = run.env.variants
    asked = {k for k, b in baseline.rows.items() if selected is None or b.variant in selected}
    ran = {k for k, b in baseline.rows.items() if b.group in run.groups and b.variant not in gone}
    missing = sorted((asked & ran) - set(run.rows) - accounted)
    if missing and not allow:
        raise InputError(
            f"results {run.path} lack {len(missing)} row(s) that baseline {baseline.path} holds, although their "
            f"groups were measured: {listing(missing)}. Such a case was skipped or failed before timing (see the "
            "pytest log); a case that stops running would escape the gate. Fix it, rebaseline if it was removed on "
            "purpose, or pass --allow-missing to judge the rest."
        )
    return missing


def _unmeasured(
    run: Run,
    base: BaselineRow,
    gone: set[str],
    missing: list[str],
    accounted: frozenset[str],
    reference: set[str],
) -> RowVerdict:
    """A baseline row the run lacks: GONE with its variant, else NOT MEASURED and why."""
    is_ref = base.variant in reference
    if base.variant in gone:
        note = (
            f"variant {base.variant} is no longer in the registry: removed by this change (a "
            "rename says `renamed_from=`); the baseline still holds its rows"
        )
        return RowVerdict(base.key, Verdict.GONE, base, None, is_ref, note=note)
    measured = base.group in run.groups
    if base.key in missing:
        note = "skipped or failed before timing (--allow-missing)"
    elif base.key in accounted:
        note = "not measured: skipped or failed (the coverage says why)"
    elif measured and run.env.variants is not None:
        note = "variant not selected for this run (--perf-variants)"
    else:
        note = "not measured in this run" if measured else "not in this run's profile"
    return RowVerdict(base.key, Verdict.NOT_MEASURED, base, None, is_ref, note=note)


def _confirmed(
    cmp: Comparison, confirmations: Sequence[Run], gone: set[str]
) -> tuple[list[RowVerdict], list[ExpectationResult]]:
    """The suspects of `cmp` judged on all their runs; its broken expectations checked again."""
    run, baseline, runs = cmp.run, cmp.baseline, [cmp.run, *confirmations]
    suspects = set(cmp.suspects())
    verdicts = [
        blame(_confirm(v, run, confirmations, baseline.policy), runs, baseline)
        if v.key in suspects and v.base is not None and v.now is not None
        else v
        for v in cmp.rows
    ]
    checks = [
        check_expectation(c.expectation, c.value, c.max_ratio, runs, c.baseline_ratio)
        if c.status is Status.FAIL
        else c
        for c in cmp.expectations
    ]
    return verdicts, [gone_check(c, gone) for c in checks]


def compare(
    run: Run,
    baseline: Baseline,
    confirmations: Sequence[Run] = (),
    *,
    allow_missing: bool = False,
    accounted: frozenset[str] = frozenset(),
) -> Comparison:
    """Judge every row and expectation; InputError when the baseline cannot judge this run.
    `accounted`: baseline rows the run's coverage already fails it for (tilegate.judge.coverage),
    not measured by a pull request's choice: reported there, not a reason to stop judging."""
    ensure_comparable(run, baseline)
    baseline = renamed_baseline(baseline, run)
    gone = removed_variants(baseline, run)
    for conf in confirmations:
        _ensure_same_setup(run, conf)
    _ensure_shared(run, baseline)
    _ensure_enough_samples([run, *confirmations], baseline)
    missing = _missing(run, baseline, gone, accounted, allow_missing)
    policy, reference = baseline.policy, set(baseline.policy.reference_variants)
    new = "not in the baseline: rebaseline to start judging it"
    verdicts = [
        _judge(key, row, base, [row.samples_s], policy, row.variant in reference)
        if (base := baseline.rows.get(key)) is not None
        else RowVerdict(key, Verdict.NEW, None, row, row.variant in reference, note=new)
        for key, row in run.rows.items()
    ]
    verdicts += [
        _unmeasured(run, base, gone, missing, accounted, reference)
        for key, base in baseline.rows.items()
        if key not in run.rows
    ]
    checks = []
    for e in baseline.expectations:
        for c in e.bounds:
            then = stats.median(c.measured) if c.measured else None
            checks.append(gone_check(check_expectation(e, c.value, c.max_ratio, [run], then), gone))
    verdicts = [blame(v, [run], baseline) for v in verdicts]
    if confirmations:
        first = Comparison(run, baseline, (), tuple(verdicts), tuple(checks))
        verdicts, checks = _confirmed(first, confirmations, gone)
    off = _off_gpus(run, baseline)
    bad = {g.index: g for g in off}
    for i, v in enumerate(verdicts):
        if v.now is not None and v.now.gpu_index in bad:
            g = bad[v.now.gpu_index]
            verdicts[i] = replace(v, verdict=Verdict.OFF_GPU, note=f"GPU {g.index}: {g.why}")
    verdicts.sort(key=run.sort_key)
    found = (tuple(verdicts), tuple(checks), tuple(missing), tuple(off))
    return Comparison(run, baseline, tuple(confirmations), *found)


def _off_gpus(run: Run, baseline: Baseline) -> list[OffGpu]:
    """The host's GPUs whose reference rows sit away from the other GPUs' (offgpu.off_gpus)."""
    if len(run.env.gpus) < 2:
        return []
    shifts: dict[int, list[float]] = {}
    tolerances = []
    for row in run.rows.values():
        base = baseline.rows.get(row.key)
        if row.reference and base is not None and row.gpu_index is not None:
            shifts.setdefault(row.gpu_index, []).append(
                stats.rel_change(row.median_s, base.median_s)
            )
            tolerances.append(base.tolerance)
    if not tolerances:
        return []
    serials = {
        int(g["gpu"].get("index", i)): g["gpu"].get("serial") for i, g in enumerate(run.env.gpus)
    }
    return off_gpus(shifts, stats.median(tolerances), serials)


def _judge(
    key: str,
    row: Row,
    base: BaselineRow,
    runs: Sequence[Sequence[float]],
    policy: Policy,
    is_ref: bool,
) -> RowVerdict:
    verdict, delta, run_deltas, ps, pf = judge_row(base, runs, policy)
    note = _row_note(
        verdict, delta, base.tolerance, ps if pf is None else pf, policy.alpha, len(runs)
    )
    if is_ref and verdict is Verdict.REGRESSED:
        note += "; reference row: never fails the gate, but says the machine or the reference's libraries changed"
    now = stats.median([stats.median(s) for s in runs])
    return RowVerdict(key, verdict, base, row, is_ref, now, delta, run_deltas, ps, pf, note)


def _confirm(v: RowVerdict, run: Run, confirmations: Sequence[Run], policy: Policy) -> RowVerdict:
    assert v.base is not None and v.now is not None
    extra = [c.rows[v.key].samples_s for c in confirmations if v.key in c.rows]
    if not extra:
        return replace(v, note=v.note + "; NOT re-measured by the confirmation run(s)")
    judged = _judge(v.key, v.now, v.base, [v.now.samples_s, *extra], policy, v.reference)
    before = f"first run {v.verdict.value} ({v.delta:+.1%})" if v.delta is not None else ""
    runs = ", ".join(f"{d:+.1%}" for d in judged.run_deltas)
    note = f"confirmation: {before}; runs {runs}" + (f"; {judged.note}" if judged.note else "")
    if judged.verdict is Verdict.OK:
        note += "; not confirmed: the first run was noise"
    return replace(judged, note=note)
