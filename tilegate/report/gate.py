"""The gate's report: a Judgement (tilegate.judge.gate) rendered, the baselines/ banner led."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tilegate.judge.gate import Judgement
from tilegate.report.render import render


def report(
    judged: Judgement,
    *,
    plots: Sequence[Path] = (),
    relative_to: Path | None = None,
    suspects_path: Path | None = None,
    explanations: Sequence[Any] = (),
) -> str:
    """The report of `judged` as markdown (tilegate.report.render), with the pull request's
    baselines/ changes (tilegate.judge.integrity) under the headline; `explanations`:
    tilegate.explain.diff's, why each decided case with changed code changed."""
    integrity, report_only = judged.integrity, judged.report_only
    text = render(
        judged.run,
        judged.comparison,
        ab=judged.ab,
        report_only=report_only,
        no_baseline_reason=judged.no_baseline,
        plots=plots,
        relative_to=relative_to,
        suspects_path=suspects_path,
        integrity=integrity.failing if integrity is not None and not report_only else (),
        coverage=judged.coverage,
        explanations=explanations,
    )
    if integrity is not None:
        text = lead(text, integrity.banner(), 0 if report_only else len(integrity.failing))
    return text


def lead(text: str, banner: str, failing: int) -> str:
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
