"""The gate: a results file (and its re-measurements) against its GPU's baseline -> report, exit code.

`gate` (`tilegate compare / report`, the `tilegate perf` loop) judges (tilegate.judge.gate: a
Judgement), renders it (tilegate.report.render) and writes the report, the Judgement's record
beside it (`verdicts.json`: what `tilegate explain` prints), the plots and the suspects. Bad input
raises nothing: exit 2 with the reason, the report (when asked for) CANNOT JUDGE, never stale.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_CANNOT_JUDGE, InputError
from tilegate.explain.diff import decided, explain_cases, explain_judgement
from tilegate.explain.diff import write as write_explanations
from tilegate.fileio import atomic_write_json, atomic_write_text
from tilegate.judge.abcompare import ABComparison
from tilegate.judge.gate import VERDICTS, Judgement
from tilegate.judge.integrity import Integrity
from tilegate.judge.verdict import Comparison
from tilegate.report.cannot_judge import cannot_judge_report
from tilegate.report.pr_comment import deciding_section
from tilegate.report.render import render
from tilegate.store.files import judge_files


@dataclass(frozen=True)
class Gated:
    """One run gated: exit code, report text, and the comparisons if they were made."""

    code: int
    text: str
    comparison: Comparison | None = None
    ab: ABComparison | None = None
    error: str | None = None  # why it could not judge (exit 2)
    notes: tuple[str, ...] = ()  # what the caller should tell the user beside the report
    explain_s: float = 0.0  # seconds spent explaining the changed cases (the report's "Why")
    judgement: Judgement | None = None  # the facts the report renders (None: cannot judge)

    @property
    def headline(self) -> str:
        """The Judgement's headline, the report's first line ('' when it could not judge)."""
        return self.judgement.headline if self.judgement is not None else ""


def record(judged: Judgement, results: Path, text: str) -> dict[str, Any]:
    """The Judgement's record (`Judgement.record`) with what `tilegate explain` needs beside it
    (the results file's digest: a record of another file is not this run's; the decided cases
    it explains) and the report's deciding cases, which the PR comment shows."""
    return {
        **judged.record(),
        "results_sha256": hashlib.sha256(results.read_bytes()).hexdigest(),
        "explained": [list(p) for p in decided(judged.comparison, judged.ab)],
        "deciding": deciding_section(text),
    }


def _cannot_judge(reason: str, report_path: Path | None) -> Gated:
    """Exit 2, and the report (if one is asked for) says CANNOT JUDGE: never a stale report
    (nor a stale verdicts record beside it)."""
    if report_path is not None:
        try:
            (report_path.parent / VERDICTS).unlink(missing_ok=True)
            atomic_write_text(report_path, cannot_judge_report(reason))
        except InputError as err:
            reason = f"{reason}; {err}"
    return Gated(EXIT_CANNOT_JUDGE, "", error=reason)


def _plots(judged: Judgement, directory: Path | None) -> tuple[list[Path], str]:
    if directory is None:
        return [], ""
    try:
        from tilegate.report import plots
    except ImportError as err:  # matplotlib is optional
        return [], f"no plots: {err} (install them with `pip install 'tilegate[plots]'`)"
    return plots.make_plots(judged, directory), ""


def gate(
    results: Path,
    baseline: Path | None = None,
    confirmations: Sequence[Path] = (),
    *,
    baselines_dir: Path = Path("baselines"),
    report_path: Path | None = None,
    plots_dir: Path | None = None,
    report_only: bool = False,
    allow_missing: bool = False,
    suspects_path: Path | None = None,
    accept_baseline_change: bool = False,
    integrity: Integrity | None = None,
) -> Gated:
    """Judge `results` against `baseline` (default: the results' GPU's file in `baselines_dir`).
    `report_only` never fails (exit 0; no baseline: the run alone). The report goes to
    `report_path` in every outcome, the cases to measure again to `suspects_path`, one a line."""
    try:
        judged = judge_files(
            results,
            baseline,
            confirmations,
            baselines_dir=baselines_dir,
            report_only=report_only,
            allow_missing=allow_missing,
            accept_baseline_change=accept_baseline_change,
            integrity=integrity,
        )
        if suspects_path is not None:
            atomic_write_text(suspects_path, "".join(f"{k}\n" for k in judged.suspects))
        plot_files, plot_note = _plots(judged, plots_dir)
        # why each decided case with changed code changed (never raises: "unavailable: why")
        t_explain = time.perf_counter()
        explanations = explain_judgement(results, judged.comparison, judged.ab)
        if judged.ab is not None:  # MORE MEMORY: an added launch or copy, an allocation
            seen = {e.key for e in explanations}
            more = [(m.key, m.verdict.value) for m in judged.outcome.more_memory]
            explanations += explain_cases(results, [c for c in more if c[0] not in seen])
        if report_path is not None:
            write_explanations(explanations, results, report_path.parent / "explain")
        explain_s = time.perf_counter() - t_explain
        text = render(
            judged,
            explanations=explanations,
            plots=plot_files,
            relative_to=report_path.parent if report_path else None,
            suspects_path=suspects_path,
        )
    except InputError as err:
        return _cannot_judge(str(err), report_path)
    if report_path is not None:
        try:
            atomic_write_text(report_path, text)
            atomic_write_json(report_path.parent / VERDICTS, record(judged, results, text))
        except InputError as err:  # e.g. --report names a directory
            return Gated(EXIT_CANNOT_JUDGE, "", error=str(err))
    notes = judged.notes + ((plot_note,) if plot_note else ())
    return Gated(
        judged.code,
        text,
        judged.comparison,
        judged.ab,
        notes=notes,
        explain_s=explain_s,
        judgement=judged,
    )
