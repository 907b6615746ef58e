"""The host verdict of a two-process A/B over worker processes (tilegate.harness.hostworkers).

Worker i of the head and of the base are a pair, their blocks timed alternately: one log-ratio
each, the median of its blocks' (a file without blocks: of the two workers' medians), every run's
pooled; their mean, its Student t interval and a one-sided t-test (a Wilcoxon test needs 7 pairs
to reach p < 0.01 at all) are decided as the GPU time is, against the host tolerance; the note
names the functions that grew per call. A call that waits on the GPU inside (`syncs_inside`) is
not judged here: its "host" time is its wall time (`waits_inside`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tilegate.judge import stats
from tilegate.judge.results import Row, Run
from tilegate.judge.vocabulary import ABVerdict

if TYPE_CHECKING:
    from tilegate.judge.abcase import ABCase
    from tilegate.judge.abnoise import ABPolicy

MIN_PAIRS = 3  # fewer process pairs give no interval worth the name (t with 1 degree: +-64 x)
GREW_SHOWN = 3  # host functions named in the explanation


def judge(
    key: str,
    pairs: Sequence[tuple[Run, Row, Row]],
    tolerance: float,
    tolerance_source: str,
    policy: ABPolicy,
) -> ABCase | None:
    """The host verdict over process pairs; None without them or where a call waits inside."""
    from tilegate.judge.abcase import ABCase

    used = [(h, b, logs) for _, h, b in pairs if (logs := pair_logs(h, b))]
    per_run = [logs for *_, logs in used]
    if not per_run or waits_inside(pairs):
        return None
    logs = [x for run in per_run for x in run]
    if len(logs) < MIN_PAIRS:
        return None
    log_mean, log_lo, log_hi, p_slower, p_faster = stats.mean_t_test(logs, policy.confidence)
    mean, lo, hi = math.exp(log_mean), math.exp(log_lo), math.exp(log_hi)
    run_ratios = tuple(math.exp(float(np.mean(r))) for r in per_run)
    verdict = stats.interval_verdict(
        (lo, hi), tolerance, (p_slower, p_faster), run_ratios, policy.alpha
    )
    _, head, base = pairs[0]
    note = (
        f"host time over {len(logs)} process pairs (fresh workers, blocks alternated): "
        f"{mean - 1:+.1%} [{lo - 1:+.1%} .. {hi - 1:+.1%}] against its {tolerance:.1%} host "
        f"tolerance: {verdict.value}"
    )
    grown = grew(base.host_profile, head.host_profile)
    if grown and verdict is not ABVerdict.SAME:
        note += "; grew per call (profile): " + ", ".join(
            f"`{n}` {d * 1e3:+.3g} ms" for n, d in grown
        )
    changed = head.code_hash != base.code_hash if head.code_hash and base.code_hash else None
    head_s = statistics.median(x for h, _, _ in used for x in h.host_procs_s or ())
    base_s = statistics.median(x for _, b, _ in used for x in b.host_procs_s or ())
    return ABCase(
        key, verdict, head, base, mean, (lo, hi), run_ratios, p_slower, p_faster, tolerance,
        tolerance_source, changed, note, head_median_s=head_s, base_median_s=base_s,
    )  # fmt: skip


def pair_logs(head: Row, base: Row) -> list[float] | None:
    """log(head / base) of each process pair: the median over its blocks' ratios (timed
    alternately, a moment's pace falls on both), else of the two workers' medians; None without."""
    hb, bb = head.host_blocks_s, base.host_blocks_s
    if hb and bb and list(map(len, hb)) == list(map(len, bb)):  # pairs of blocks, block by block
        return [float(np.median(np.log(np.divide(h, b)))) for h, b in zip(hb, bb, strict=True)]
    h, b = head.host_procs_s, base.host_procs_s
    return np.log(np.divide(h, b)).tolist() if h and b and len(h) == len(b) else None


def run_ratio(head: Row, base: Row) -> float | None:
    """One run's host ratio over its process pairs (the geometric mean): an A/A run's `#host`
    noise where the sides were two processes (tilegate.judge.abnoise.build_noise); None without."""
    logs = pair_logs(head, base)
    return math.exp(float(np.mean(logs))) if logs and len(logs) >= MIN_PAIRS else None


def grew(
    base: Sequence[tuple[str, float]], head: Sequence[tuple[str, float]]
) -> list[tuple[str, float]]:
    """The functions whose cumulative seconds per call grew most from the base's profile to the
    head's (a function only the head calls grew from 0), the largest first."""
    before = dict(base)
    up = [(name, s - before.get(name, 0.0)) for name, s in head] if base else []
    return sorted((u for u in up if u[1] > 0), key=lambda u: -u[1])[:GREW_SHOWN]


def waits_inside(pairs: Sequence[tuple[Run, Row, Row]]) -> str | None:
    """The note of a call that waits on the GPU inside, on either side; None otherwise."""
    sides = sorted(
        {s for _, h, b in pairs for s, r in (("head", h), ("base", b)) if r.syncs_inside}
    )
    if not sides:
        return None
    return (
        f"synchronises inside (the {' and the '.join(sides)}'s call waits on the GPU: a busy-wait "
        "queued ahead of it lengthened its host time), so its host time is its wall time, not "
        "host-bound: judged on the GPU time"
    )
