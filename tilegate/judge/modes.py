"""Modes: a case whose runs, or whose blocks of rounds within a run, fall into separate modes.

A pooled median ratio (tilegate.judge.abcase) only means something when the rounds come from one
distribution. A kernel that switches between two speeds from one process to the next, or part
way through a run (an autotuner's pick, a clock state, SM placement), gives a mixture whose
median lands where the mixing proportion puts it (an outside repository's softmax read +9.2 % in
one run and -25.7 % in the next). `find_modes`, on the log of the per-round ratios: each run cut
into units at its timing passes (merged up to MIN_BLOCK_ROUNDS rounds; without that record, at
most BLOCKS blocks), the units sorted by median and split at their widest gap; two modes when the
gap, the modes' distance, a one-sided Mann-Whitney U test and each mode's rounds all pass the
bounds below. A multiple of the tolerance (3.5 x the A/A noise: two A/A units differ by at most
about 1.4 tolerances) and a floor above what two different kernels drift apart by under the
H200's power cap (docs/measuring.md, "Unstable cases", gives the recorded figures). Each mode is
judged on its own rounds (`Mode.slower`); the exit code: tilegate.judge.outcome.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tilegate.judge import stats

BLOCKS = 5  # blocks of consecutive rounds per run (about a pass each; the default has 10)
MIN_BLOCK_ROUNDS = 6
GAP_TOLERANCES = 1.0  # the empty gap between the modes' nearest units, in tolerances ...
GAP_MIN = 0.05  # ... and at least this (the H200's two different kernels: up to 3.6 %)
SPLIT_TOLERANCES = 2.0  # the distance between the modes' medians, in tolerances ...
SPLIT_MIN = 0.10  # ... and at least this (the H200's two different kernels: up to 5.7 %)
MODE_P = 1e-3
MIN_MODE_ROUNDS = 6


@dataclass(frozen=True)
class Unit:
    """A block of consecutive rounds of one run: where a mode's rounds came from."""

    run: int  # 0: the first run; 1, 2, ...: its confirmations
    start: int  # the block's first paired round in that run (0-based), `stop` exclusive
    stop: int
    logs: tuple[float, ...]  # log(head_i / base_i) of its rounds
    passes: tuple[int, int] | None = None  # the timing passes (sweeps) it spans, 0-based

    @property
    def median(self) -> float:
        return float(np.median(self.logs))

    @property
    def where(self) -> str:
        run = "run 1" if self.run == 0 else f"confirmation {self.run}"
        if self.passes is None:
            return f"{run} rounds {self.start + 1}-{self.stop}"
        a, b = self.passes
        return f"{run} pass {a + 1}" if a == b else f"{run} passes {a + 1}-{b + 1}"


@dataclass(frozen=True)
class Mode:
    ratio: float  # the median head / base of its rounds
    ci: tuple[float, float]
    rounds: int
    where: tuple[str, ...]  # its units, "run 1 rounds 1-40", "confirmation 1 rounds 1-20", ...
    slower: bool  # on its own rounds: slower than the tolerance, whole interval, significant
    faster: bool

    def describe(self) -> str:
        return f"{self.ratio - 1:+.1%} ({', '.join(self.where)}; {self.rounds} rounds)"


def units(
    per_run: Sequence[Sequence[float]], passes: Sequence[Sequence[int] | None] | None = None
) -> list[Unit]:
    """Every run's per-round ratios cut into blocks: its timing passes (`passes`: each round's,
    merged up to MIN_BLOCK_ROUNDS rounds), else at most BLOCKS equal blocks."""
    out: list[Unit] = []
    for j, ratios in enumerate(per_run):
        logs = [math.log(r) for r in ratios]
        n = len(logs)
        of = passes[j] if passes is not None and j < len(passes) else None
        if of is not None and len(of) == n and n:
            start = 0
            for i in range(1, n + 1):
                # a unit ends at a pass boundary, once it holds MIN_BLOCK_ROUNDS rounds
                if i < n and (of[i] == of[i - 1] or i - start < MIN_BLOCK_ROUNDS):
                    continue
                if i == n and out and out[-1].run == j and i - start < MIN_BLOCK_ROUNDS:
                    last = out.pop()  # a short last block joins the one before
                    start, first = last.start, last.passes[0] if last.passes else of[start]
                else:
                    first = of[start]
                out.append(Unit(j, start, i, tuple(logs[start:i]), (first, of[i - 1])))
                start = i
            continue
        k = max(1, min(BLOCKS, n // MIN_BLOCK_ROUNDS))
        for b in range(k):
            a, z = b * n // k, (b + 1) * n // k
            if z > a:
                out.append(Unit(j, a, z, tuple(logs[a:z])))
    return out


def _merged(group: Sequence[Unit]) -> list[Unit]:
    """The units in run and round order, neighbouring blocks of one run merged."""
    out: list[Unit] = []
    for u in sorted(group, key=lambda u: (u.run, u.start)):
        last = out[-1] if out else None
        if last is not None and last.run == u.run and last.stop == u.start:
            spans = (last.passes[0], u.passes[1]) if last.passes and u.passes else None
            out[-1] = Unit(u.run, last.start, u.stop, last.logs + u.logs, spans)
        else:
            out.append(u)
    return out


def _mode(group: Sequence[Unit], tolerance: float, confidence: float, alpha: float) -> Mode:
    logs = np.asarray([x for u in group for x in u.logs])
    ratios = sorted(np.exp(logs).tolist())
    lo, hi = stats.median_ci(ratios, confidence)
    p_up, p_down = stats.wilcoxon_p(logs, "greater"), stats.wilcoxon_p(logs, "less")
    return Mode(
        ratio=float(np.exp(np.median(logs))),
        ci=(lo, hi),
        rounds=len(logs),
        where=tuple(u.where for u in _merged(group)),
        slower=lo - 1 > tolerance and p_up < alpha,
        faster=hi - 1 < -tolerance and p_down < alpha,
    )


def find_modes(
    per_run: Sequence[Sequence[float]],
    tolerance: float,
    *,
    passes: Sequence[Sequence[int] | None] | None = None,
    confidence: float = 0.99,
    alpha: float = 0.01,
) -> tuple[Mode, ...]:
    """The two modes of a case's per-round ratios (a sequence per run; `passes`: each round's
    timing pass), the faster first; () when the rule above finds one population."""
    found = sorted(units(per_run, passes), key=lambda u: u.median)
    if len(found) < 2:
        return ()
    gaps = np.diff([u.median for u in found]).tolist()
    cut = int(np.argmax(gaps)) + 1
    low, high = found[:cut], found[cut:]
    low_logs = [x for u in low for x in u.logs]
    high_logs = [x for u in high for x in u.logs]
    if min(len(low_logs), len(high_logs)) < MIN_MODE_ROUNDS:
        return ()
    gap_min = math.log1p(max(GAP_TOLERANCES * tolerance, GAP_MIN))
    split_min = math.log1p(max(SPLIT_TOLERANCES * tolerance, SPLIT_MIN))
    split = float(np.median(high_logs) - np.median(low_logs))
    if gaps[cut - 1] <= gap_min or split <= split_min:
        return ()
    p = float(stats.scipy_stats().mannwhitneyu(low_logs, high_logs, alternative="less").pvalue)
    if not p < MODE_P:
        return ()
    return tuple(_mode(m, tolerance, confidence, alpha) for m in (low, high))
