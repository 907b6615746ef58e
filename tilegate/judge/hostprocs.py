"""The host verdict of a two-process A/B over worker processes (tilegate.harness.hostworkers).

Worker i of the head and of the base are a pair: one log(head_i / base_i) each, every run's
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

    got = [
        (h.host_procs_s, b.host_procs_s)
        for _, h, b in pairs
        if h.host_procs_s and b.host_procs_s and len(h.host_procs_s) == len(b.host_procs_s)
    ]
    if not got or waits_inside(pairs):
        return None
    per_run = [np.log(np.divide(h, b)) for h, b in got]
    logs = np.concatenate(per_run).tolist()
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
        f"host time over {len(logs)} process pairs (fresh workers, alternated): "
        f"{mean - 1:+.1%} [{lo - 1:+.1%} .. {hi - 1:+.1%}] against its {tolerance:.1%} host "
        f"tolerance: {verdict.value}"
    )
    grown = grew(base.host_profile, head.host_profile)
    if grown and verdict is not ABVerdict.SAME:
        note += "; grew per call (profile): " + ", ".join(
            f"`{n}` {d * 1e3:+.3g} ms" for n, d in grown
        )
    changed = head.code_hash != base.code_hash if head.code_hash and base.code_hash else None
    head_s, base_s = (statistics.median(x for pair in got for x in pair[i]) for i in (0, 1))
    return ABCase(
        key, verdict, head, base, mean, (lo, hi), run_ratios, p_slower, p_faster, tolerance,
        tolerance_source, changed, note, head_median_s=head_s, base_median_s=base_s,
    )  # fmt: skip


def run_ratio(head: Row, base: Row) -> float | None:
    """One run's host ratio over its process pairs (the geometric mean): an A/A run's `#host`
    noise where the sides were two processes (tilegate.judge.abnoise.build_noise); None without."""
    h, b = head.host_procs_s, base.host_procs_s
    if not h or not b or len(h) != len(b) or len(h) < MIN_PAIRS:
        return None
    return math.exp(float(np.mean(np.log(np.divide(h, b)))))


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
