"""What a rebaseline tells its reviewer: the diff against the old baseline (environment, rows,
expectations), the warnings, the refusals, and the command's exit code (`finish`).
tilegate.judge.rebaselining builds the baseline; the command writes it through the store."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_FAIL, EXIT_OK
from tilegate.judge import autotune, memory, stats
from tilegate.judge.baseline import Baseline, BaselineRow
from tilegate.judge.policy import Policy, Tolerances
from tilegate.judge.results import Run, row_order
from tilegate.markdown import listing, ms, pct, table


@dataclass(frozen=True)
class Rebaseline:
    """What `tilegate rebaseline` would write, why, and what it refuses without --accept-slower."""

    baseline: Baseline
    old: Baseline | None
    lines: tuple[str, ...]  # the reviewable diff, markdown-ish text
    warnings: tuple[str, ...]
    refusals: tuple[str, ...]  # a slower run must not become the baseline silently


def run_warnings(
    runs: Sequence[Run],
    rows: Mapping[str, BaselineRow],
    per_key: Mapping[str, Sequence[Any]],
    policy: Policy,
) -> list[str]:
    warnings = []
    if len(runs) == 1:
        warnings.append(
            "built from ONE run: tolerances fall back to the floor and the run's own median CI, which "
            "cannot see drift between processes (2-3 % on compute-bound rows). Rebaseline from >= 3 runs."
        )
    short = sorted(k for k, v in per_key.items() if len(v) < len(runs))
    if short:
        warnings.append(f"{len(short)} row(s) were not measured in every run: {listing(short)}")
    reference = set(policy.reference_variants)
    noisy = sorted(k for k in per_key if rows[k].too_noisy and rows[k].variant not in reference)
    if noisy:
        warnings.append(
            f"TOO NOISY: {len(noisy)} row(s) need more tolerance than the ceiling ({policy.ceiling:.0%}), so a "
            "slowdown of that size could hide in their noise; the ceiling is used: "
            + ", ".join(f"{k} (needs {policy.multiple * rows[k].drift:.1%})" for k in noisy)
            + ". Lock clocks or run more rounds, or accept it with a reviewed override in tolerances.toml."
        )
    split = {
        k: w for k, v in per_key.items() if (w := autotune.unstable([r.autotune for _, r in v]))
    }
    if split:
        warnings.append(
            f"{len(split)} row(s) whose autotuner picked differently in different runs, stored "
            "with their picks (their spread includes the picks'): "
            + "; ".join(f"{k} ({why})" for k, why in sorted(split.items()))
        )
    for run in runs:
        if run.env.throttled:
            warnings.append(
                f"results {run.path}: the GPU THROTTLED during this run; a slow baseline hides regressions"
            )
        if run.env.dirty:
            warnings.append(
                f"results {run.path} was measured on a dirty work tree (commit {run.env.commit})"
            )
    if runs and runs[0].env.smoke:
        warnings.append(
            "these are SMOKE runs (CPU interpreter): this baseline proves the pipeline, its times mean nothing"
        )
    return warnings


# the environment a baseline's provenance records, as the review names it
_ENV = (
    ("driver", lambda p: p.get("driver")),
    ("CUDA", lambda p: p.get("cuda")),
    ("torch", lambda p: (p.get("software") or {}).get("torch")),
    ("Triton", lambda p: (p.get("software") or {}).get("triton")),
    ("harness", lambda p: p.get("harness_version")),
)


def review(
    new: Baseline,
    runs: Sequence[Run],
    old: Baseline | None,
    tolerances: Tolerances,
    per_key: Mapping[str, Any],
    kept: Sequence[str],
    exp_lines: Sequence[str],
) -> tuple[list[str], int, list[str]]:
    """The diff a reviewer reads (environment, rows, expectations), how many tolerances
    loosened, and the rows slower than the old tolerance."""
    policy, gpu, provenance, out = new.policy, new.gpu, new.provenance, new.path
    lines = [
        f"# Rebaseline {new.slug} -> {out}",
        "",
        (f"From {len(runs)} run(s): " + ", ".join(str(r.path) for r in runs))
        if runs
        else "No runs: tolerances derived again from the stored drift.",
        f"Tolerances: {tolerances.source} (multiple {policy.multiple:g} x drift, floor {policy.floor:.1%}, "
        f"ceiling {policy.ceiling:.1%})",
    ]
    # only what the runs recorded: a smoke run (the CPU interpreter) has no SMs, driver or CUDA
    facts = [
        f"{gpu.get('name')}" + (f" ({gpu['sm_count']} SMs)" if gpu.get("sm_count") else ""),
        *(f"{label} {value}" for label, get in _ENV if (value := get(provenance))),
        f"profile(s) {', '.join(provenance.get('profiles') or [])}",
    ]
    lines.append("Environment: " + ", ".join(facts))
    if old is None:
        lines.append(f"No previous baseline at {out}: every row is new.")
    else:
        was = [(what, get(old.provenance), get(provenance)) for what, get in _ENV]
        changed = [f"- {what}: {a} -> {b}" for what, a, b in was if a != b] or ["- unchanged"]
        lines += ["", "## Environment vs the old baseline", *changed]
    axes = runs[0].env.axes if runs else ()
    reference = set(policy.reference_variants)  # never "too noisy": as the warnings
    row_lines, loosened, slower = _row_diff(new.rows, old, per_key, kept, axes, reference)
    lines += ["", "## Rows", *row_lines]
    lines += ["", "## Expectations (`faster` must beat `than`: same-run ratio <= max_ratio)"]
    lines += exp_lines or ["- unchanged"]
    n_checks = sum(len(e.bounds) for e in new.expectations)
    lines.append(
        f"{len(new.expectations)} expectation(s), {n_checks} check(s) in the new baseline."
    )
    return lines, loosened, slower


def _row_diff(
    rows: Mapping[str, BaselineRow],
    old: Baseline | None,
    per_key: Mapping[str, Any],
    kept: Sequence[str],
    axes: Sequence[str],
    reference: Collection[str] = (),
) -> tuple[list[str], int, list[str]]:
    """The per-row table, how many tolerances loosened, and the rows slower than the old tolerance."""
    refusals: list[str] = []
    cells: list[list[str]] = []
    loosened = 0
    for key, row in sorted(
        rows.items(), key=lambda kv: row_order(kv[1].params, kv[1].variant, axes)
    ):
        before = old.rows.get(key) if old is not None else None
        notes = []
        if key in kept:
            notes.append("kept: not measured this time")
        elif before is None:
            notes.append("new")
        if before and row.tolerance > before.tolerance + 5e-5:
            loosened += 1
            notes.append(f"**LOOSENED** ({row.tolerance_source})")
        elif before and row.tolerance < before.tolerance - 5e-5:
            notes.append("tightened")
        if row.too_noisy and row.variant not in reference:
            notes.append("too noisy")
        moved = memory.baseline_change(before.memory, row.memory) if before else None
        if moved:  # peak memory and its tolerance (tilegate.judge.memory)
            loosened += moved[1]
            notes.append(moved[0] + (" **LOOSENED**" if moved[1] else ""))
        change = ""
        if before is not None and key in per_key:
            delta = stats.rel_change(row.median_s, before.median_s)
            change = pct(delta)
            if delta > before.tolerance:
                notes.append("**SLOWER than the old tolerance**")
                refusals.append(
                    f"row {key}: new median {ms(row.median_s, unit=True)} is {pct(delta)} against "
                    f"the old {ms(before.median_s, unit=True)} (tolerance {before.tolerance:.1%})"
                )
        was = [ms(before.median_s, unit=True), f"{before.tolerance:.1%}"] if before else ["", ""]
        now = [ms(row.median_s, unit=True), f"{row.tolerance:.1%}"]
        cells.append([key, was[0], now[0], change, was[1], now[1], "; ".join(notes)])
    header = ["case", "median old", "median new", "change", "tolerance old", "tolerance new"]
    return table([*header, "note"], "lrrrrrl", cells), loosened, refusals


def finish(
    plan: Rebaseline,
    *,
    out: Path,
    write: bool,
    accept_slower: bool,
    tolerances_missing: Path | None = None,
) -> tuple[int, list[str]]:
    """The exit code and text of a rebaseline: 1 when the runs are slower than the old baseline
    allows without `accept_slower`; the caller writes `plan.baseline` on 0 with `write`."""
    text = list(plan.lines)
    warnings = list(plan.warnings)
    if tolerances_missing is not None:
        warnings.insert(
            0, f"no tolerances file at {tolerances_missing}: the built-in policy was used"
        )
    if warnings:
        text += ["", "## Warnings", *(f"- {w}" for w in warnings)]
    code = EXIT_OK
    if plan.refusals:
        text += ["", "## Slower than the old baseline", *(f"- {r}" for r in plan.refusals), ""]
        if accept_slower:
            text.append("Accepted with --accept-slower: say why in the commit message.")
        else:
            old = plan.old.path if plan.old else "the old baseline"
            text.append(
                f"REFUSED: these runs are slower than {old} allows, and a rebaseline must not hide "
                "a regression. If the slowdown is understood and accepted (say why in the commit "
                "message), run again with --accept-slower."
            )
            code = EXIT_FAIL
    if code == EXIT_OK and not write:
        text += ["", f"--check: {out} not written."]
    elif code == EXIT_OK:
        then = "Review `git diff` and commit it."
        if plan.baseline.mode == "smoke":
            then = "A smoke baseline proves the pipeline: do not commit it."
        written = f"{len(plan.baseline.rows)} rows, {len(plan.baseline.expectations)} expectations"
        text += ["", f"Wrote {out} ({written}). {then}"]
    return code, text
