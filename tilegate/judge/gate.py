"""The gate: a results file (and its re-measurements) against its GPU's baseline -> report, exit code.

`judge` is what `tilegate compare` / `tilegate report` and the `tilegate perf` loop call. It
raises nothing for bad input: a problem it cannot judge becomes exit 2 with the reason, and the
report file, when one is asked for, then says CANNOT JUDGE (never a stale report).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_OK, InputError
from tilegate.explain.diff import explain_judgement
from tilegate.explain.diff import write as write_explanations
from tilegate.fileio import atomic_write_text
from tilegate.judge.ab import ABComparison, compare_ab, load_noise, noise_path
from tilegate.judge.baseline import baseline_path, how_to_create, load_baseline
from tilegate.judge.integrity import Integrity, check_baseline, check_noise
from tilegate.judge.outcome import outcome
from tilegate.judge.policy import load_tolerances
from tilegate.judge.results import Run, load_results
from tilegate.judge.verdict import Comparison, compare
from tilegate.report.render import render
from tilegate.run.crash import cannot_judge_report


@dataclass(frozen=True)
class Judgement:
    """The outcome of judging one run: exit code, report text, and the comparison if one was made."""

    code: int
    text: str
    comparison: Comparison | None = None
    ab: ABComparison | None = None
    error: str | None = None  # why it could not judge (exit 2)
    notes: tuple[str, ...] = ()  # what the caller should tell the user beside the report

    @property
    def headline(self) -> str:
        return self.text.splitlines()[0].lstrip("# ") if self.text else ""


def _cannot_judge(reason: str, report_path: Path | None) -> Judgement:
    """Exit 2, and the report (if one is asked for) says CANNOT JUDGE: never a stale report."""
    if report_path is not None:
        try:
            atomic_write_text(report_path, cannot_judge_report(reason))
        except InputError as err:
            reason = f"{reason}; {err}"
    return Judgement(EXIT_CANNOT_JUDGE, "", error=reason)


def _lead(text: str, banner: str, failing: int) -> str:
    """The report with `banner` right under its headline (the first line), and the headline
    failing when `failing` baseline changes are not acknowledged."""
    if not banner:
        return text
    first, _, rest = text.partition("\n")
    if failing:
        what = f"{failing} unacknowledged baseline change" + ("s" if failing > 1 else "")
        word, _, parts = first.removeprefix("# tilegate: ").partition(": ")
        word = "FAIL" if word == "PASS" else word
        first = f"# tilegate: {word}: {what}" + (f", {parts}" if parts else "")
    return f"{first}\n\n{banner}{rest.lstrip(chr(10))}"


def _plots(run: Run, cmp: Comparison | None, directory: Path | None) -> tuple[list[Path], str]:
    if directory is None:
        return [], ""
    try:
        from tilegate.report import plots
    except ImportError as err:  # matplotlib is optional
        return [], f"no plots: {err} (install them with `pip install 'tilegate[plots]'`)"
    return plots.make_plots(run, cmp, directory), ""


def judge(
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
) -> Judgement:
    """Judge `results` against `baseline` (default: the results' GPU's file in `baselines_dir`).

    `report_only` never fails (exit 0), and without a baseline reports the run alone. The
    report is written to `report_path` (atomically) when given, in every outcome; the case ids
    to measure again (`Comparison.suspects`) to `suspects_path`, one a line.
    """
    try:
        if baseline is not None and not baseline.is_file():
            raise InputError(
                (
                    f"baseline {baseline} is a directory, not a file: pass it as --baselines"
                    if baseline.is_dir()
                    else f"baseline {baseline} does not exist"
                )
                + ". Give an existing baseline file, or none for the GPU's own in --baselines."
            )
        if baseline is None and not baselines_dir.is_dir():
            raise InputError(
                f"--baselines {baselines_dir} does not exist (or is not a directory): no stored "
                "baseline, A/B noise file or tolerances could be read from it. Point it at the "
                "repository's baselines/ (the default)."
            )
        run = load_results(results)
        slug = run.env.gpu.slug
        path = baseline or baseline_path(slug, baselines_dir)
        tols = path.parent / "tolerances.toml"
        reruns = [load_results(c) for c in confirmations]
        cmp: Comparison | None = None
        ab: ABComparison | None = None
        notes: list[str] = []
        if run.env.ab is not None:
            noise_file = noise_path(slug, baselines_dir)
            noise = load_noise(noise_file) if noise_file.exists() else None
            if noise is not None:
                check_noise(noise)
            ab = compare_ab(run, noise, reruns, accept_removed=accept_baseline_change)
        no_baseline = None
        if not path.exists() and (report_only or ab is not None):
            no_baseline = (
                f"No baseline for {slug} at `{path}`, so no stored-baseline verdict. "
                f"{how_to_create(slug, path)}"
            )
            if ab is not None:
                notes.append(f"no stored baseline {path}: judged on the A/B verdict alone")
        else:
            if not path.exists():
                raise InputError(
                    f"no baseline for {slug}: {path} does not exist. "
                    f"{how_to_create(slug, path)} "
                    "To see the report without a verdict, pass --report-only."
                )
            stored = load_baseline(path)
            check_baseline(stored, load_tolerances(tols) if tols.exists() else None)
            cmp = compare(run, stored, reruns, allow_missing=allow_missing)
        if suspects_path is not None:
            # in A/B mode a stored-baseline slowdown of a case whose code is the base's is drift
            # (tilegate.judge.outcome): a confirmation run would spend its rounds for nothing
            same_code = ab.same_code if ab else frozenset()
            keys = list(
                dict.fromkeys(
                    [*(ab.suspects() if ab else []), *(cmp.suspects(same_code) if cmp else [])]
                )
            )
            atomic_write_text(suspects_path, "".join(f"{k}\n" for k in keys))
        plot_files, plot_note = _plots(run, cmp, plots_dir)
        # why each decided case with changed code changed (never raises: "unavailable: why")
        explanations = explain_judgement(results, cmp, ab)
        if report_path is not None:
            write_explanations(explanations, results, report_path.parent / "explain")
        text = render(
            run,
            cmp,
            ab=ab,
            report_only=report_only,
            no_baseline_reason=no_baseline,
            plots=plot_files,
            relative_to=report_path.parent if report_path else None,
            suspects_path=suspects_path,
            integrity=integrity.failing if integrity is not None and not report_only else (),
            explanations=explanations,
        )
        if integrity is not None:
            text = _lead(text, integrity.banner(), 0 if report_only else len(integrity.failing))
    except InputError as err:
        return _cannot_judge(str(err), report_path)
    if report_path is not None:
        try:
            atomic_write_text(report_path, text)
        except InputError as err:  # e.g. --report names a directory
            return Judgement(EXIT_CANNOT_JUDGE, "", error=str(err))
    failing = integrity.failing if integrity is not None else ()
    code = EXIT_OK if report_only else outcome(cmp, ab, failing).code
    if plot_note:
        notes.append(plot_note)
    return Judgement(code, text, cmp, ab, notes=tuple(notes))
