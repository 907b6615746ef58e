"""Judge one results file (and its re-measurements) against its GPU's baseline: the facts.

`judge` takes the loaded inputs (tilegate.store.files reads them), compares (stored baseline,
A/B) and applies the one exit rule (tilegate.judge.outcome); it returns a `Judgement`, plain data
holding everything a reader is told (the headline is the report's, the PR comment's, the job
summary's and `tilegate explain`'s first line), and writes nothing. Every renderer renders it and
decides nothing (tilegate.report); tilegate.run.gate writes the report, plots and suspects, and
turns an InputError (naming the file and what to do) into exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_FAIL, EXIT_OK
from tilegate.judge.abcompare import ABComparison, compare_ab
from tilegate.judge.abnoise import Noise
from tilegate.judge.baseline import Baseline
from tilegate.judge.confirm import beyond_doubt
from tilegate.judge.coverage import Coverage, of_run
from tilegate.judge.crosstile import Pair, crosstile_pairs
from tilegate.judge.integrity import Integrity, check_baseline, check_noise
from tilegate.judge.memory import MemoryCase, judge_memory
from tilegate.judge.outcome import Outcome, headline, outcome
from tilegate.judge.policy import Tolerances
from tilegate.judge.results import Run
from tilegate.judge.verdict import Comparison, compare
from tilegate.peaks import percent, row_of


@dataclass(frozen=True)
class Judgement:
    """Everything a reader is told of one run, plain data; build one with `judgement`."""

    run: Run
    comparison: Comparison | None
    ab: ABComparison | None
    outcome: Outcome
    headline: str  # the report's first line without "# ": "tilegate: FAIL: 1 regression"
    report_only: bool = False
    no_baseline: str | None = None  # why there is no stored-baseline verdict (report-only, A/B)
    integrity: Integrity | None = None
    notes: tuple[str, ...] = ()  # what the caller should tell the user beside the report
    coverage: Coverage | None = None  # what the protocol said to measure (judge.coverage)
    confirmations: tuple[Path, ...] = ()  # the re-measurements judged with the run
    order: tuple[str, ...] = ()  # the run's case ids in the order every table shows them
    pairs: tuple[Pair, ...] = ()  # the declared pairs the run measured (judge.crosstile)
    memory: tuple[MemoryCase, ...] = ()  # each case's peak GPU memory judged (judge.memory)
    # each row's (fraction, bound) of the bound its declared work gives (tilegate.peaks)
    percent: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    peaks: Mapping[str, float] | None = None  # the GPU's row of tilegate.peaks (None: unknown)
    suspects: tuple[str, ...] = ()  # the case ids to measure again, decided once (`_suspects`)

    @property
    def code(self) -> int:
        """The exit code: the outcome's; a report-only run fails only on what it did not
        measure (there is nothing to report of it)."""
        if self.report_only:
            return EXIT_FAIL if self.coverage is not None and self.coverage.fails else EXIT_OK
        return self.outcome.code

    @property
    def failing_integrity(self) -> tuple[str, ...]:
        """The unacknowledged loosenings of baselines/ that fail the run (none when report-only)."""
        if self.integrity is None or self.report_only:
            return ()
        return self.integrity.failing

    def verdicts(self) -> dict[str, str]:
        """Each judged case's verdict word (A/B cases first, then the stored-baseline rows the
        A/B does not judge): what `tilegate explain` prints for the run."""
        out = {c.key: c.verdict.name for c in self.ab.cases} if self.ab is not None else {}
        rows = self.comparison.rows if self.comparison is not None else ()
        return out | {r.key: r.verdict.name for r in rows if r.key not in out}

    def record(self) -> dict[str, Any]:
        """The judgement as JSON (`VERDICTS`, beside the report): what `tilegate explain` reads
        to print exactly this run's verdicts, confirmations included."""
        return {
            "schema": VERDICTS_SCHEMA,
            "results": self.run.path.name,
            "confirmations": [p.name for p in self.confirmations],
            "headline": self.headline,
            "exit_code": self.code,
            "verdicts": self.verdicts(),
            "memory": {m.key: m.as_json() for m in self.memory},
        }


VERDICTS = "verdicts.json"  # the Judgement's record, beside the report (Judgement.record)
VERDICTS_SCHEMA = "tilegate-verdicts/1"


def _headline(
    result: Outcome,
    cmp: Comparison | None,
    ab: ABComparison | None,
    report_only: bool,
    coverage: Coverage | None,
) -> str:
    """The run in one line, from its outcome: the word of its exit code and what failed."""
    narrowed = ""
    if coverage is not None and coverage.narrowed:
        narrowed = f" (NARROWED by {', '.join(coverage.narrowed)}: not every case of the profile)"
    uncovered = coverage is not None and coverage.fails
    if cmp is None and ab is None and not uncovered and not result.integrity:
        return "tilegate: REPORT ONLY (no baseline, no verdict)" + narrowed
    word = headline(result.code).value
    parts = result.parts
    if report_only and uncovered:
        # what was not measured fails even a report-only run: there is nothing to report of it
        assert coverage is not None
        word, parts = headline(EXIT_FAIL).value, [*coverage.parts, "timings: report only"]
    elif report_only:
        word = f"REPORT ONLY (would {word.lower()})"
    elif result.smoke:
        timed = [p for p in parts if coverage is None or p not in coverage.parts]
        word += " (smoke run: its timings mean nothing and fail nothing"
        word += f"; they say {', '.join(timed)})" if timed else ")"
        parts = [p for p in parts if p not in timed]
    return f"tilegate: {word}" + (f": {', '.join(parts)}" if parts else "") + narrowed


def _suspects(result: Outcome, cmp: Comparison | None, ab: ABComparison | None) -> list[str]:
    """The case ids to measure again: the A/B's, then the stored baseline's less those a slowdown
    cannot be blamed on (drift: nothing to confirm); none in a smoke run."""
    if result.smoke:
        return []
    cleared = ab.not_blamed if ab else frozenset()
    found = [*(ab.suspects() if ab else []), *(cmp.suspects(cleared) if cmp else [])]
    return list(dict.fromkeys(found))


def judgement(
    run: Run,
    cmp: Comparison | None = None,
    ab: ABComparison | None = None,
    *,
    report_only: bool = False,
    no_baseline: str | None = None,
    integrity: Integrity | None = None,
    coverage: Coverage | None = None,
    confirmations: Sequence[Path] = (),
    notes: Sequence[str] = (),
) -> Judgement:
    """The Judgement of `run` from its comparisons: outcome and headline, decided here once."""
    failing = integrity.failing if integrity is not None else ()
    if ab is not None:  # which SLOWER cases a second run cannot overturn: decided here, once
        cases = tuple(replace(c, beyond_doubt=beyond_doubt(c)) for c in ab.cases)
        ab = replace(ab, cases=cases)
    memory = judge_memory(run, cmp.baseline if cmp is not None else None)
    peaks = row_of(run.env)
    result = outcome(cmp, ab, failing, coverage, smoke=run.env.smoke, memory=memory)
    order = sorted(run.rows, key=lambda k: run.sort_key(run.rows[k]))
    return Judgement(
        run,
        cmp,
        ab,
        result,
        _headline(result, cmp, ab, report_only, coverage),
        report_only=report_only,
        no_baseline=no_baseline,
        integrity=integrity,
        notes=tuple(notes),
        coverage=coverage,
        confirmations=tuple(confirmations),
        order=tuple(order),
        pairs=tuple(crosstile_pairs(run, cmp.baseline if cmp is not None else None)),
        memory=memory,
        percent={k: p for k, r in run.rows.items() if (p := percent(r, peaks))},
        peaks=peaks,
        suspects=tuple(_suspects(result, cmp, ab)),
    )


def judge(
    run: Run,
    reruns: Sequence[Run] = (),
    *,
    stored: Baseline | None = None,
    tolerances: Tolerances | None = None,
    noise: Noise | None = None,
    confirmations: Sequence[Path] = (),
    report_only: bool = False,
    allow_missing: bool = False,
    accept_baseline_change: bool = False,
    integrity: Integrity | None = None,
    no_baseline: str | None = None,
    notes: Sequence[str] = (),
) -> Judgement:
    """Judge `run` (and its re-measurements) against its stored baseline and, in an A/B run, its
    base with the A/A `noise`; InputError for what cannot be judged."""
    ab: ABComparison | None = None
    if run.env.ab is not None:
        if noise is not None:
            check_noise(noise)
        ab = compare_ab(run, noise, reruns, accept_removed=accept_baseline_change)
    cmp: Comparison | None = None
    if stored is not None:
        check_baseline(stored, tolerances)
        # rows the coverage fails the run for (a case the pull request stopped measuring: a
        # skip, a dropped grid point) are its verdict, named there; the rest is judged
        before = of_run(run, stored)
        accounted = frozenset(m.key for m in before.missing) if before is not None else frozenset()
        if report_only and not set(run.rows) & set(stored.rows):  # it needs no baseline
            no_baseline = (
                f"Baseline `{stored.path}` holds no case of this run (another grid or profile), so "
                "no stored-baseline verdict: the run alone."
            )
        else:
            cmp = compare(run, stored, reruns, allow_missing=allow_missing, accounted=accounted)
    return judgement(
        run,
        cmp,
        ab,
        report_only=report_only,
        no_baseline=no_baseline,
        integrity=integrity,
        coverage=of_run(run, cmp.baseline if cmp is not None else None),
        confirmations=confirmations,
        notes=notes,
    )
