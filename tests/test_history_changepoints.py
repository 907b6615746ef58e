"""Change points on SYNTHETIC histories resampled from the real H200 baseline (see
tests/_synthetic_history.py): a +3 % step at a known commit is found there, an A/A history has none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests._synthetic_history import STEP_AT, STEPPED, commit_id
from tilegate.cli import main as tilegate_main
from tilegate.history.changepoints import Method, change_points, detect, markdown, new_since
from tilegate.store.historydb import open_store


def main(argv: list[str]) -> int:
    """`tilegate history ARGV`."""
    return tilegate_main(["history", *argv])


def test_a_3_percent_step_is_found_at_its_commit_and_nowhere_else(
    step_history: tuple[Path, list[Path]],
) -> None:
    store, _ = step_history
    with open_store(store) as s:
        points = change_points(s)
        runs = s.runs()
    assert sorted(cp.case_id for cp in points) == sorted(STEPPED)
    for cp in points:
        assert cp.metric == "ratio_to_reference"
        assert cp.after_run.reference == "torch"
        assert cp.index == STEP_AT
        assert cp.before_run.commit == commit_id(STEP_AT - 1, "step")
        assert cp.after_run.commit == commit_id(STEP_AT, "step")
        assert cp.after_run.run_id == runs[STEP_AT].run_id
        assert cp.size == pytest.approx(0.03, abs=0.006)
        assert cp.p_value < Method().alpha
        assert cp.env_change == ("triton 3.6.0 -> 3.9.0",)


def test_an_a_a_history_has_no_change_point(aa_history: tuple[Path, list[Path]]) -> None:
    store, _ = aa_history
    with open_store(store) as s:
        assert change_points(s) == []
        assert len(s.runs()) == 60


def test_new_since_lists_a_change_point_once_the_runs_after_it_show_it(
    step_history: tuple[Path, list[Path]],
) -> None:
    store, _ = step_history
    with open_store(store) as s:
        runs = s.runs()
        # the run that brought the new level shows nothing yet; the runs after it show the step
        fresh = new_since(s, runs[STEP_AT].run_id)
        assert sorted(cp.case_id for cp in fresh) == sorted(STEPPED)
        assert all(cp.index == STEP_AT for cp in fresh)
        # once the history up to a run shows them, they are no longer new
        assert new_since(s, runs[STEP_AT + 3].run_id) == []
        assert new_since(s, runs[-1].run_id) == []


def test_detect_needs_a_real_level_change() -> None:
    rng = np.random.default_rng(3)
    flat = 1.2 * np.exp(rng.normal(0, 0.003, 60))
    assert detect(flat) == []
    assert detect(np.full(40, 1.5)) == []  # no noise at all
    spike = flat.copy()
    spike[30] *= 1.2  # one odd (throttled) run is not a change
    assert detect(spike) == []
    assert detect(flat[:5]) == []  # too short to judge
    stepped = flat.copy()
    stepped[45:] *= 1.02
    (step,) = detect(stepped)
    assert step.index == 45 and step.size == pytest.approx(0.02, abs=0.004)
    # 3 runs after a step are not enough to tell it from noise; 4 are
    assert detect(stepped[:48]) == []
    assert [s.index for s in detect(stepped[:49])] == [45]


def test_markdown_and_the_command_name_case_commits_size_and_environment(
    step_history: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = step_history
    with open_store(store) as s:
        text = markdown(change_points(s), "Change points")
    for case in STEPPED:
        assert f"`{case}`" in text
    assert f"`{commit_id(STEP_AT - 1, 'step')[:10]}..{commit_id(STEP_AT, 'step')[:10]}`" in text
    assert "triton 3.6.0 -> 3.9.0" in text and "(slower)" in text
    # the command that finds the commit (tilegate bisect), per change point
    before, after = commit_id(STEP_AT - 1, "step")[:10], commit_id(STEP_AT, "step")[:10]
    assert f"`tilegate bisect {before} {after} --case {STEPPED[0]}`" in text
    # named for the run's reference variant (this repo's: `torch`), not for what it calls
    assert "ratio to torch " in text and "reference variant (torch)" in text
    assert "cuBLAS" not in text
    assert main(["changepoints", "--store", str(store)]) == 0
    assert capsys.readouterr().out.count("\n| `") == len(STEPPED)
    assert main(["changepoints", "--store", str(store), "--new"]) == 0
    assert "No change point." in capsys.readouterr().out
    assert main(["changepoints", "--store", str(store), "--new-since", "999"]) == 2
    assert "holds no run 999" in capsys.readouterr().err
