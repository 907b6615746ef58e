"""UNSTABLE (tilegate/judge/modes.py, tilegate/judge/abcase.py): a case whose runs or blocks of rounds
fall into two modes is never decided FASTER or SLOWER on the mixture, names its modes and where
they came from, and does not pass unnoticed; every number of an A/B row comes from the same
samples. Synthetic bimodal samples, one real H200 run (tests/fixtures/recorded-h200-quick.json)
for what one population looks like, and a hypothesis property for the row's directions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._factories import key, load_run
from tilegate.errors import EXIT_CANNOT_JUDGE, EXIT_FAIL
from tilegate.judge.abcase import judge_case
from tilegate.judge.abcompare import ABComparison
from tilegate.judge.abnoise import ABPolicy
from tilegate.judge.modes import SPLIT_MIN, find_modes, units
from tilegate.judge.outcome import outcome
from tilegate.judge.vocabulary import ABVerdict
from tilegate.store.files import load_results

FIXTURES = Path(__file__).parent / "fixtures"
CASE = key("tma_xtile_persistent", K=512)
TOL = 0.01


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A loaded A/B run whose rows the tests give their own samples."""
    d = tmp_path_factory.mktemp("modes")
    return load_run(
        d,
        "ab.json",
        seed=5,
        rounds=60,
        ab={},
        code={"tma_xtile_persistent": "sha256:new"},
        base_code={"tma_xtile_persistent": "sha256:old"},
    )


def _pair(run: Any, heads: list[float], bases: list[float]) -> tuple[Any, Any, Any]:
    head = replace(
        run.rows[CASE], samples_s=tuple(heads), median_s=float(np.median(heads)), timed_in=None
    )
    base = replace(
        run.base_rows[CASE], samples_s=tuple(bases), median_s=float(np.median(bases)), timed_in=None
    )
    return run, head, base


def _ratios(rng: np.random.Generator, n: int, ratio: float, sigma: float = 0.003) -> np.ndarray:
    return ratio * np.exp(rng.normal(0.0, sigma, n))


def _judge(run: Any, per_run: list[np.ndarray], seed: int = 0) -> Any:
    """The case judged over runs whose per-round ratios are `per_run` (base ~0.2 ms, jittered)."""
    rng = np.random.default_rng(seed)
    pairs = []
    for ratios in per_run:
        base = 2e-4 * np.exp(rng.normal(0.0, 0.01, len(ratios)))
        pairs.append(_pair(run, list(base * ratios), list(base)))
    return judge_case(CASE, pairs, TOL, "test", ABPolicy())


def test_two_runs_in_two_modes_are_unstable_never_faster(run: Any) -> None:
    """The outside repository's softmax: +9.2 % in one run, -25.7 % in the next."""
    rng = np.random.default_rng(1)
    case = _judge(run, [_ratios(rng, 60, 1.092), _ratios(rng, 60, 0.743)])
    assert case.verdict is ABVerdict.UNSTABLE, case
    fast, slow = case.modes
    assert fast.ratio == pytest.approx(0.743, rel=0.01) and slow.ratio == pytest.approx(1.092, 0.01)
    assert fast.where == ("confirmation 1 rounds 1-60",) and slow.where == ("run 1 rounds 1-60",)
    assert slow.slower and fast.faster
    assert (
        "-25.7%" in case.note and "+9.2%" in case.note and "not decided on the mixture" in case.note
    )
    # a mode slower on its own rounds: fails (exit 1), listed apart from SLOWER
    result = outcome(None, ABComparison(run, (), (case,), None, ABPolicy()))
    assert result.code == EXIT_FAIL and result.unstable_slower == (case,) and not result.slower
    assert result.parts == ["1 unstable case with a slower mode"]


def test_a_mode_switch_within_a_run_is_found_with_its_rounds(run: Any) -> None:
    rng = np.random.default_rng(2)
    ratios = np.concatenate([_ratios(rng, 24, 1.00), _ratios(rng, 36, 0.85)])
    case = _judge(run, [ratios])
    assert case.verdict is ABVerdict.UNSTABLE, case
    fast, slow = case.modes
    assert fast.where == ("run 1 rounds 25-60",) and slow.where == ("run 1 rounds 1-24",)
    assert not slow.slower and fast.faster
    # no mode slower on its own rounds: it cannot be judged (exit 2), never passes as FASTER
    result = outcome(None, ABComparison(run, (), (case,), None, ABPolicy()))
    assert result.code == EXIT_CANNOT_JUDGE and result.unstable == (case,)
    assert result.parts == ["1 unstable case that cannot be judged"]
    # the case's note says what the case is, never the run's exit code: the outcome decides
    # that (a smoke A/B of Liger's upgrade exited 0 with its note saying "cannot judge (exit 2)")
    assert "it cannot be judged" in case.note and "exit" not in case.note


def test_modes_name_the_timing_passes_a_row_records(run: Any) -> None:
    """Rows that say how many sweeps they were timed in (pass_medians_s): the modes are named by
    pass; passes too short for a unit of their own are merged with their neighbours."""
    rng = np.random.default_rng(9)
    ratios = np.concatenate([_ratios(rng, 24, 1.00), _ratios(rng, 36, 0.85)])
    base = 2e-4 * np.exp(rng.normal(0.0, 0.01, 60))
    _, head, base_row = _pair(run, list(base * ratios), list(base))
    case = judge_case(CASE, [(run, replace(head, sweeps=10), base_row)], TOL, "t", ABPolicy())
    assert case.verdict is ABVerdict.UNSTABLE
    fast, slow = case.modes
    assert slow.where == ("run 1 passes 1-4",) and fast.where == ("run 1 passes 5-10",)
    assert units([[1.0] * 22], [[i // 4 for i in range(22)]])[-1].where == "run 1 passes 5-6"


def test_one_population_is_not_unstable_however_slow_or_drifting(run: Any) -> None:
    rng = np.random.default_rng(3)
    steady = _judge(run, [_ratios(rng, 60, 1.05), _ratios(rng, 60, 1.05)])
    assert steady.verdict is ABVerdict.SLOWER and not steady.modes
    # a slow drift over the run (thermal): continuous, no empty gap between blocks
    drift = np.linspace(1.00, 1.03, 60) * np.exp(rng.normal(0.0, 0.003, 60))
    drifting = _judge(run, [drift])
    assert drifting.verdict is not ABVerdict.UNSTABLE and not drifting.modes
    # two runs apart by less than twice the tolerance: A/A-sized, one population
    near = _judge(run, [_ratios(rng, 60, 1.000), _ratios(rng, 60, 1.015)])
    assert near.verdict is not ABVerdict.UNSTABLE
    # two runs 6 % apart: what two different kernels drift apart by on the H200 (judge.modes)
    drifted = _judge(run, [_ratios(rng, 60, 1.00), _ratios(rng, 60, 1.06)])
    assert drifted.verdict is not ABVerdict.UNSTABLE and not drifted.modes


def test_unchanged_code_is_never_unstable(run: Any) -> None:
    rng = np.random.default_rng(4)
    bases = list(2e-4 * np.exp(rng.normal(0.0, 0.01, 60)))
    ratios = np.concatenate([_ratios(rng, 30, 1.0), _ratios(rng, 30, 0.8)])
    _, head, base = _pair(run, list(np.asarray(bases) * ratios), bases)
    same = replace(head, code_hash=base.code_hash)
    case = judge_case(CASE, [(run, same, base)], TOL, "test", ABPolicy())
    assert case.verdict is ABVerdict.INCONSISTENT and not case.modes


def test_a_real_h200_runs_paired_ratios_are_one_population() -> None:
    """Every pair of different variants timed in the same rounds of a real H200 run (fixed code,
    the power cap moving them apart from pass to pass): no two modes, even at the 0.5 % floor
    tolerance; their block medians span up to 5.7 %, the floors of judge.modes sit above."""
    real = load_results(FIXTURES / "recorded-h200-quick.json")
    spans = []
    for row in real.rows.values():
        for other in real.rows.values():
            if other.group != row.group or other.key == row.key:
                continue
            ratios = (np.asarray(row.samples_s) / np.asarray(other.samples_s)).tolist()
            blocks = [u.median for u in units([ratios])]
            assert len(blocks) == 5
            spans.append(max(blocks) - min(blocks))
            assert find_modes([ratios], 0.005) == (), (row.key, other.key)
            # by its real timing passes (3 sweeps, recorded per row): one population too
            assert row.sweeps == 3
            per_pass = len(ratios) // row.sweeps
            passes = [[i // per_pass for i in range(len(ratios))]]
            assert [u.where for u in units([ratios], passes)] == [
                "run 1 pass 1",
                "run 1 pass 2",
                "run 1 pass 3",
            ]
            assert find_modes([ratios], 0.005, passes=passes) == (), (row.key, other.key)
    assert len(spans) == 216
    assert 0.05 < max(spans) < SPLIT_MIN  # real pass-to-pass drift, below the floor


def _row_agrees(case: Any) -> None:
    """The row's numbers agree: the ratio inside its interval, and a FASTER or SLOWER verdict
    has its ratio, its interval and its medians (the same pooled rounds) on one side of 1."""
    lo, hi = case.ci
    assert lo <= case.ratio <= hi
    if case.verdict is ABVerdict.SLOWER:
        assert case.ratio > 1 and lo > 1 and case.head_median_s > case.base_median_s
    if case.verdict is ABVerdict.FASTER:
        assert case.ratio < 1 and hi < 1 and case.head_median_s < case.base_median_s


def test_medians_and_ratio_pointing_opposite_ways_are_unstable(run: Any) -> None:
    """Rounds whose speed moves both sides by far more than the change (the outside row: base
    0.0181 ms, head 0.0198 ms, head / base 0.767): the per-round ratio says slower (+20 %), the
    medians of the same rounds say faster. Decided on neither: UNSTABLE, exit 2."""
    rng = np.random.default_rng(6)
    kinds = [(1.0, 0.5)] * 32 + [(3.0, 2.5)] * 56 + [(2.4, 3.0)] * 32  # (head, base) in ms
    rng.shuffle(kinds)
    jitter = np.exp(rng.normal(0.0, 0.001, len(kinds)))
    heads = [h * 1e-3 * j for (h, _), j in zip(kinds, jitter, strict=True)]
    bases = [b * 1e-3 * j for (_, b), j in zip(kinds, jitter, strict=True)]
    case: Any = judge_case(CASE, [_pair(run, heads, bases)], TOL, "test", ABPolicy())
    assert case.ratio == pytest.approx(1.2, rel=1e-6) and case.ci[0] > 1 + TOL
    assert case.head_median_s < case.base_median_s  # the same rounds' medians: faster
    assert case.verdict is ABVerdict.UNSTABLE, case
    assert "the rounds are a mixture" in case.note and not case.modes
    _row_agrees(case)
    result = outcome(None, ABComparison(run, (), (case,), None, ABPolicy()))
    assert result.code == EXIT_CANNOT_JUDGE


def test_medians_a_little_the_other_way_make_a_decided_case_ambiguous(run: Any) -> None:
    """Per-round ratio +3 %, the medians of the same rounds -0.5 %: within what two real kernels'
    numbers differ by (not a mixture), but a row must not read "slower" beside a smaller head
    median: AMBIGUOUS, measure more (the confirmation re-measures it)."""
    kinds = [(1.03, 1.0)] * 32 + [(2.06, 2.0)] * 56 + [(1.99, 2.02)] * 32
    np.random.default_rng(8).shuffle(kinds)
    heads = [h * 1e-3 for h, _ in kinds]
    bases = [b * 1e-3 for _, b in kinds]
    case: Any = judge_case(CASE, [_pair(run, heads, bases)], TOL, "test", ABPolicy())
    assert case.ratio == pytest.approx(1.03) and case.ci[0] > 1 + TOL
    assert case.head_median_s / case.base_median_s == pytest.approx(0.995)
    assert case.verdict is ABVerdict.AMBIGUOUS, case
    assert "the medians of the same rounds point the other way (-0.50%)" in case.note
    _row_agrees(case)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ratio_a=st.floats(0.6, 1.6),
    ratio_b=st.floats(0.6, 1.6),
    share=st.integers(0, 40),
    spread=st.floats(0.0, 1.5),
    seed=st.integers(0, 2**16),
)
def test_every_number_of_a_row_agrees_in_direction(
    run: Any, ratio_a: float, ratio_b: float, share: int, spread: float, seed: int
) -> None:
    """Mixtures of two ratios over rounds whose base times spread by up to e^1.5: whatever the
    verdict, the row's ratio, interval and medians never point opposite ways under a FASTER or
    SLOWER verdict, and the medians are those of the pooled rounds."""
    rng = np.random.default_rng(seed)
    n = 40
    ratios = np.where(np.arange(n) < share, ratio_a, ratio_b) * np.exp(rng.normal(0, 0.003, n))
    rng.shuffle(ratios)
    bases = 2e-4 * np.exp(rng.uniform(0.0, spread, n))
    heads = bases * ratios
    case = judge_case(CASE, [_pair(run, list(heads), list(bases))], TOL, "test", ABPolicy())
    _row_agrees(case)
    assert case.head_median_s == pytest.approx(float(np.median(heads)))
    assert case.base_median_s == pytest.approx(float(np.median(bases)))


def test_the_report_and_the_pr_comment_list_an_unstable_case_with_its_modes(run: Any) -> None:
    from tilegate.judge.gate import judgement
    from tilegate.report.pr_comment import deciding_section
    from tilegate.report.render import render

    rng = np.random.default_rng(7)
    case = _judge(run, [_ratios(rng, 60, 1.092), _ratios(rng, 60, 0.743)])
    others = tuple(
        replace(c, verdict=ABVerdict.UNCHANGED, code_changed=False)
        for c in (
            judge_case(k, [(run, run.rows[k], run.base_rows[k])], TOL, "t", ABPolicy())
            for k in list(run.base_rows)[:2]
        )
    )
    text = render(judgement(run, None, ABComparison(run, (), (case, *others), None, ABPolicy())))
    assert text.splitlines()[0] == "# tilegate: FAIL: 1 unstable case with a slower mode"
    deciding = deciding_section(text)
    row = next(line for line in deciding.splitlines() if f"`{CASE}`" in line)
    assert "UNSTABLE (a mode slower: fails)" in row and "measure it alone" in row
    assert "-25.7% (confirmation 1 rounds 1-60; 60 rounds)" in row
    assert "+9.2% (run 1 rounds 1-60; 60 rounds)" in row
    # the A/B table's medians are the pooled rounds', the same ones as its ratio
    table_row = next(line for line in text.splitlines() if "| **UNSTABLE** |" in line)
    assert f"{case.base_median_s * 1e3:.4f}" in table_row and "**UNSTABLE**" in table_row
