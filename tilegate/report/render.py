"""The report: markdown for the terminal, `.perf/report.md` and a pull-request comment.

Most useful first: the headline (the first line, which other tools read); the banners (what makes
the numbers less than a measurement); `## Deciding cases`, one row per thing that decides the exit
code (the PR comment copies it); the A/B verdict; the stored-baseline verdict; the environment;
the relational pairs; the expectations; every row. What is not measured or did not change is
folded into `<details>` blocks (nothing dropped), so a run where nothing changed reads in one screen.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tilegate.errors import EXIT_CANNOT_JUDGE
from tilegate.explain.diff import what_changed
from tilegate.harness.identity import UNKNOWN
from tilegate.judge.abcase import UNSTABLE_TODO, ABCase
from tilegate.judge.abcompare import ABComparison
from tilegate.judge.abnoise import HOST_POLICY
from tilegate.judge.autotune import TUNER_FLIP
from tilegate.judge.baseline import DEFAULT_DIR, Baseline
from tilegate.judge.bisection import command
from tilegate.judge.coverage import Coverage
from tilegate.judge.crosstile import CrossTilePair, ExpectationResult, Status
from tilegate.judge.gate import Judgement
from tilegate.judge.outcome import Outcome
from tilegate.judge.results import Run
from tilegate.judge.verdict import Comparison, Verdict
from tilegate.judge.vocabulary import ABVerdict
from tilegate.markdown import listing, ms, p_value, pct, short_sha, table
from tilegate.report import memory
from tilegate.report.pr_comment import DECIDING
from tilegate.report.why import why_section

_VERDICT_TEXT = {
    Verdict.REGRESSED: "**REGRESSED**",
    Verdict.UNSURE: "UNSURE",
    Verdict.IMPROVED: "improved",
    Verdict.OK: "ok",
    Verdict.NEW: "new",
    Verdict.NOT_MEASURED: "not measured",
    Verdict.SHIFTED: "shifted (machine)",
    Verdict.OFF_GPU: "**GPU OFF**: not judged",
    Verdict.GONE: "**VARIANT REMOVED**",
}
_AB_TEXT = {
    ABVerdict.SLOWER: "**SLOWER**",
    ABVerdict.FASTER: "faster",
    ABVerdict.SAME: "same",
    ABVerdict.AMBIGUOUS: "AMBIGUOUS",
    ABVerdict.UNCHANGED: "unchanged code",
    ABVerdict.NEW: "new",
    ABVerdict.REMOVED: "removed",
    ABVerdict.INCONSISTENT: "**SAME CODE, TIME MOVED**",
    ABVerdict.UNSTABLE: "**UNSTABLE**",
}


def _pretty(variant: str) -> str:
    return variant.replace("_", " ")


def _fold(summary: str, body: Sequence[str]) -> list[str]:
    """A `<details>` block: `summary` (plain text, `code` spans allowed) shown, `body` folded
    (the blank lines around it let GitHub render the markdown inside)."""
    text = html.escape(summary, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text).replace("**", "")
    return [f"<details><summary>{text}</summary>", "", *body, "", "</details>", ""]


# --- the deciding cases ------------------------------------------------------------------------------


def _by(items: Sequence[Any], *verdicts: Any) -> list[Any]:
    """The rows (or A/B cases) of the judgement with one of these verdicts, in its order."""
    return [x for x in items if x.verdict in verdicts]


def _where(where: Mapping[str, Any]) -> str:
    """`fp16 nt`: an expectation's setting of the other axes, as its check names it."""
    return " ".join(str(v) for v in where.values())


def _beyond_doubt(c: Any) -> bool:
    """The judge's word (tilegate.judge.gate.judgement sets it once), never decided here."""
    return bool(getattr(c, "beyond_doubt", False))


def _confirmed(c: Any, settled: bool = False) -> str:
    """How a failing A/B case stands after the confirmation (tilegate.judge.confirm).
    `settled`: the run had a case beyond doubt, so nothing was measured again."""
    if len(c.run_ratios) > 1:
        return ", confirmed"
    if _beyond_doubt(c):
        return ", beyond doubt in one run (not re-measured)"
    return (
        ", in one run (not re-measured: the run fails on the cases beyond doubt)" if settled else ""
    )


def _settled(ab: ABComparison | None) -> bool:
    """Whether the run's failure was beyond doubt after one run (no confirmation measured)."""
    return (
        ab is not None
        and not ab.confirmations
        and any(len(c.run_ratios) == 1 and _beyond_doubt(c) for c in ab.cases)
    )


_Row = tuple[str, str, str, str, str]


def _interval(c: Any) -> str:
    return f"{pct(c.ci[0] - 1)} .. {pct(c.ci[1] - 1)}" if c.ci else ""


def _tol(x: float | None) -> str:
    return f"{x:.1%}" if x is not None else ""


def _deciding_ab(result: Outcome, ab: ABComparison | None) -> list[_Row]:
    """The A/B cases that decide: slower, unstable, same code whose time moved, removed."""
    rows: list[_Row] = []
    settled = _settled(ab)
    for c in result.slower:
        what = (
            "SLOWER than the base"
            + (", by its median at the round cap" if c.by_median else "")
            + _confirmed(c, settled)
        )
        change, limit = pct((c.ratio or 1) - 1), _tol(c.tolerance)
        if c.by_median:  # about its tolerance: 0.1 % would print both alike
            change, limit = f"{(c.ratio or 1) - 1:+.2%}", f"{c.tolerance or 0:.2%}"
        rows.append((f"`{c.key}`", what, change, _interval(c), limit))
    for c in (*result.unstable_slower, *result.unstable):
        modes = " / ".join(m.describe() for m in c.modes) or "medians and ratio disagree"
        exit_ = "a mode slower: fails" if c.fails else "no mode slower: exit 2"
        if result.smoke:
            exit_ = "a mode slower" if c.fails else "no mode slower"
        what = f"UNSTABLE ({exit_}): {UNSTABLE_TODO}"
        rows.append((f"`{c.key}`", what, modes, _interval(c), _tol(c.tolerance)))
    for c in result.inconsistent:
        what, change = "SAME CODE, TIME MOVED (exit 2)", pct((c.ratio or 1) - 1)
        rows.append((f"`{c.key}`", what, change, _interval(c), _tol(c.tolerance)))
    for c in result.removed:
        rows.append((f"`{c.key}`", "REMOVED from the head", "", f"variant `{c.variant}`", ""))
    return rows


def _deciding_rows(judged: Judgement) -> list[_Row]:
    """One row per thing that decides the exit code, in the report's order."""
    cmp, coverage, result = judged.comparison, judged.coverage, judged.outcome
    rows: list[_Row] = []
    for line in judged.failing_integrity:
        rows.append((line, "baseline loosened (not acknowledged)", "", "", ""))
    if coverage is not None:
        for missing in coverage.missing:
            rows.append(
                (f"`{missing.key}`", "NOT MEASURED (the protocol's case)", "", missing.why, "")
            )
        for unchecked in coverage.expectations:
            what, _, why = unchecked.partition(": ")
            rows.append((what, "expectation NOT CHECKED", "", why, ""))
    rows += _deciding_ab(result, judged.ab)
    for r in result.gone:
        rows.append(
            (f"`{r.key}`", "REMOVED: baseline row of a variant not in the registry", "", "", "")
        )
    for r in result.regressions:
        runs = (
            f"; per run {', '.join(pct(d) for d in r.run_deltas)}" if len(r.run_deltas) > 1 else ""
        )
        what, bound = "REGRESSED against the baseline", f"p {p_value(r.p_slower)}{runs}"
        rows.append((f"`{r.key}`", what, pct(r.delta), bound, _tol(r.tolerance)))
    for e in result.broken:
        x = e.expectation
        rows.append(
            (
                f"`{x.faster}` / `{x.than}` {_where(x.where)} {e.at}",
                "broken expectation",
                f"ratio {e.ratio:.3f}" if e.ratio is not None else "",
                f"<= {e.max_ratio:.3f}" + (f": {e.note}" if e.note else ""),
                "",
            )
        )
    rows += memory.deciding_rows(judged)
    if (result.code == EXIT_CANNOT_JUDGE or result.smoke) and cmp is not None:
        for g in cmp.off_gpus:
            gpu = f"GPU {g.index}" + (f" ({g.serial})" if g.serial else "")
            rows.append((gpu, "GPU OFF: its rows not judged (exit 2)", "", g.why, ""))
    return rows


def _deciding(judged: Judgement) -> list[str]:
    """One row per thing that decides the exit code; a sentence when nothing does."""
    cmp, ab, coverage = judged.comparison, judged.ab, judged.coverage
    if cmp is None and ab is None and (coverage is None or not coverage.fails):
        return []
    result = judged.outcome
    rows = _deciding_rows(judged)
    out = [DECIDING, ""]
    if judged.report_only:
        out += [
            "Report only: the timings' verdicts would decide; this run does not fail on them"
            + (" (it fails on what it did not measure)." if coverage and coverage.fails else "."),
            "",
        ]
    elif result.smoke and rows:
        out += [
            "Smoke run (an interpreter profile): its timings mean nothing, so the timing "
            "verdicts below are shown and fail nothing; the run fails only on what it did not "
            "measure or check, a removed variant or a loosened baseline.",
            "",
        ]
    if rows:
        header = ["case", "decided by", "change", "interval or bound", "tolerance"]
        return [*out, *table(header, "llrlr", rows), ""]
    counted: list[str] = []
    if ab is not None:
        counted.append(
            f"{len(ab.cases)} A/B case(s), {len(ab.changed_code)} variant(s) with changed code"
        )
    if cmp is not None:
        n = sum(r.verdict not in (Verdict.NOT_MEASURED, Verdict.NEW) for r in cmp.rows)
        m = sum(c.status is not Status.NOT_MEASURED for c in cmp.expectations)
        counted.append(f"{n} row(s) judged against the baseline, {m} expectation check(s)")
    return [*out, f"None: nothing fails ({'; '.join(counted)}).", ""]


# --- header and summary ----------------------------------------------------------------------------


def _coverage(coverage: Coverage | None) -> list[str]:
    """What the protocol said to measure and whether the run did: near the top."""
    if coverage is None:
        return []
    head = (
        f"{coverage.expected} case(s) of {coverage.protocol} protocol, profile "
        f"`{coverage.profile}`, and every stored-baseline row of its grid points must be measured"
    )
    out = ["## Coverage", ""]
    if not coverage.fails:
        out += [f"{head}: all measured, every declared expectation checked."]
    else:
        out += [f"{head}: **{', '.join(coverage.parts)}** (this fails the run)."]
    out.append("")
    if coverage.missing:
        rows = [(f"`{m.key}`", m.why) for m in coverage.missing]
        out += [*table(["case not measured", "why"], "ll", rows), ""]
    for e in coverage.expectations:
        out.append(f"- expectation {e}")
    if coverage.expectations:
        out.append("")
    if coverage.not_measurable:
        out += _fold(
            f"{len(coverage.not_measurable)} case(s) not measurable on this machine (their "
            "variant cannot run here, nor could the base's or the stored baseline's): not judged",
            [f"`{m.key}`: {m.why}" for m in coverage.not_measurable],
        )
    if coverage.not_selected:
        out += _fold(
            f"{len(coverage.not_selected)} case(s) not selected: left out by "
            f"{', '.join(coverage.narrowed) or 'the command line'} (a person's choice, not judged)",
            [", ".join(f"`{k}`" for k in coverage.not_selected)],
        )
    return out


def _bullet(title: str, items: Sequence[str], hint: str = "") -> list[str]:
    """A summary line: the title, how many, the first eight items, what to do."""
    if not items:
        return []
    shown = "; ".join(items[:8]) + (f"; and {len(items) - 8} more" if len(items) > 8 else "")
    return [f"- **{title}** ({len(items)}): {shown}" + (f". {hint}" if hint else "")]


def _hint(what: str, run: Run) -> str:
    """`tilegate WHAT --profile P`: a hint that works as printed where `run` was measured."""
    return f"`tilegate {what} --profile {run.env.profile}`"


def _find_the_commit(cmp: Comparison, result: Outcome) -> list[str]:
    """The `tilegate bisect` of a failed run's range: the regressed rows' baseline commit .. this."""
    goods = {(r.base.measured if r.base else {}).get("commit") for r in result.regressions}
    if len(goods) != 1 or None in goods or goods == {cmp.run.env.commit}:
        return []
    keys = [r.key for r in result.regressions if r.tolerance]
    cmd = command(str(goods.pop()), str(cmp.run.env.commit), keys, cmp.run.env.profile)
    return [f"  Find the commit: `{cmd}`"]


def _summary_failing(cmp: Comparison, result: Outcome) -> list[str]:
    """The summary's bullets of what fails, or would but for the base or the machine."""
    rebaseline = _hint("rebaseline --measure 3", cmp.run)
    out = _bullet(
        "Regressed",
        [f"`{r.key}` {pct(r.delta)}" for r in result.regressions if r.tolerance],
        "Slower than the tolerance and significant"
        + (" in the confirmation runs too" if cmp.confirmations else "")
        + ", and not a shift the reference shared (docs/gate.md).",
    )
    out += _find_the_commit(cmp, result) if out else []
    out += _bullet(
        "Baseline rows of a variant that no longer exists",
        [f"`{r.key}`" for r in result.gone],
        "Removed from the registry, not renamed (`renamed_from=`): they and their expectations "
        "would escape the gate. Fails until the baseline drops them, reviewed (docs/gate.md).",
    )
    out += _bullet(
        "Slower than the baseline, code unchanged by this pull request",
        [f"`{r.key}` {pct(r.delta)}" for r in result.drift],
        "Their compiled code is the base's (A/B above): drift since the baseline, not this "
        f"change. Not a failure here; {rebaseline} once understood.",
    )
    out += _bullet(
        "Slower than the baseline, no slower than the base",
        [f"`{r.key}` {pct(r.delta)} (A/B {pct((c.ratio or 1) - 1)})" for r, c in result.cleared],
        "This pull request changed their code, and the A/B, timing them beside the base in the "
        "same rounds, found them no slower than the base (A/B above): the base is as far from "
        "the baseline, drift since the baseline, not this change. Not a failure here; "
        f"{rebaseline} once understood.",
    )
    out += _bullet(
        "GPUs off",
        [
            f"GPU {g.index}" + (f" ({g.serial})" if g.serial else "") + f": {g.why}"
            for g in cmp.off_gpus
        ],
        "Their rows are not judged against the other GPUs' (GPU OFF): re-run on a healthy GPU "
        "or look at this one (clocks, power, temperature in the environment section). Exit 2.",
    )
    return out


def _summary(cmp: Comparison, result: Outcome) -> list[str]:
    out = _summary_failing(cmp, result)
    out += _bullet(
        "Shifted with the machine",
        [
            f"`{r.key}` {pct(r.delta)} (vs the reference {pct(r.rel_delta)})"
            for r in _by(cmp.rows, Verdict.SHIFTED)
        ],
        "Slower, but so was the reference in the same rounds and the code did not change: "
        "the GPU's power budget or a neighbour moved, not these rows. Not failures.",
    )
    out += _bullet(
        "Broken expectations",
        [
            f"`{c.expectation.faster}` / `{c.expectation.than}` {_where(c.expectation.where)} {c.at}"
            for c in cmp.broken
            if c.ratio
        ],
        "Ratio and bound in the deciding cases above.",
    )
    out += _bullet(
        "Unsure, measure again",
        [f"`{r.key}` {pct(r.delta)}" for r in _by(cmp.rows, Verdict.UNSURE)],
        f"Not counted as failures: re-measure them ({_hint('perf', cmp.run)} does; by hand, "
        "`--suspects-out` then `--confirm`).",
    )
    out += _bullet(
        "Reference rows slower",
        [
            f"`{r.key}` {pct(r.delta)}"
            for r in cmp.rows
            if r.reference and r.verdict is Verdict.REGRESSED
        ],
        f"The reference (`{cmp.run.reference or 'reference'}`) is not the code under test: when it "
        "moves, suspect the machine, the driver or the libraries it calls.",
    )
    out += _bullet(
        "Improved",
        [f"`{r.key}` {pct(r.delta)}" for r in _by(cmp.rows, Verdict.IMPROVED)],
        # what rebaseline writes in the repository, not where this run read its baseline (a
        # pull request's gate reads the base's, extracted into its output directory)
        f"Not a failure. Lock it in: {_hint('rebaseline --measure 3', cmp.run)} on this GPU (writes "
        f"{DEFAULT_DIR / Path(cmp.baseline.path).name}).",
    )
    out += _bullet(
        "Faster than the tolerance, not significant",
        [f"`{r.key}` {pct(r.delta)}" for r in _by(cmp.rows, Verdict.OK) if not _within(r)],
        "Not a failure, not yet an improvement: measure more before a rebaseline locks it in.",
    )
    out += _bullet(
        "New rows",
        [f"`{r.key}`" for r in _by(cmp.rows, Verdict.NEW)],
        "Not in the baseline, not judged: rebaseline to start judging them.",
    )
    missing = list(cmp.missing_allowed)
    out += _bullet(
        "Missing rows",
        [f"`{k}`" for k in missing],
        "Their groups ran but they did not (--allow-missing): see the pytest log.",
    )
    not_measured = [r for r in _by(cmp.rows, Verdict.NOT_MEASURED) if r.key not in missing]
    if not_measured:
        out.append(
            f"- {len(not_measured)} baseline row(s) are outside this run's profile and were not judged."
        )
    if not out:
        n = sum(1 for r in cmp.rows if r.verdict is Verdict.OK and _within(r))
        out.append(
            f"- All {n} rows within tolerance; all {sum(c.status is Status.PASS for c in cmp.expectations)} expectation checks hold."
        )
    return out


# --- A/B against the base ----------------------------------------------------------------------------


def _ab_budget(ab: Any) -> list[str]:
    """How the run's rounds were spent (tilegate.harness.budget), when it was budgeted."""
    budget = ab.run.env.budget
    line = budget.get("summary") if budget else None
    return [f"*{line}*", ""] if isinstance(line, str) and line else []


def _flip(c: ABCase) -> str:
    """`case` -25.0 % as picked, +0.1 % on one config (BK=64, num_warps=4)."""
    if c.pinned is None or c.picked_ratio is None:
        return f"`{c.key}` {pct((c.ratio or 1) - 1)} (not re-timed on one config)"
    return (
        f"`{c.key}` {pct(c.picked_ratio - 1)} as picked, {pct((c.ratio or 1) - 1)} on one "
        f"config ({c.pinned})"
    )


def _ab_summary(ab: ABComparison) -> list[str]:
    def case(c: Any) -> str:  # the interval and tolerance: the deciding cases and the table
        return f"`{c.key}` {pct((c.ratio or 1) - 1)}"

    out = _bullet(
        "Slower than the base",
        [case(c) for c in _by(ab.cases, ABVerdict.SLOWER)],
        "Paired per round with the base's own kernel"
        + (" and confirmed by a re-measurement" if ab.confirmations else "")
        + (
            " (those beyond doubt in one run were not re-measured)"
            if any(
                len(c.run_ratios) == 1 and _beyond_doubt(c) for c in _by(ab.cases, ABVerdict.SLOWER)
            )
            else ""
        )
        + "; intervals in the deciding cases above.",
    )
    out += _bullet(
        "Ambiguous, measure more",
        [case(c) for c in _by(ab.cases, ABVerdict.AMBIGUOUS)],
        "The interval crosses the tolerance: not a failure. Where the note says slower or "
        "faster, the change is real and about the size of its tolerance: more rounds narrow the "
        "interval around the tolerance and seldom decide it.",
    )
    out += _bullet("Faster than the base", [case(c) for c in _by(ab.cases, ABVerdict.FASTER)])
    out += _bullet(
        "Unstable: two modes, not decided on the mixture",
        [f"`{c.key}`" for c in _by(ab.cases, ABVerdict.UNSTABLE)],
        "Its modes and where they came from (run, rounds) in the deciding cases above.",
    )
    changed = ab.changed_code
    variants = sorted({c.variant for c in ab.cases})
    same = [v for v in variants if v not in changed]
    what = what_changed(ab.run.path, ab) if changed else {}
    out.append(
        "- **Compiled code changed** for "
        + (
            ", ".join(f"`{v}`" + (f" ({what[v]})" if v in what else "") for v in changed)
            or "no variant"
        )
        + (f"; the same as the base for {listing([f'`{v}`' for v in same])}" if same else "")
        + ". A case whose code is the base's cannot be blamed."
    )
    out += _bounds(ab.cases)
    out += _bullet(
        "Tuner flips (the same source and configs, another autotuner pick; not blamed)",
        [_flip(c) for c in ab.cases if c.explained_by == TUNER_FLIP],
        "Each case's picks in its note and its why. A flip is re-timed with both sides on the "
        "base's pick, and judged on that time: within its tolerance there, the pick explains "
        "the difference; a difference that remains is judged as a code change.",
    )
    out += _bullet(
        "New in the head (not judged)", [f"`{c.key}`" for c in _by(ab.cases, ABVerdict.NEW)]
    )
    out += _bullet(
        "The code is the same but the time moved",
        [f"`{c.key}` {pct((c.ratio or 1) - 1)}" for c in _by(ab.cases, ABVerdict.INCONSISTENT)],
        "Identical identity on both sides, a paired ratio A/A noise cannot give (> 5 x its "
        "tolerance and > 3 %): something outside the identity changed. Cannot judge (exit 2).",
    )
    removed = _by(ab.cases, ABVerdict.REMOVED)
    out += _bullet(
        "Removed from the head"
        + ("" if all(c.acknowledged for c in removed) else ", fails until acknowledged"),
        [f"`{c.key}`" for c in removed],
        "A variant of the base the head lacks (not renamed: `renamed_from=`) takes its cases "
        "and expectations with it.",
    )
    if ab.noise is not None:
        runs = len(ab.noise.provenance.get("runs") or [])
        out.append(f"- Tolerances from the A/A noise in `{ab.noise.path}` ({runs} runs).")
    else:  # a smoke run's noise means nothing: no hint to record it
        record = f" Record one with {_hint('ab-noise --measure 4', ab.run)}."
        out.append(
            f"- No A/A noise file for this GPU: every case uses the {ab.policy.ceiling:.1%} "
            f"ceiling ({HOST_POLICY.ceiling:.0%} where judged on its host time)."
            + ("" if ab.run.env.smoke else record)
        )
    return out


def _bounds(cases: Sequence[ABCase]) -> list[str]:
    """What bounds each case's call, and which time it was judged on (tilegate.judge.abcompare's
    judge_bound): the GPU, or the host (host time per call at or above the GPU time on either
    side); nothing where no host time was measured (the smoke profile)."""
    gpu, host, held = [], [], []
    for c in cases:
        if c.host_bound is None:
            continue
        if c.judged_on == "host":
            host.append(f"`{c.key}`")
        elif c.host_bound:
            held.append(f"`{c.key}`")
        else:
            gpu.append(c.key)
    if not (gpu or host or held):
        return []
    parts = (
        [
            f"the GPU for {'every case' if not (host or held) else f'{len(gpu)} case(s)'} "
            "(host time per call under the GPU time: judged on the GPU time)"
        ]
        if gpu
        else []
    )
    if host:
        parts.append(f"the host for {listing(host)} (judged on the host time and the GPU time)")
    if held:
        parts.append(
            f"{'and ' if host else 'the host '}for {listing(held)} (judged on the GPU time; "
            "its note says why)"
        )
    return [f"- **What bounds the calls**: {'; '.join(parts)}."]


def _ab_rows(cases: Sequence[Any]) -> list[Sequence[Any]]:
    rows: list[Sequence[Any]] = []
    for c in cases:
        code = {True: "changed", False: "same", None: "?"}[c.code_changed]
        if UNKNOWN in (c.head and c.head.code_hash_kind, c.base and c.base.code_hash_kind):
            code = "unknown (profiler unreadable)"  # never "same": judged on its time
        rows.append(
            (
                f"`{c.key}`",
                *(ms(t) for t in _gpu(c)),
                _host(c),
                f"{c.ratio:.4f}" if c.ratio is not None else "",
                f"{pct(c.ci[0] - 1)} .. {pct(c.ci[1] - 1)}" if c.ci else "",
                f"{c.tolerance:.2%}" if c.tolerance is not None else "",
                p_value(c.p_slower if c.ratio is None or c.ratio >= 1 else c.p_faster),
                code if c.head and c.base else "",
                _AB_TEXT[c.verdict],
                c.note,
            )
        )
    return rows


def _gpu(c: Any) -> tuple[float | None, float | None]:
    """The GPU time per call, base and head: the medians of the paired rounds the ratio pools
    (judged on the host: those of the GPU time, tilegate.judge.abcompare's gpu_medians_s)."""
    if getattr(c, "gpu_medians_s", None) is not None:
        return c.gpu_medians_s[0], c.gpu_medians_s[1]
    return _median(c.base_median_s, c.base), _median(c.head_median_s, c.head)


def _host(c: Any) -> str:
    """The host time per call, base -> head, and which time the verdict is on (the one that
    bounds the call: tilegate.judge.abcompare's judged_on), e.g. `0.021 -> 0.024 (judged)`: judged,
    the medians of the paired rounds its ratio pools; else each row's own."""
    if getattr(c, "judged_on", "gpu") == "host" and c.base_median_s is not None:
        b, h = c.base_median_s, c.head_median_s
    else:
        b, h = (getattr(r, "host_s", None) for r in (c.base, c.head))
    if b is None and h is None:
        return ""
    shown = f"{ms(b)} -> {ms(h)}" if b is not None and h is not None else ms(b or h)
    return shown + (" (judged)" if getattr(c, "judged_on", "gpu") == "host" else "")


def _median(pooled: float | None, row: Any) -> float | None:
    """The medians of the rounds the ratio pools (every run); a case with no ratio, its row's."""
    return pooled if pooled is not None else row.median_s if row is not None else None


def _ab_table(ab: ABComparison) -> list[str]:
    """The cases whose code changed in full; the unchanged ones folded (their ratio is noise)."""
    header = [
        "case",
        "GPU base (ms)",
        "GPU head (ms)",
        "host base -> head (ms)",
        "head / base",
        "interval",
        "tolerance",
        "p",
        "code",
        "verdict",
        "note",
    ]
    align = "lrrrrrrrlll"
    judged = [c for c in ab.cases if c.code_changed is not False]
    same = [c for c in ab.cases if c.code_changed is False]
    legend = [
        "*head / base*: the median over rounds of head_i / base_i, both timed back to back in every "
        "round; *GPU base*, *GPU head*: the medians of the same rounds (every run, confirmations "
        "too); *host*: host seconds per call of its wrapper, marked (judged) where the host "
        "bounds the call (its medians over the same rounds; the ratio, interval and verdict are "
        "then the host time's, else the GPU's)"
        f"; *interval*: its {ab.policy.confidence:.0%} confidence interval; *p*: one-sided "
        "Wilcoxon signed-rank test in the direction of the change.",
        "",
    ]
    out: list[str] = []
    if judged:
        out += [
            *legend,
            "### Cases whose compiled code changed",
            "",
            *table(header, align, _ab_rows(judged)),
            "",
        ]
    if same:
        noise = [c for c in same if c.explained_by != TUNER_FLIP] or same  # flips: their picks'
        worst = max(noise, key=lambda c: abs((c.ratio or 1.0) - 1))
        out += _fold(
            f"{len(same)} case(s) with the base's compiled code: not judged; their ratio is the "
            f"A/B noise (largest: {pct((worst.ratio or 1.0) - 1)}, `{worst.key}`)",
            [*([] if judged else legend), *table(header, align, _ab_rows(same))],
        )
    return out


def _ab(ab: ABComparison) -> list[str]:
    sha = f" (`{ab.sha[:12]}`)" if ab.sha else ""
    confirmed = (
        f", confirmed by {len(ab.confirmations)} re-measurement(s)" if ab.confirmations else ""
    )
    return [
        f"## A/B against `{ab.ref}`{sha}: "
        + (
            "each side its own checkout and process, paired round by round"
            if ab.processes == 2
            else "each side its own checkout, both in one process, the same rounds"
        )
        + confirmed,
        "",
        *_ab_budget(ab),
        *_ab_summary(ab),
        "",
        *_ab_table(ab),
    ]


# --- environment -------------------------------------------------------------------------------------


def _env_rows(run: Run, baseline: Baseline | None) -> list[tuple[str, str, str]]:
    e = run.env
    prov: Mapping[str, Any] = baseline.provenance if baseline else {}
    gpu: Mapping[str, Any] = baseline.gpu if baseline else {}
    sw: Mapping[str, Any] = prov.get("software") or {}

    def s(x: Any) -> str:
        return "-" if x is None else str(x)

    def gpu_text(name: Any, sms: Any) -> str:
        return f"{name}, {sms} SMs" if sms is not None else s(name)

    commit = short_sha(e.commit or "-") + (" (dirty)" if e.dirty else "")
    base_commits = {
        short_sha(str(r.get("commit"))) for r in prov.get("runs") or [] if isinstance(r, dict)
    }
    return [
        (
            "GPU",
            gpu_text(e.gpu.name, e.gpu.sm_count),
            gpu_text(gpu.get("name"), gpu.get("sm_count")) if gpu else "",
        ),
        ("driver", s(e.gpu.driver), s(prov.get("driver"))),
        ("CUDA", s(e.gpu.cuda), s(prov.get("cuda"))),
        ("torch", s(e.software.get("torch")), s(sw.get("torch"))),
        ("Triton", s(e.software.get("triton")), s(sw.get("triton"))),
        ("Python", s(e.software.get("python")), s(sw.get("python"))),
        ("harness", e.harness_version, s(prov.get("harness_version"))),
        ("mode", e.mode, s(prov.get("mode"))),
        ("profile", e.profile, ", ".join(prov.get("profiles") or [])),
        (
            "fixed parameters",
            ", ".join(f"{k} = {v}" for k, v in e.fixed.items()) or "-",
            ", ".join(f"{k} = {v}" for k, v in _fixed(prov).items()) if prov else "",
        ),
        ("rounds", s(e.rounds), s(prov.get("rounds"))),
        (
            "timer, L2 flush",
            f"{s(e.timer)}, {s(e.l2_flush)}",
            f"{s(prov.get('timer'))}, {s(prov.get('l2_flush'))}" if prov else "",
        ),
        ("commit", commit, ", ".join(sorted(base_commits))),
        ("date", s(e.datetime)[:19], str(prov.get("created") or "")[:19]),
    ]


def _environment(run: Run, baseline: Baseline | None) -> list[str]:
    rows = _env_rows(run, baseline)
    out = ["## Environment", ""]
    now = dict((k, v) for k, v, _ in rows)
    brief = f"This run: {now['GPU']}, driver {now['driver']}, CUDA {now['CUDA']}, torch " + (
        f"{now['torch']}, Triton {now['Triton']}, {now['mode']}, profile {now['profile']}, "
        f"{now['rounds']} rounds, commit {now['commit']}"
    )
    changed: list[str] = []
    if baseline is None:
        grid = table(["", "this run"], "ll", [(k, v) for k, v, _ in rows])
    else:
        # commit and date always differ; they are context, not a difference worth flagging
        quiet = {"commit", "date"}
        cells = [
            (k, v, b, "**differs**" if v != b and k not in quiet and b else "") for k, v, b in rows
        ]
        grid = table(["", "this run", "baseline", ""], "llll", cells)
        changed = [k for k, v, b, flag in cells if flag]
    folded = not set(changed) & set(_ENVIRONMENT)
    if not folded:  # what changes the kernels' speed: in full
        out += grid
    else:
        out += _fold(
            brief + (f"; differs from the baseline: {', '.join(changed)}" if changed else ""), grid
        )
        out.pop()
    if changed and not folded:
        why = (
            " A new Triton changes the generated kernels: read the cross-tile section first."
            if "Triton" in changed
            else ""
        )
        out += ["", f"Differs from the baseline: {', '.join(changed)}.{why}"]
    e = run.env
    if e.throttled is None and not e.smoke:
        out += ["", "GPU state: not recorded (no NVML), throttling cannot be ruled out."]
    elif not e.throttled and e.state_notes:
        out += ["", "GPU state: no slowdown recorded; " + "; ".join(e.state_notes) + "."]
    return out


# --- cross-tile pairs -------------------------------------------------------------------------------


def _crossover_text(f: CrossTilePair) -> str:
    now = f.crossover_now
    top = max(f.now)

    def say(k: Any, ratios: Mapping[Any, float]) -> str:
        if not ratios:
            return "unknown"
        if k is None:
            return f"none up to {f.per}={max(ratios)} (wins everywhere measured)"
        if k == min(ratios):
            return f"{f.per}={k} (loses from the smallest {f.per})"
        return f"{f.per}={k}"

    text = f"Crossover (smallest {f.per} where {f.faster} stops winning): **{say(now, f.now)}**"
    if f.base:
        base_in_range = {k: r for k, r in f.base.items() if k <= top}
        base = f.crossover_base
        same = "same as" if base == now else "baseline:"
        text += f"; {same} the baseline" if base == now else f"; {same} {say(base, base_in_range)}"
    return text + "."


def _fixed(prov: Mapping[str, Any]) -> dict[str, Any]:
    """A baseline's fixed parameters (provenance.fixed; before it, M and N)."""
    fixed = prov.get("fixed")
    if isinstance(fixed, dict):
        return dict(fixed)
    return {k: prov[k] for k in ("M", "N") if prov.get(k) is not None}


def _pair(f: CrossTilePair, checks: Sequence[ExpectationResult], with_baseline: bool) -> list[str]:
    by_k = {
        c.value: c
        for c in checks
        if (c.expectation.faster, c.expectation.than, dict(c.expectation.where))
        == (f.faster, f.than, dict(f.where))
    }
    rows = []
    for K in f.values:
        than, faster = f.medians.get(K, (None, None))
        c = by_k.get(K)
        expect = ""
        if c is not None:
            expect = f"<= {pct(c.max_ratio - 1)}: {'PASS' if c.status is Status.PASS else '**FAIL**' if c.status is Status.FAIL else c.status.value}"
        base = f.base.get(K)
        cells = [
            str(K),
            ms(than),
            ms(faster),
            f"**{pct(f.now[K] - 1)}**" if f.now[K] < 1 else pct(f.now[K] - 1),
        ]
        if f.ab_base:
            theirs = f.ab_base.get(K)
            cells.append(pct(theirs - 1) if theirs is not None else "")
        if with_baseline:
            cells += [pct(base - 1) if base is not None else "", expect]
        rows.append(cells)
    title = f"### {_pretty(f.faster)} vs {_pretty(f.than)} ({f.label})"
    header = [f.per, f"{_pretty(f.than)} (ms)", f"{_pretty(f.faster)} (ms)", "change"]
    if f.ab_base:
        header.append("change in the A/B base")
    if with_baseline:
        header += ["baseline change", "expectation"]
    align = "r" * (len(header) - 1) + ("l" if with_baseline else "r")
    grid = table(header, align, rows)
    crossover = _crossover_text(f)
    if not with_baseline or _pair_changed(f, by_k.values()):
        return [title, "", *grid, "", crossover, ""]
    # nothing broke and the crossover is the baseline's: one line, the table folded
    short = re.sub(r"^Crossover \(.*?\): ", "crossover ", crossover)
    return _fold(f"{title.removeprefix('### ')}: {short}", [*grid, "", crossover])


def _pair_changed(f: CrossTilePair, checks: Any) -> bool:
    """A pair to show in full: an expectation of it broke, or its crossover moved."""
    moved = bool(f.base) and f.crossover_base != f.crossover_now
    return moved or any(c.status is Status.FAIL for c in checks)


def _pairs(fams: Sequence[CrossTilePair], cmp: Comparison | None) -> list[str]:
    """The Judgement's pairs (`Judgement.pairs`), each a table and its crossover."""
    if not fams:
        return []
    legend = [
        "Median time per call; *change* is the first variant's time over the second's (an "
        "expectation's `faster` over its `than`), measured in the same rounds (the paired median "
        "ratio minus one): negative means the first wins. Expectations are checked on this ratio, "
        "never on stored absolute times.",
        "",
    ]
    parts = [_pair(f, cmp.expectations if cmp else (), with_baseline=cmp is not None) for f in fams]
    if all(
        part[0].startswith("<details>") for part in parts
    ):  # every pair folded: so is the legend
        parts[0][2:2] = legend
        legend = []
    return ["## Relational pairs", "", *legend, *(x for part in parts for x in part)]


# --- expectations and rows -------------------------------------------------------------------------------


_STATUS = {Status.PASS: "PASS", Status.FAIL: "**FAIL**", Status.NOT_MEASURED: "not measured"}


def _expectations(cmp: Comparison) -> list[str]:
    if not cmp.expectations:
        none = "The baseline holds no expectations (no clear win of a declared pair at rebaseline)."
        return ["## Expectations", "", none, ""]
    per_run = any(len(c.run_ratios) > 1 for c in cmp.expectations)
    rows: dict[Status, list[list[str]]] = {s: [] for s in Status}
    for c in cmp.expectations:
        e = c.expectation
        status = _STATUS[c.status]
        cells = [
            f"`{e.faster}` / `{e.than}`, {_where(e.where)}",
            c.at,
            f"{c.max_ratio:.3f}",
            f"{c.ratio:.3f}" if c.ratio is not None else "",
            f"{c.baseline_ratio:.3f}" if c.baseline_ratio is not None else "",
            status + (f" ({c.note})" if c.note else ""),
        ]
        if per_run:
            cells.insert(4, ", ".join(f"{r:.3f}" for r in c.run_ratios))
        rows[c.status].append(cells)
    pers = sorted(
        {c.expectation.per for c in cmp.expectations if getattr(c.expectation, "per", None)}
    )
    header = [
        "faster / than",
        " / ".join(pers) or "at",
        "max ratio",
        "ratio now",
        "at rebaseline",
        "result",
    ]
    if per_run:
        header.insert(4, "per run")
    align = "lrrr" + "r" * per_run + "rl"
    legend = [
        "`faster` must take at most *max ratio* of `than`'s time, measured in the same rounds of this run.",
        "",
    ]
    out = ["## Expectations", ""]
    if rows[Status.FAIL]:  # the broken ones in full, with the passing ones of the run beside them
        out += [*legend, *table(header, align, rows[Status.FAIL] + rows[Status.PASS]), ""]
        legend = []
    elif rows[Status.PASS]:
        held = [c for c in cmp.expectations if c.status is Status.PASS and c.ratio is not None]
        close = max(held, key=lambda c: (c.ratio or 0) / c.max_ratio, default=None)
        margin = (
            f" (closest to its bound: `{close.expectation.faster}` {close.at}, ratio "
            f"{close.ratio:.3f} <= {close.max_ratio:.3f})"
            if close is not None and close.ratio is not None
            else ""
        )
        out += _fold(
            f"{len(rows[Status.PASS])} expectation check(s) hold{margin}",
            [*legend, *table(header, align, rows[Status.PASS])],
        )
        legend = []
    missing = [c for c in cmp.expectations if c.status is Status.NOT_MEASURED]
    if missing:
        why = sorted({c.note for c in missing if c.note})
        out += _fold(
            f"{len(missing)} expectation check(s) not measured in this run"
            + (f": {'; '.join(why)}" if why else ""),
            [*legend, *table(header, align, rows[Status.NOT_MEASURED])],
        )
    return out


def _within(r: Any) -> bool:
    """An OK row within its tolerance: not one faster beyond it without significance."""
    return r.delta is None or r.tolerance is None or r.delta >= -r.tolerance


def _rows(cmp: Comparison, result: Outcome) -> list[str]:
    """Every row: the ones with something to say in full; OK and not measured folded. A
    REGRESSED row the outcome does not fail (drift: its code is the base's, or the A/B found it
    no slower than its base) says so in its note."""
    rows: dict[str, list[tuple[str, ...]]] = {"open": [], "ok": [], "nm": []}
    not_failed = {
        r.key: "its code is the base's (A/B): what moved since the baseline is not this pull "
        "request's"
        for r in result.drift
    } | {
        r.key: f"the A/B found it no slower than its base ({pct((c.ratio or 1) - 1)}): the "
        "base is as far from the baseline"
        for r, c in result.cleared
    }
    for r in cmp.rows:
        excuse = not_failed.get(r.key)
        note = f"{r.note}; not a failure here: {excuse}" if excuse else r.note
        base = r.base.median_s if r.base else None
        now = r.now_median_s if r.now_median_s is not None else r.now.median_s if r.now else None
        verdict = _VERDICT_TEXT[r.verdict] + (
            " (reference)" if r.reference and r.verdict is not Verdict.OK else ""
        )
        where = {Verdict.OK: "ok", Verdict.NOT_MEASURED: "nm"}.get(r.verdict, "open")
        where = "open" if where == "ok" and not _within(r) else where
        rows[where].append(
            (
                f"`{r.key}`",
                ms(base),
                ms(now),
                pct(r.delta),
                f"{r.tolerance:.1%}" if r.tolerance is not None else "",
                p_value(r.p_faster if r.delta is not None and r.delta < 0 else r.p_slower),
                verdict,
                note,
            )
        )
    header = ["case", "baseline (ms)", "now (ms)", "delta", "tolerance", "p", "verdict", "note"]
    align = "lrrrrrll"
    legend = [
        "*delta*: the median against the baseline's median (over runs, when re-measured). *p*: one-sided "
        "Mann-Whitney U p-value on the per-round samples against the baseline's, in the direction of the "
        f"change (significant below {cmp.baseline.policy.alpha:g}).",
        "",
    ]
    out = ["## All rows", ""]
    ok = [r for r in cmp.rows if r.verdict is Verdict.OK and _within(r)]
    shown = [r for r in cmp.rows if r.verdict is not Verdict.NOT_MEASURED and r not in ok]
    if any(r.delta is not None for r in shown):  # the legend goes where a delta is first shown
        out += legend
        legend = []
    if rows["open"]:
        out += [*table(header, align, rows["open"]), ""]
    if ok:
        worst = max(ok, key=lambda r: abs(r.delta or 0.0))
        out += _fold(
            f"{len(ok)} row(s) within tolerance (largest delta: {pct(worst.delta)}, `{worst.key}`)",
            [*legend, *table(header, align, rows["ok"])],
        )
        legend = []
    missing = [r for r in cmp.rows if r.verdict is Verdict.NOT_MEASURED]
    if missing:
        why = sorted({r.note for r in missing if r.note})
        out += _fold(
            f"{len(missing)} baseline row(s) not measured" + (f": {'; '.join(why)}" if why else ""),
            [*legend, *table(header, align, rows["nm"])],
        )
    return out


def _rows_only(run: Run, order: Sequence[str]) -> list[str]:
    """The run's rows alone (no baseline), in the Judgement's order of its cases."""
    # the work's own unit, from what the rows record: TFLOP/s, else GB/s, else no column
    unit, rate = next(
        (
            (u, f)
            for u, f in (("TFLOP/s", "tflops"), ("GB/s", "gbps"))
            if any(getattr(r, f) for r in run.rows.values())
        ),
        ("", ""),
    )
    rows = [
        (
            f"`{r.key}`",
            ms(r.median_s),
            *([f"{getattr(r, rate):.1f}" if getattr(r, rate) else ""] if unit else []),
            f"{r.ratio_to_reference:.3f}" if r.ratio_to_reference else "",
            str(len(r.samples_s)),
        )
        for r in [run.rows[k] for k in order or run.rows if k in run.rows]
    ]
    header = [
        "case",
        "median (ms)",
        *([unit] if unit else []),
        "time / reference (same run)",
        "rounds",
    ]
    return ["## All rows", "", *table(header, "lrr" + "r" * len(header[3:]), rows), ""]


# What a runner image upgrade changes under the kernels: each is a reason to read this report
# as an upgrade's before/after, not only as a pull request's.
_ENVIRONMENT = ("Triton", "torch", "CUDA", "driver", "GPU")


def _environment_changes(run: Run, baseline: Baseline | None) -> list[tuple[str, str, str]]:
    """(what, this run, baseline) for each of _ENVIRONMENT that differs from the baseline's."""
    if baseline is None:
        return []
    return [(k, v, b) for k, v, b in _env_rows(run, baseline) if k in _ENVIRONMENT and b and v != b]


def _banners(run: Run, baseline: Baseline | None = None) -> list[str]:
    """What makes the numbers below less than a measurement, before anything else."""
    e = run.env
    out = []
    changes = _environment_changes(run, baseline)
    if changes:
        what = ", ".join(f"{k} {b} -> {v}" for k, v, b in changes)
        out.append(
            f"> **The environment differs from the baseline's: {what}.** Every row is measured "
            f"under it: rows that moved together with the reference (`{run.reference}`) are "
            "SHIFTED, not blamed; the same-run ratios and the expectations show what it did to "
            "the kernels (`tilegate fingerprint`, where it applies, what it did to their compiled "
            "code)."
        )
    if e.smoke:
        out.append(
            "> **SMOKE RUN** (CPU interpreter, tiny shapes): the timings below are meaningless; "
            "this run proves the pipeline only."
        )
    if e.throttled:
        out.append(
            "> **The GPU THROTTLED during this run** ("
            + "; ".join(e.state_notes)
            + "). Slow rows may be the "
            "machine, not the code: re-run on a cool, idle GPU before trusting a regression."
        )
    if e.injected:
        out.append(
            f"> **TEST-ONLY injections in this run:** {', '.join(e.injected)}. Not a real measurement of the kernels."
        )
    if e.warnings:
        n = sum(int(w.get("count") or 1) for w in e.warnings)
        out.append(
            f"> {len(e.warnings)} distinct warning(s) from Triton / torch while measuring ({n} in "
            "all): recorded, not raised; see *Warnings* at the end."
        )
    return [x for b in out for x in (b, "")]


def _warnings(run: Run) -> list[str]:
    """The Triton / torch warnings of the run: a new Triton is when they appear."""
    if not run.env.warnings:
        return []
    rows = [
        (
            w.get("category") or "",
            w.get("message") or "",
            f"`{w.get('source')}`" if w.get("source") else "",
            str(w.get("count") or ""),
            f"`{w.get('first_case')}`" if w.get("first_case") else "",
        )
        for w in run.env.warnings
    ]
    first = run.env.warnings[0]
    where = f" at `{first.get('source')}`" if first.get("source") else ""
    more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
    return [
        "## Warnings from Triton / torch",
        "",
        *_fold(
            f"{len(rows)} distinct warning(s): {first.get('category') or 'warning'}{where}{more}",
            [
                "Issued while the kernels were compiled, checked and timed; recorded, never "
                "raised (a warning does not fail a measurement; a wrong result does).",
                "",
                *table(["category", "message", "where", "times", "first case"], "lllrl", rows),
            ],
        ),
    ]


def render(
    judged: Judgement,
    *,
    plots: Sequence[Path] = (),
    relative_to: Path | None = None,
    suspects_path: Path | None = None,
    explanations: Sequence[Any] = (),
) -> str:
    """The whole report of a Judgement as markdown (it decides nothing): its headline, the pull
    request's baselines/ changes, what decides the exit code, the rest; `explanations`
    (tilegate.explain.diff's) under the deciding cases (so in the PR comment)."""
    run, cmp, ab = judged.run, judged.comparison, judged.ab
    banner = judged.integrity.banner() if judged.integrity is not None else ""
    out = [f"# {judged.headline}", ""]
    if banner:
        out += [banner.strip("\n"), ""]
    out += _banners(run, cmp.baseline if cmp else None)
    out += _deciding(judged)
    out += why_section(explanations)
    out += _coverage(judged.coverage)
    if ab is not None:
        out += _ab(ab)
    if cmp is not None:
        out += ["## Against the stored baseline", ""]
        out += [
            f"Results `{run.path}` against baseline `{cmp.baseline.path}`"
            + (
                f", confirmed by {len(cmp.confirmations)} re-measurement(s): "
                + ", ".join(f"`{c.path}`" for c in cmp.confirmations)
                if cmp.confirmations
                else ""
            )
            + ".",
            "",
        ]
        out += [*_summary(cmp, judged.outcome), ""]
        if suspects_path is not None:
            n = len(judged.suspects)
            out += [
                f"{n} case(s) to measure again written to `{suspects_path}`."
                if n
                else f"Nothing to measure again (`{suspects_path}` is empty).",
                "",
            ]
    elif ab is None:
        out += [f"Results `{run.path}`. {judged.no_baseline or ''}".rstrip(), ""]
    elif judged.no_baseline:
        out += [f"No stored baseline for `{run.env.gpu.slug}`: judged on the A/B alone.", ""]
    out += [*_environment(run, cmp.baseline if cmp else None), ""]
    out += _pairs(judged.pairs, cmp)
    if cmp is not None:
        out += _expectations(cmp)
        out += _rows(cmp, judged.outcome)
    else:
        out += _rows_only(run, judged.order)
    out += memory.section(judged)
    out += _warnings(run)
    if plots:
        out += ["## Plots", ""]
        for p in plots:
            target = _relative(p, relative_to)
            out.append(f"![{p.stem}]({target})")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _relative(path: Path, base: Path | None) -> str:
    if base is None:
        return str(path)
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())
