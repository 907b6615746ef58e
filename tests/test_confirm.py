"""The confirmation's rule (tilegate/judge/confirm.py): which cases a second run re-measures (the
suspects with their base partners, the reference only where a stored verdict needs it) and
which A/B SLOWER verdicts are beyond doubt, checked against the H200's recorded A/A noise
(baselines/nvidia-h200.ab.json: 25 A/A runs) and on A/B runs shaped like the H200's."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests._factories import build_baseline, key, load_run
from tilegate.judge.abcompare import compare_ab
from tilegate.judge.confirm import (
    BEYOND_DOUBT_P,
    BEYOND_DOUBT_TOLERANCES,
    beyond_doubt,
    confirmation_cases,
)
from tilegate.judge.verdict import Verdict, compare
from tilegate.judge.vocabulary import ABVerdict
from tilegate.store.files import load_baseline, load_noise, save_baseline

ROOT = Path(__file__).resolve().parents[1]
NOISE = ROOT / "baselines" / "nvidia-h200.ab.json"
CLEAR = key("tma_xtile_persistent", K=512)  # 8 % slower: beyond doubt
CLOSE = key("tma_xtile_persistent", K=128)  # about its tolerance: AMBIGUOUS, re-measured
TIED = key("tma_xtile_persistent", K=4096)  # changed code, same speed


def test_no_recorded_aa_run_comes_near_the_beyond_doubt_bar() -> None:
    """Every A/A run's paired ratio of every case the H200 noise file holds (its 22 runs, 744
    ratios): the largest is 0.68 of its tolerance (0.78 judged leave-one-out over 25 runs,
    docs/results-h200.md round 9), so the bar (the interval's near end beyond 2 tolerances)
    sits at 2.9 x the worst; docs/measuring.md's arithmetic starts here."""
    noise = load_noise(NOISE)
    worst = max(abs(r - 1) / row.tolerance for row in noise.rows.values() for r in row.run_ratios)
    ratios = sum(len(row.run_ratios) for row in noise.rows.values())
    runs = len(noise.provenance["runs"])
    assert runs == 22 and ratios == 744
    assert worst == pytest.approx(0.684, abs=0.002)
    assert worst * 2.9 < BEYOND_DOUBT_TOLERANCES
    assert BEYOND_DOUBT_P <= 1e-4


@pytest.fixture(scope="module")
def ab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An A/B run whose tma_xtile_persistent code changed: one case 8 % slower, one by about
    its tolerance, one the same; judged with the H200's A/A noise file."""
    d = tmp_path_factory.mktemp("confirm")
    noise = load_noise(NOISE)
    close = 1 + noise.tolerance(CLOSE)[0]
    run = load_run(
        d,
        "ab.json",
        seed=11,
        rounds=120,
        ab={CLEAR: 1.08, CLOSE: close},
        code={"tma_xtile_persistent": "sha256:new"},
        base_code={"tma_xtile_persistent": "sha256:old"},
        pair_sigma=0.004,
    )
    return compare_ab(run, noise)


def test_a_clear_slowdown_is_beyond_doubt_and_not_measured_again(ab: Any) -> None:
    cases = {c.key: c for c in ab.cases}
    clear, close = cases[CLEAR], cases[CLOSE]
    assert clear.verdict is ABVerdict.SLOWER and beyond_doubt(clear)
    assert clear.ci[0] - 1 > BEYOND_DOUBT_TOLERANCES * clear.tolerance
    assert close.verdict is ABVerdict.AMBIGUOUS and not beyond_doubt(close)
    plan = confirmation_cases(ab)
    assert plan.decided == (CLEAR,) and plan.settled
    # the run fails on CLEAR whatever a second run says of CLOSE: nothing is measured again
    assert plan.cases == () and plan.text() == ""
    # without the clear case, the one that can still go either way is re-measured with its
    # base partner; nothing else of its group
    rest = confirmation_cases(replace(ab, cases=tuple(c for c in ab.cases if c.key != CLEAR)))
    assert not rest.settled and rest.decided == ()
    assert rest.cases == (CLOSE, f"{CLOSE}@base")
    assert rest.text() == f"{CLOSE}\n{CLOSE}@base\n"


def test_beyond_doubt_needs_every_part_of_the_rule(ab: Any) -> None:
    clear = {c.key: c for c in ab.cases}[CLEAR]
    tol = clear.tolerance
    near = (1 + BEYOND_DOUBT_TOLERANCES * tol * 0.99, clear.ci[1])
    assert not beyond_doubt(replace(clear, ci=near))  # inside the margin
    assert not beyond_doubt(replace(clear, p_slower=BEYOND_DOUBT_P * 2))  # not sure enough
    assert not beyond_doubt(replace(clear, by_median=True))  # decided by its median at the cap
    assert not beyond_doubt(replace(clear, code_changed=None))  # identity unknown
    assert not beyond_doubt(replace(clear, tolerance_source="uncalibrated: no noise file"))
    assert not beyond_doubt(replace(clear, verdict=ABVerdict.UNSTABLE))
    assert beyond_doubt(clear)


def test_nothing_suspect_means_no_confirmation(ab: Any) -> None:
    only_same = replace(ab, cases=tuple(c for c in ab.cases if c.key not in (CLEAR, CLOSE)))
    assert confirmation_cases(only_same).cases == ()


def test_a_stored_suspect_adds_its_row_and_the_reference_only_when_its_verdict_needs_it(
    tmp_path: Path,
) -> None:
    """A/B with a stored baseline: a row REGRESSED against the baseline that the A/B does not
    decide (here: no A/B case of its own) is re-measured alone, with the reference of its group
    while its code change against the baseline is unknown (SHIFTED or not is its ratio to the
    reference). One whose A/B case is the same speed as its base is not: its slowdown is the
    base's too, drift that cannot fail (tilegate.judge.outcome), so a re-measurement decides
    nothing (round 17's onepct re-measured two such rows on the H200)."""
    path = tmp_path / "nvidia-h200.json"
    save_baseline(path, build_baseline(tmp_path))
    stored = load_baseline(path)
    run = load_run(
        tmp_path,
        "ab.json",
        seed=12,
        rounds=120,
        slow={TIED: 1.15},  # both sides slower than the baseline: the A/B says the same
        ab={},
        code={"tma_xtile_persistent": "sha256:new"},
        base_code={"tma_xtile_persistent": "sha256:old"},
    )
    ab = compare_ab(run, load_noise(NOISE))
    cmp = compare(run, stored)
    row = {r.key: r for r in cmp.rows}[TIED]
    assert row.verdict is Verdict.REGRESSED and row.code_changed is not True
    assert {c.key: c for c in ab.cases}[TIED].verdict is ABVerdict.SAME
    assert confirmation_cases(ab, cmp).cases == ()
    assert TIED in ab.not_blamed
    undecided = replace(ab, cases=tuple(c for c in ab.cases if c.key != TIED))
    plan = confirmation_cases(undecided, cmp)
    assert plan.cases == (TIED, key("torch", K=4096)), plan
    # once its code change against the baseline is known, the reference is not needed
    known = replace(cmp, rows=tuple(replace(r, code_changed=True) for r in cmp.rows))
    assert confirmation_cases(undecided, known).cases == (TIED,)


def test_the_suite_collects_exactly_the_cases_of_the_file(tmp_path: Path) -> None:
    """--perf-cases-of: the confirmation's suite process measures the listed cases and nothing
    else of their groups (the CPU smoke profile, collection only)."""
    import os
    import subprocess
    import sys

    wanted = ["xtile_persistent-fp16-nt-K24", "torch-fp16-nt-K24"]
    ids = tmp_path / "cases.txt"
    ids.write_text("".join(f"{i}\n" for i in wanted))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tilegate.plugin",
            "--tilegate",
            str(ROOT / "perf_tests"),
            "-p",
            "no:cacheprovider",
            "-q",
            "--collect-only",
            "--perf-profile=smoke",
            "--perf-axis=K=24",
            f"--perf-cases-of={ids}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    collected = sorted(re.findall(r"\[([^\]]+)\]", proc.stdout))
    assert collected == sorted(wanted), proc.stdout[-2000:]


@pytest.mark.interpreter
def test_an_ab_confirmation_times_the_pair_alone_and_the_gate_reads_it(tmp_path: Path) -> None:
    """End to end on the interpreter: an A/B suite process given `<case>` and `<case>@base`
    times that pair and nothing else of its group (no reference), writes pytest-benchmark JSON
    the gate loads, and --perf-soak is accepted; the pair is judged from it."""
    import os
    import subprocess
    import sys

    from tilegate.run.loop import ab_args
    from tilegate.store.files import load_results

    case = "xtile_persistent-fp16-nt-K24"
    ids = tmp_path / "confirm-cases.txt"
    ids.write_text(f"{case}\n{case}@base\n")
    out = tmp_path / "confirm-1.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tilegate.plugin",
            "--tilegate",
            str(ROOT / "perf_tests"),
            "-p",
            "no:cacheprovider",
            "-q",
            "--perf-profile=smoke",
            "--perf-axis=K=24",
            *ab_args("HEAD", tmp_path),
            f"--perf-cases-of={ids}",
            "--perf-soak=0",
            f"--benchmark-json={out}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = load_results(out)
    assert list(run.rows) == [case] and list(run.base_rows) == [case]
    judged = compare_ab(run, None).cases
    assert [c.key for c in judged] == [case] and judged[0].ratio is not None
