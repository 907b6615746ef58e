"""The decision rule on H200-like synthetic runs: real regressions fail, noise and drift do not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

from tests._factories import VARIANTS, build_baseline, key, load_run
from tilegate.errors import InputError
from tilegate.judge.baseline import Baseline, BaselineRow
from tilegate.judge.crosstile import CrossTilePair, Status, crosstile_pairs
from tilegate.judge.outcome import outcome
from tilegate.judge.policy import Policy
from tilegate.judge.verdict import Verdict, compare, judge_row
from tilegate.store.files import load_results

FIXTURES = Path(__file__).parent / "fixtures"
SEEDS = range(10)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("verdict")


@pytest.fixture(scope="module")
def baseline(workdir: Path) -> Baseline:
    return build_baseline(workdir)


def verdict_of(cmp, case: str):  # type: ignore[no-untyped-def]
    return next(v for v in cmp.rows if v.key == case)


# --- noise and drift do not fail ------------------------------------------------------------------


def test_pure_noise_never_fails(baseline: Baseline, workdir: Path) -> None:
    for seed in SEEDS:
        cmp = compare(load_run(workdir, "noise.json", seed=500 + seed), baseline)
        assert outcome(cmp, None).code == 0, [(v.key, v.delta) for v in cmp.rows if v.fails]
        assert not cmp.broken


def test_a_runner_3_percent_slower_does_not_fail_after_confirmation(
    baseline: Baseline, workdir: Path
) -> None:
    """The calibration's cross-process drift (2-3 %) on every row at once, confirmed by a second process."""
    for seed in SEEDS:
        run = load_run(workdir, "drift.json", seed=600 + seed, machine_factor=1.03)
        first = compare(run, baseline)
        assert not first.broken  # expectations use same-run ratios: drift cannot break them
        conf = load_run(workdir, "drift-confirm.json", seed=700 + seed, machine_factor=1.03)
        assert outcome(compare(run, baseline, [conf]), None).code == 0


def test_a_faster_runner_cannot_fake_an_expectation(baseline: Baseline, workdir: Path) -> None:
    """Cross-tile lost its win at K=128, on a runner 30 % faster: its absolute time looks fine, the ratio does not."""
    run = load_run(
        workdir,
        "fast.json",
        seed=800,
        machine_factor=0.70,
        slow={key("xtile_persistent", K=128): 1.40},
    )
    cmp = compare(run, baseline)
    assert verdict_of(cmp, key("xtile_persistent", K=128)).verdict is not Verdict.REGRESSED
    broken = [(c.expectation.faster, c.value) for c in cmp.broken]
    assert broken == [("xtile_persistent", 128)]
    assert outcome(cmp, None).code == 1


# --- real regressions fail ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        key("xtile_persistent", K=128),
        key("swizzle_persistent", K=512),
        key("persistent", K=4096),
        key("tma_xtile_persistent", K=128),
    ],
)
def test_a_10_percent_slowdown_is_caught(baseline: Baseline, workdir: Path, case: str) -> None:
    assert baseline.rows[case].tolerance <= 0.06
    for seed in SEEDS:
        run = load_run(workdir, "slow.json", seed=900 + seed, slow={case: 1.10})
        first = compare(run, baseline)
        assert verdict_of(first, case).verdict is Verdict.REGRESSED
        assert case in first.suspects()
        conf = load_run(
            workdir,
            "slow-confirm.json",
            seed=1900 + seed,
            slow={case: 1.10},
            ks=(run.rows[case].params["K"],),
        )
        final = compare(run, baseline, [conf])
        assert verdict_of(final, case).verdict is Verdict.REGRESSED
        assert outcome(final, None).code == 1


def test_one_noisy_run_cannot_accuse(baseline: Baseline, workdir: Path) -> None:
    case = key("persistent", K=4096)
    run = load_run(workdir, "spike.json", seed=1000, slow={case: 1.10})
    assert outcome(compare(run, baseline), None).code == 1
    conf = load_run(workdir, "spike-confirm.json", seed=1001, ks=(4096,))
    final = compare(run, baseline, [conf])
    v = verdict_of(final, case)
    assert v.verdict is not Verdict.REGRESSED
    assert len(v.run_deltas) == 2
    assert outcome(final, None).code == 0


def test_two_of_three_runs_accuse(baseline: Baseline, workdir: Path) -> None:
    case = key("persistent", K=4096)
    run = load_run(workdir, "r1.json", seed=1100, slow={case: 1.10})
    c1 = load_run(workdir, "r2.json", seed=1101, slow={case: 1.10}, ks=(4096,))
    c2 = load_run(workdir, "r3.json", seed=1102, ks=(4096,))
    assert verdict_of(compare(run, baseline, [c1, c2]), case).verdict is Verdict.REGRESSED


def test_a_faster_row_is_an_improvement_not_a_failure(baseline: Baseline, workdir: Path) -> None:
    case = key("grouped", K=512)
    cmp = compare(load_run(workdir, "fast-row.json", seed=1200, slow={case: 0.88}), baseline)
    assert verdict_of(cmp, case).verdict is Verdict.IMPROVED
    assert outcome(cmp, None).code == 0
    assert case not in cmp.suspects()


def test_a_slower_reference_row_is_reported_but_does_not_fail(
    baseline: Baseline, workdir: Path
) -> None:
    case = key("torch", K=128)
    cmp = compare(load_run(workdir, "torch.json", seed=1300, slow={case: 1.15}), baseline)
    v = verdict_of(cmp, case)
    assert v.verdict is Verdict.REGRESSED and v.reference and not v.fails
    assert outcome(cmp, None).code == 0
    assert case not in cmp.suspects()


# --- the rule itself ---------------------------------------------------------------------------------------


def _row(samples: tuple[float, ...], tol: float = 0.04) -> BaselineRow:
    return BaselineRow(
        key="x-fp16-nt-K128",
        variant="x",
        params=MappingProxyType({"dtype": "fp16", "layout": "nt", "M": 1, "N": 1, "K": 128}),
        group="fp16-nt-K128",
        median_s=sorted(samples)[len(samples) // 2],
        run_medians_s=(1.0,),
        drift=0.0,
        drift_source="",
        tolerance=tol,
        tolerance_source="",
        too_noisy=False,
        samples_s=samples,
        n_samples=len(samples),
        measured=MappingProxyType({}),
    )


BASE = _row(tuple(1.0 + 0.001 * i for i in range(-20, 21)))


def test_slower_than_tolerance_but_not_significant_is_unsure() -> None:
    verdict, delta, *_ = judge_row(BASE, [[1.06, 0.99, 1.2]], Policy())
    assert delta > 0.04 and verdict is Verdict.UNSURE


def test_significant_but_within_tolerance_is_ok_or_unsure_near_it() -> None:
    ok, *_ = judge_row(BASE, [[1.02 + 0.001 * i for i in range(-20, 20)]], Policy())
    near, *_ = judge_row(BASE, [[1.036 + 0.001 * i for i in range(-20, 20)]], Policy())
    assert ok is Verdict.OK
    assert near is Verdict.UNSURE


def test_regressed_needs_both_size_and_significance() -> None:
    verdict, delta, runs, p_slower, p_faster = judge_row(
        BASE, [[1.08 + 0.001 * i for i in range(-20, 20)]], Policy()
    )
    assert (
        verdict is Verdict.REGRESSED
        and p_slower is not None
        and p_slower < 0.01
        and p_faster is None
    )
    assert runs == (delta,)


# --- expectations, families, crossover -----------------------------------------------------------------------


def test_expectations_checked_on_same_run_ratios(baseline: Baseline) -> None:
    cmp = compare(
        load_results(FIXTURES / "synthetic-results-regressed.json"), load_baseline_fixture()
    )
    by = {(c.expectation.faster, c.value): c for c in cmp.expectations}
    bad = by[("xtile_persistent", 128)]
    assert bad.status is Status.FAIL and bad.ratio is not None and bad.ratio > 1.0
    assert "stopped winning" in bad.note
    assert by[("tma_xtile_persistent", 128)].status is Status.PASS
    assert set(cmp.suspects()) >= {key("xtile_persistent", K=128), key("swizzle_persistent", K=128)}


def test_confirmation_decides_a_broken_expectation() -> None:
    b = load_baseline_fixture()
    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    conf = load_results(FIXTURES / "synthetic-results-regressed-confirm.json")
    cmp = compare(run, b, [conf])
    check = next(
        c for c in cmp.expectations if (c.expectation.faster, c.value) == ("xtile_persistent", 128)
    )
    assert check.status is Status.FAIL and len(check.run_ratios) == 2
    healthy = load_results(FIXTURES / "synthetic-results-h200-quick.json")
    cleared = compare(run, b, [healthy])
    check = next(
        c
        for c in cleared.expectations
        if (c.expectation.faster, c.value) == ("xtile_persistent", 128)
    )
    assert check.status is Status.PASS and "1 of 2" in check.note


def test_families_and_crossover() -> None:
    run = load_results(FIXTURES / "synthetic-results-regressed.json")
    fams = {f.faster: f for f in crosstile_pairs(run, load_baseline_fixture())}
    ptr = fams["xtile_persistent"]
    assert ptr.than == "swizzle_persistent" and ptr.values == (128, 512, 4096)
    assert CrossTilePair.crossover(ptr.now) == 128  # lost its win at K=128
    assert CrossTilePair.crossover(ptr.base) is None  # won everywhere at rebaseline
    assert CrossTilePair.crossover({128: 0.7, 512: 0.95, 1024: 1.01, 4096: 0.99}) == 1024


# --- what the gate refuses to judge ---------------------------------------------------------------------------


def load_baseline_fixture() -> Baseline:
    from tilegate.store.files import load_baseline

    return load_baseline(FIXTURES / "synthetic-baselines" / "nvidia-h200.json")


def test_other_gpu_baseline(workdir: Path) -> None:
    rtx = load_results(FIXTURES / "synthetic-results-rtx5090.json")
    with pytest.raises(InputError) as err:
        compare(rtx, load_baseline_fixture())
    msg = str(err.value)
    assert "is for nvidia-h200" in msg and "measured on nvidia-geforce-rtx-5090" in msg
    assert f"use {FIXTURES / 'synthetic-baselines' / 'nvidia-geforce-rtx-5090.json'}" in msg
    alone = replace(
        load_baseline_fixture(), path=workdir / "nvidia-h200.json"
    )  # no RTX baseline beside it
    with pytest.raises(InputError, match="tilegate rebaseline --measure 3"):
        compare(rtx, alone)


def test_smoke_run_against_gpu_baseline(workdir: Path) -> None:
    b = load_baseline_fixture()
    smoke = load_results(FIXTURES / "synthetic-results-smoke.json")
    with pytest.raises(InputError, match="smoke"):
        compare(smoke, replace(b, gpu=MappingProxyType({**b.gpu, "slug": "smoke"})))


def test_missing_row_of_a_measured_group() -> None:
    run = load_results(FIXTURES / "synthetic-results-missing-row.json")
    with pytest.raises(InputError) as err:
        compare(run, load_baseline_fixture())
    assert "tma_xtile_persistent-fp16-nt-K512" in str(err.value) and "--allow-missing" in str(
        err.value
    )
    cmp = compare(run, load_baseline_fixture(), allow_missing=True)
    v = verdict_of(cmp, "tma_xtile_persistent-fp16-nt-K512")
    assert v.verdict is Verdict.NOT_MEASURED and "skipped or failed" in v.note
    assert cmp.missing_allowed == ("tma_xtile_persistent-fp16-nt-K512",)
    # its expectation cannot be checked without the row
    check = next(
        c
        for c in cmp.expectations
        if (c.expectation.faster, c.value) == ("tma_xtile_persistent", 512)
    )
    assert check.status is Status.NOT_MEASURED


def test_new_rows_and_rows_outside_the_profile() -> None:
    cmp = compare(
        load_results(FIXTURES / "synthetic-results-new-rows.json"), load_baseline_fixture()
    )
    assert {v.key for v in cmp.by(Verdict.NEW)} == {key(v, K=2048) for v in VARIANTS}
    assert verdict_of(cmp, key("tiled", K=512)).verdict is Verdict.NOT_MEASURED
    assert outcome(cmp, None).code == 0


def test_nothing_in_common(workdir: Path) -> None:
    run = load_run(workdir, "k64.json", seed=1, ks=(128,), variants=("torch",), dtype="bf16")
    with pytest.raises(InputError, match="no case in common"):
        compare(run, load_baseline_fixture())


def test_shape_mismatch(workdir: Path) -> None:
    run = load_run(workdir, "m8k.json", seed=1, m=8192, n=8192)
    with pytest.raises(InputError, match="M=8192"):
        compare(run, load_baseline_fixture())


def test_timer_settings_mismatch(workdir: Path) -> None:
    b = load_baseline_fixture()
    warm = replace(b, provenance=MappingProxyType({**b.provenance, "l2_flush": False}))
    with pytest.raises(InputError, match="L2 flush"):
        compare(load_results(FIXTURES / "synthetic-results-h200-quick.json"), warm)


def test_confirmation_from_another_gpu() -> None:
    with pytest.raises(InputError, match="same GPU model"):
        compare(
            load_results(FIXTURES / "synthetic-results-regressed.json"),
            load_baseline_fixture(),
            [load_results(FIXTURES / "synthetic-results-rtx5090.json")],
        )


def test_a_same_run_ratio_is_the_paired_ratio_of_the_samples(workdir: Path) -> None:
    """Run.ratio is always the per-round median of x_i / y_i, from the samples.

    It used to return the recorded ratio_to_twin first (so results whose samples said cross-tile
    equals its twin, but whose recorded ratio was left at 0.67, passed every expectation) and
    the ratio of medians for rows of unequal length (issue 12). Now a recorded ratio that its
    samples contradict, and a group whose rows were not timed in the same rounds, are bad input.
    """
    from tests._factories import bench, make_run, set_samples, write

    data = make_run(
        ks=(128,), variants=("swizzle_persistent", "xtile_persistent"), rounds=3, seed=1
    )
    set_samples(data, key("swizzle_persistent"), [1.0e-3, 2.0e-3, 3.0e-3])
    set_samples(
        data, key("xtile_persistent"), [0.7e-3, 2.1e-3, 1.05e-3]
    )  # per round: 0.7, 1.05, 0.35
    tg = bench(data, key("xtile_persistent"))["extra_info"]["tilegate"]
    tg["ratio_to_twin"] = 0.7  # what the suite measures from these samples
    run = load_results(write(workdir / "paired.json", data))
    ratio = run.ratio("xtile_persistent", "swizzle_persistent", "fp16-nt-K128")
    assert ratio == pytest.approx(0.7)  # not the ratio of medians, 1.05 / 2.0
    tg["ratio_to_twin"] = None  # not recorded: derived all the same
    run = load_results(write(workdir / "paired.json", data))
    assert run.rows[key("xtile_persistent")].ratio_to_twin == pytest.approx(0.7)
    tg["ratio_to_twin"] = 0.69  # recorded, contradicted by the samples
    with pytest.raises(InputError, match=r"records ratio_to_twin = 0\.69, but its samples"):
        load_results(write(workdir / "paired.json", data))
    tg["ratio_to_twin"] = 0.7
    set_samples(data, key("xtile_persistent"), [0.7e-3, 2.1e-3, 1.05e-3, 1.0e-3])
    with pytest.raises(InputError, match="different numbers of samples") as err:
        load_results(write(workdir / "paired.json", data))
    assert "xtile_persistent-fp16-nt-K128 4" in str(err.value)


def test_faster_beyond_tolerance_but_not_significant_is_not_an_improvement() -> None:
    verdict, delta, *_ = judge_row(BASE, [[0.9, 1.01, 0.8]], Policy())
    assert delta < -0.04 and verdict is Verdict.OK
