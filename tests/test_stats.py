"""The statistics, on numbers shaped like the H200 calibration (tests/_factories.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests._factories import make_samples
from tilegate.judge import stats

# K = 128 on the H200: a tight core and a slow tail, IQR ~15-20 % inside one run
NOISY = {"core": 0.006, "tail_frac": 0.3, "tail_mean": 0.35}
# K = 4096: IQR ~3 %
QUIET = {"core": 0.008, "tail_frac": 0.25, "tail_mean": 0.06}


def samples(median: float, seed: int, n: int = 40, **noise: float) -> list[float]:
    return make_samples(median, n, np.random.default_rng(seed), **(noise or NOISY))


def test_rel_change() -> None:
    assert stats.rel_change(1.1, 1.0) == pytest.approx(0.10)
    assert stats.rel_change(0.9, 1.0) == pytest.approx(-0.10)


def test_median_ci_uses_binomial_order_statistics() -> None:
    lo, hi = stats.median_ci(list(range(40)))
    assert (lo, hi) == (13, 26)  # ranks 14 and 27 of 40: coverage 96 %
    assert stats.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)  # too few: the whole range


def test_median_ci_covers_the_true_median() -> None:
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        xs = list(rng.normal(10.0, 1.0, 40))
        lo, hi = stats.median_ci(xs)
        hits += lo <= 10.0 <= hi
    assert 0.93 <= hits / 400 <= 0.995


def test_run_drift_is_the_range_of_three_runs() -> None:
    assert stats.run_drift([1.00, 1.01, 1.02]) == pytest.approx(0.02 / 1.01)
    with pytest.raises(ValueError):
        stats.run_drift([1.0])


def test_run_drift_does_not_grow_with_more_runs() -> None:
    rng = np.random.default_rng(1)
    three = np.mean([stats.run_drift(list(1 + rng.normal(0, 0.01, 3))) for _ in range(2000)])
    ten = np.mean([stats.run_drift(list(1 + rng.normal(0, 0.01, 10))) for _ in range(2000)])
    assert ten == pytest.approx(three, rel=0.1)  # the raw range of 10 runs would be ~1.8x larger


def test_rms_upper_bound_is_the_chi_square_bound_and_tightens_with_more_runs() -> None:
    # sum(d^2) = 3 x 0.002^2 over 3 deviations: the 90 % bound divides by chi2.ppf(0.1, 3) = 0.5844
    assert stats.rms_upper_bound([0.002, -0.002, 0.002], 0.9) == pytest.approx(
        0.002 * (3 / 0.58437) ** 0.5, rel=1e-4
    )
    # the same RMS from more runs: a tighter bound, never a looser one (a max would grow)
    bounds = [stats.rms_upper_bound([0.002, -0.002] * n, 0.9) for n in (2, 5, 11)]
    assert bounds == sorted(bounds, reverse=True) and bounds[-1] < 1.3 * 0.002
    rng = np.random.default_rng(3)
    covered = np.mean(
        [stats.rms_upper_bound(list(rng.normal(0, 0.01, 5)), 0.9) >= 0.01 for _ in range(4000)]
    )
    assert covered == pytest.approx(0.9, abs=0.02)  # it bounds the true sigma 90 % of the time
    with pytest.raises(ValueError, match="no deviations"):
        stats.rms_upper_bound([], 0.9)
    with pytest.raises(ValueError, match="confidence"):
        stats.rms_upper_bound([0.001], 1.0)


def test_single_run_drift_sees_the_jitter_of_the_median() -> None:
    tight = stats.single_run_drift(samples(1e-3, 0, **QUIET))
    loose = stats.single_run_drift(samples(1e-3, 0, core=0.05, tail_frac=0.0, tail_mean=0.0))
    assert 0 < tight < 0.01 < loose


@pytest.mark.parametrize(
    ("drift", "value", "bound"),
    [
        (0.003, 0.04, "floor"),
        (0.02, 0.06, "noise"),
        (0.0317, 0.08, "ceiling"),
    ],  # Triton row, middle, cuBLAS
)
def test_derive_tolerance(drift: float, value: float, bound: str) -> None:
    tol = stats.derive_tolerance(drift, multiple=3.0, floor=0.04, ceiling=0.08)
    assert tol.value == pytest.approx(value)
    assert tol.bound == bound
    assert tol.too_noisy == (bound == "ceiling")
    assert tol.needed == pytest.approx(3 * drift)


def test_derive_tolerance_rejects_bad_bounds() -> None:
    with pytest.raises(ValueError):
        stats.derive_tolerance(0.01, multiple=3, floor=0.1, ceiling=0.05)


def test_quantile_summary() -> None:
    xs = samples(1e-3, 3, n=120)
    q = stats.quantile_summary(xs, 41)
    assert len(q) == 41
    assert q == sorted(q)
    assert min(xs) <= q[0] and q[-1] <= max(xs)
    assert stats.median(q) == pytest.approx(stats.median(xs), rel=0.01)
    assert stats.quantile_summary([3.0, 1.0], 41) == [1.0, 3.0]


@pytest.mark.parametrize("noise", [NOISY, QUIET], ids=["K128-like", "K4096-like"])
def test_a_10_percent_slowdown_is_significant(noise: dict[str, float]) -> None:
    base = stats.quantile_summary([x for s in (1, 2, 3) for x in samples(1e-3, s, **noise)], 41)
    detected = sum(
        stats.p_slower(samples(1.1e-3, 100 + seed, **noise), base) < 0.01 for seed in range(50)
    )
    assert detected >= 48


def test_pure_noise_is_rarely_significant() -> None:
    base = stats.quantile_summary([x for s in (1, 2, 3) for x in samples(1e-3, s)], 41)
    false_alarms = sum(
        stats.p_slower(samples(1e-3, 200 + seed), base) < 0.01 for seed in range(200)
    )
    assert false_alarms <= 6  # alpha 0.01 on 200 tries, and quantiles make it conservative


def test_faster_is_not_slower() -> None:
    base = stats.quantile_summary(samples(1e-3, 1, **QUIET), 41)
    now = samples(0.9e-3, 2, **QUIET)
    assert stats.p_slower(now, base) > 0.5
    assert stats.p_faster(now, base) < 0.01


def test_mann_whitney_on_constant_samples_is_not_evidence() -> None:
    assert stats.p_slower([1.0] * 5, [1.0] * 5) == 1.0
    assert stats.p_slower([], [1.0]) == 1.0


def test_paired_ratio_cancels_what_drifts_between_rounds() -> None:
    rng = np.random.default_rng(4)
    common = np.exp(rng.normal(0, 0.15, 40))  # a GPU state that swings 15 % from round to round
    twin = list(0.43e-3 * common * (1 + rng.normal(0, 0.003, 40)))
    xtile = list(0.31e-3 * common * (1 + rng.normal(0, 0.003, 40)))
    ratio_of_medians = stats.median(xtile) / stats.median(twin)
    assert stats.paired_ratio(xtile, twin) == pytest.approx(0.31 / 0.43, rel=0.003)
    assert abs(ratio_of_medians - 0.31 / 0.43) > abs(stats.paired_ratio(xtile, twin) - 0.31 / 0.43)


def test_paired_ratio_needs_the_same_rounds() -> None:
    with pytest.raises(ValueError, match="same rounds"):
        stats.paired_ratio([2.0, 2.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        stats.paired_ratio([], [1.0])


def test_majority_acquits_on_ties() -> None:
    assert stats.majority([True])
    assert not stats.majority([True, False])
    assert stats.majority([True, True, False])
    assert not stats.majority([])
