"""The gate's verdict per case, for the history: from a baseline, or from a verdicts file.

This module is the only place the history calls the gate (`tilegate.judge.verdict.compare`,
`tilegate.store.files.load_baseline`, the crossover rule): when the gate's API moves, only these
functions follow it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import read_json
from tilegate.judge.results import Run
from tilegate.store.historydb import Judged


def judge(run: Run, baseline_path: Path | None) -> dict[str, Judged]:
    """Verdict, tolerance and baseline level of each measured case of `run` (empty: no baseline).

    Judged on the first run alone (no confirmation runs), with missing baseline rows allowed: the
    history records what was measured, the gate's exit code is `tilegate compare`'s business.
    """
    if baseline_path is None:
        return {}
    from tilegate.judge.verdict import compare
    from tilegate.store.files import load_baseline

    baseline = load_baseline(baseline_path)
    cmp = compare(run, baseline, allow_missing=True)
    levels = _levels(baseline)
    return {
        rv.key: replace(levels.get(rv.key, Judged()), verdict=rv.verdict.value)
        for rv in cmp.rows
        if rv.key in run.rows  # NOT MEASURED rows: in the baseline, not in this run
    }


def _levels(baseline: Any) -> dict[str, Judged]:
    """Per baseline row: its tolerance, median, and ratio to its reference (no verdict)."""
    from tilegate.judge.shift import base_ratio_to_reference

    references = tuple(baseline.policy.reference_variants)
    out: dict[str, Judged] = {}
    for key, row in baseline.rows.items():
        ratio = None
        if references and row.variant not in references:
            ratio = base_ratio_to_reference(row, baseline, references[0])
        out[key] = Judged(None, row.tolerance, row.median_s, ratio)
    return out


def read_verdicts(path: Path, run: Run) -> dict[str, Judged]:
    """A verdicts file: a JSON object {case id: verdict}, e.g. {"xtile_persistent-fp16-nt-K128": "OK"}."""
    data = read_json(path, "verdicts file")
    if not isinstance(data, dict):
        raise InputError(
            f'verdicts file {path} must be a JSON object {{"<case id>": "<verdict>", ...}}'
        )
    out: dict[str, Judged] = {}
    for key, verdict in data.items():
        if not isinstance(verdict, str) or not verdict or len(verdict) > 32:
            raise InputError(
                f"verdicts file {path}, case {key}: verdict {verdict!r} is not a short string"
            )
        if key not in run.rows:
            raise InputError(
                f"verdicts file {path} names case {key}, which results file {run.path} does not hold"
            )
        out[key] = Judged(verdict=verdict)
    return out


def baseline_for(run: Run, baseline: Path | None, baselines_dir: Path | None) -> Path | None:
    """The baseline to judge `run` with: the given file, else DIR/<gpu slug>.json when it exists."""
    if baseline is not None:
        return baseline
    if baselines_dir is not None:
        candidate = baselines_dir / f"{run.env.gpu.slug}.json"
        return candidate if candidate.is_file() else None
    return None


def baseline_levels(path: Path) -> dict[str, Judged]:
    """Tolerance and levels of every row of a baseline (no verdicts): the page's band where a
    run was stored without one."""
    from tilegate.store.files import load_baseline

    return _levels(load_baseline(path))


def crossover(ratios: dict[Any, float]) -> Any:
    """The gate's crossover: the smallest value of the pair's axis (K for the matmul benchmark)
    where `faster` stops winning (ratio >= 1); None if it wins at every one."""
    from tilegate.judge.crosstile import CrossTilePair

    return CrossTilePair.crossover(ratios)
