"""The statistics of the gate: noise, tolerance, significance and paired ratios, pure functions
on sequences of floats. The noise model is the H200 calibration's (docs/gate.md, "The noise this
is built on"): per-round samples compared as distributions (Mann-Whitney U), a row's tolerance
from the spread of its per-run medians, expectations on same-run ratios.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilegate.judge.vocabulary import ABVerdict


def scipy_stats() -> Any:
    """scipy.stats, imported where a test is computed, not with this module: about 1 s of CPU in
    every perf-suite process, which on the smoke profile (5 rounds a case) computes none of it."""
    from scipy import stats

    return stats


# Expected range of R normal draws in standard deviations (Tukey's d2). The calibration's
# "drift" is the range of 3 per-run medians; other run counts are scaled to that scale.
_D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078}


def rel_change(now: float, base: float) -> float:
    """now / base - 1: +0.10 is 10 % slower (times) or a 10 % larger ratio."""
    return now / base - 1.0


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics (the samples
    below it are Binomial(n, 1/2)): no resampling, no randomness."""
    xs = sorted(samples)
    n = len(xs)
    if n == 0:
        raise ValueError("median_ci of no samples")
    if n < 6:  # too few for any useful interval: the whole range
        return xs[0], xs[-1]
    lo_rank = int(scipy_stats().binom.ppf((1 - confidence) / 2, n, 0.5))
    hi_rank = n - 1 - lo_rank
    return xs[max(lo_rank - 1, 0)], xs[min(hi_rank + 1, n - 1)]


def rms_upper_bound(deviations: Sequence[float], confidence: float) -> float:
    """Upper `confidence` bound of the RMS of deviations from a known centre (sum(d^2) / sigma^2
    is chi-square, n degrees of freedom, for normal ones of mean 0): 3 give a wide bound (2.3 x
    their RMS at 90 %), 22 a tight one (1.25 x), so a tolerance on it tightens as runs are added."""
    d = np.asarray(deviations, dtype=float)
    if d.size == 0:
        raise ValueError("rms_upper_bound of no deviations")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(math.sqrt(float(np.sum(d * d)) / scipy_stats().chi2.ppf(1 - confidence, d.size)))


def run_drift(run_medians: Sequence[float]) -> float:
    """Relative spread of per-run medians as the range 3 runs would show ((max - min) / median,
    scaled by d2(3) / d2(R) so more runs sharpen it instead of inflating it); 2 runs at least."""
    r = len(run_medians)
    if r < 2:
        raise ValueError("run_drift needs at least 2 run medians")
    spread = (max(run_medians) - min(run_medians)) / median(run_medians)
    if r <= 10:
        return spread * _D2[3] / _D2[r]
    return float(np.std(run_medians, ddof=1)) / median(run_medians) * _D2[3]


def single_run_drift(samples: Sequence[float]) -> float:
    """Stand-in for run_drift from one run: its median's 95 % CI on the same 3-run scale; blind to
    the drift between processes (2-3 % on compute-bound rows): why a one-run baseline warns."""
    lo, hi = median_ci(samples)
    width = (hi - lo) / median(samples)
    return width * _D2[3] / (2 * 1.96)  # CI width is 2 x 1.96 sigma of the median


@dataclass(frozen=True)
class Tolerance:
    value: float  # the tolerance used: a relative slowdown, 0.04 = 4 %
    needed: float  # multiple x drift, before floor and ceiling
    bound: str  # "noise", "floor" or "ceiling": what decided `value`

    @property
    def too_noisy(self) -> bool:
        """The row's noise would need more than the ceiling: a real slowdown of that size can hide."""
        return self.bound == "ceiling"


def derive_tolerance(drift: float, *, multiple: float, floor: float, ceiling: float) -> Tolerance:
    """tolerance = clamp(multiple x drift, floor, ceiling)."""
    if not 0 < floor <= ceiling:
        raise ValueError(f"need 0 < floor <= ceiling, got floor={floor}, ceiling={ceiling}")
    needed = multiple * drift
    if needed > ceiling:
        return Tolerance(ceiling, needed, "ceiling")
    if needed < floor:
        return Tolerance(floor, needed, "floor")
    return Tolerance(needed, needed, "noise")


def quantile_summary(samples: Sequence[float], count: int) -> list[float]:
    """`count` evenly spaced quantiles (mid-point plotting positions) standing in for the samples
    (all of them, sorted, when no more): a baseline's reviewable summary of its pooled rounds, on
    which Mann-Whitney is conservative (a regular grid has less scatter than a real sample)."""
    xs = np.sort(np.asarray(samples, dtype=float))
    if len(xs) <= count:
        return [float(x) for x in xs]
    probs = (np.arange(count) + 0.5) / count
    return [float(x) for x in np.quantile(xs, probs)]


def p_slower(now: Sequence[float], base: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value for "now is slower than base" (stochastically greater)."""
    return _mwu(now, base, "greater")


def p_faster(now: Sequence[float], base: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value for "now is faster than base"."""
    return _mwu(now, base, "less")


def _mwu(x: Sequence[float], y: Sequence[float], alternative: str) -> float:
    if not x or not y:
        return 1.0
    if min(x) == max(x) == min(y) == max(y):  # no information; scipy would return NaN
        return 1.0
    p = float(scipy_stats().mannwhitneyu(x, y, alternative=alternative, method="auto").pvalue)
    return 1.0 if math.isnan(p) else p


def wilcoxon_p(logs: np.ndarray, alternative: str) -> float:
    """One-sided Wilcoxon signed-rank p-value of log ratios (1.0 with fewer than 2 nonzero)."""
    nonzero = logs[logs != 0]
    if len(nonzero) < 2:
        return 1.0
    p = float(scipy_stats().wilcoxon(nonzero, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else p


def min_samples_rank_sum(alpha: float, others: int) -> int:
    """The fewest samples for which a one-sided Mann-Whitney U test against `others` samples can
    reach p < alpha at all: complete separation gives p_min = 1 / C(n + m, n), so a row with fewer
    can never fail (docs/gate.md, "Minimum samples": 2 against a 41-quantile baseline at 0.01)."""
    if not 0 < alpha < 1 or others < 1:
        raise ValueError(f"need 0 < alpha < 1 and others >= 1, got {alpha}, {others}")
    n = 1
    while math.comb(n + others, n) * alpha <= 1:
        n += 1
    return n


def min_pairs_signed_rank(alpha: float) -> int:
    """The fewest paired rounds for which a one-sided Wilcoxon signed-rank test can reach p < alpha:
    its smallest p (every ratio on one side of 1) is 2^-n, so 7 at alpha = 0.01."""
    if not 0 < alpha < 1:
        raise ValueError(f"need 0 < alpha < 1, got {alpha}")
    return math.floor(math.log2(1 / alpha)) + 1


def paired_ratio(x: Sequence[float], ref: Sequence[float]) -> float:
    """x / ref measured in the same rounds, the only same-run ratio of the project (the suite
    records it, the gate recomputes it): the median over rounds of x_i / ref_i, which cancels what
    drifted between rounds; ValueError unless the same rounds and a positive reference."""
    if not x or not ref:
        raise ValueError("paired_ratio of an empty row")
    if len(x) != len(ref):
        raise ValueError(
            f"paired_ratio of rows not timed in the same rounds ({len(x)} vs {len(ref)})"
        )
    if any(r <= 0 for r in ref):
        raise ValueError("paired_ratio against a non-positive reference sample")
    return float(statistics.median(a / b for a, b in zip(x, ref, strict=True)))


def mean_t_test(values: Sequence[float], confidence: float) -> tuple[float, ...]:
    """For a few values each an average of many (a process's median host time per call): their
    mean, its two-sided Student t interval (lo, hi) and one-sided p-values of above / below 0."""
    x = np.asarray(values, dtype=float)
    mean, sem = float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))
    if sem <= 1e-12 * abs(mean):  # all alike: no spread to weigh the mean against
        return mean, mean, mean, float(mean <= 0), float(mean >= 0)
    t, df = scipy_stats().t, x.size - 1
    half, stat = float(t.ppf((1 + confidence) / 2, df)) * sem, mean / sem
    return mean, mean - half, mean + half, float(t.sf(stat, df)), float(t.cdf(stat, df))


def interval_verdict(
    ci: tuple[float, float],
    tolerance: float,
    p: tuple[float, float],
    run_ratios: Sequence[float],
    alpha: float,
) -> ABVerdict:
    """A paired ratio's verdict: SLOWER (FASTER) when its whole interval `ci` is beyond the
    tolerance, significant (`p`: slower, faster) and so in a majority of the runs; SAME when the
    whole interval is within; else AMBIGUOUS."""
    lo, hi = ci[0] - 1, ci[1] - 1
    if lo > tolerance and p[0] < alpha and majority([r - 1 > tolerance for r in run_ratios]):
        return ABVerdict.SLOWER
    if hi < -tolerance and p[1] < alpha and majority([r - 1 < -tolerance for r in run_ratios]):
        return ABVerdict.FASTER
    return ABVerdict.SAME if -tolerance <= lo and hi <= tolerance else ABVerdict.AMBIGUOUS


def majority(flags: Sequence[bool]) -> bool:
    """More than half are true; ties go to innocence (1 of 2 is not a majority)."""
    return sum(flags) * 2 > len(flags)
