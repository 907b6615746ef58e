"""`tilegate bisect` (issue 49): a step's answer from its interval (recorded rounds), the search
over identity groups, bad input, and one end-to-end bisect of a `tilegate init` repository on
the CPU interpreter (the pruning and the skipping: timings there mean nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_installed import _git
from tilegate.cli import main
from tilegate.judge import stats
from tilegate.judge.abnoise import ABPolicy
from tilegate.judge.bisection import (
    Answer,
    Read,
    answer,
    attempts,
    culprits,
    next_group,
    state,
    steps_left,
)

ROOT = Path(__file__).resolve().parents[1]
TOL = 0.01
# recorded per-round ratios (head / base) of one case, 64 rounds each
BIMODAL = [1.0 + 0.06 * (i % 2) + 0.001 * (i % 5) for i in range(64)]  # two modes, 6 % apart
SHIFTED = [1.05 + 0.002 * ((i * 7) % 5 - 2) for i in range(64)]  # +5 %, tight
STILL = [1.0 + 0.001 * ((i * 3) % 5 - 2) for i in range(64)]  # around 1, tight
WIDE = [1.0 + 0.03 * (i % 2 * 2 - 1) + 0.001 * (i % 3) for i in range(64)]  # +-3 %, median ~1


def from_rounds(key: str, rounds: list[float], tolerance: float, direction: int) -> Read:
    """A case's read from its per-round ratios, with the A/B's interval (stats.median_ci)."""
    ci = stats.median_ci(rounds, ABPolicy().confidence)
    return Read(key, float(np.median(rounds)), ci, tolerance, answer(ci, tolerance, direction))


def test_a_clear_shift_is_different_only_on_the_side_the_range_moved() -> None:
    assert from_rounds("k", SHIFTED[:16], TOL, +1).answer is Answer.DIFFERENT
    assert from_rounds("k", SHIFTED[:16], TOL, -1).answer is Answer.UNKNOWN  # faster was asked
    assert from_rounds("k", STILL[:16], TOL, +1).answer is Answer.SAME


def test_a_bimodal_step_is_unknown_and_measured_again_with_doubled_rounds_up_to_the_cap() -> None:
    asked: list[int] = []

    def measure(rounds: int) -> list:
        asked.append(rounds)
        return [from_rounds("k", BIMODAL[:rounds], TOL, +1)]

    tries = attempts(measure, 16, 64)
    assert asked == [16, 32, 64]  # never decided on a median while the interval straddles
    assert all(t[0].answer is Answer.UNKNOWN for t in tries)
    assert tries[-1][0].ci[0] < 1 + TOL < tries[-1][0].ci[1]
    moved, unsure = state(tries[-1])  # at the cap its median decides the side; marked unsure
    assert unsure and moved == (abs(tries[-1][0].ratio - 1) > TOL,)
    asked.clear()
    assert len(attempts(lambda r: [from_rounds("k", SHIFTED[:r], TOL, +1)], 16, 64)) == 1


def test_the_search_halves_spans_of_different_states_and_names_each_culprit() -> None:
    states = {0: (False, False), 8: (True, True)}
    assert next_group(states) == 4 and steps_left(states) == 3
    states |= {4: (True, False), 2: (False, False), 3: (False, False)}  # case 1 moved at 4
    assert next_group(states) == 6
    states |= {6: (True, True), 5: (True, False)}  # case 2 at 6: two culprits
    assert next_group(states) is None and steps_left(states) == 0
    assert culprits(states) == [4, 6]


def _recorded_bisect(tmp_path: Path, groups: list[int], rounds: dict[int, list[float]]) -> tuple:
    """A Bisect over commits in these identity groups (GOOD first, group 0) whose steps read
    recorded rounds: `rounds[g]` the per-round ratios of group g against GOOD; sandwich steps
    the ratio of the culprit's rounds to its parent's. Returns it and the attempts it made."""
    from tilegate.run.culprit import Bisect

    b = Bisect.__new__(Bisect)
    rows = [{"sha": f"c{i}", "identity": f"i{g}", "group": g} for i, g in enumerate(groups)]
    b.out, b.log, b.done, b.states, b.ends = (
        tmp_path,
        lambda _: None,
        [],
        {},
        ("c0", rows[-1]["sha"]),
    )
    b.state = {"cases": ["k"], "commits": rows, "steps": [], "rounds": 16, "max_rounds": 64}
    b.state |= {"profile": "smoke", "good": "c0", "bad": b.ends[1]}
    b.prune = lambda: None  # type: ignore[method-assign]
    group = {r["sha"]: r["group"] for r in rows}
    asked: list[tuple[str, str, str, int]] = []

    def measure(kind: str, head: str, base: str, n: int) -> list:
        asked.append((kind, head, base, n))
        got = [h / b for h, b in zip(rounds[group[head]], rounds[group[base]], strict=True)]
        read = from_rounds("k", got[:n], TOL, +1)
        case = {
            "ratio": read.ratio,
            "ci": list(read.ci),
            "tolerance": TOL,
            "answer": read.answer.value,
        }
        b.state["steps"].append({"step": len(asked), "kind": kind, "commit": head, "against": base,
                                 "rounds": n, "cases": {"k": case}, "why": {"k": ["BLOCK"]}})  # fmt: skip
        return [read]

    b._measure = measure  # type: ignore[method-assign]
    return b, asked


def test_the_search_times_only_each_groups_first_commit_and_sandwiches_the_culprit(
    tmp_path: Path,
) -> None:
    groups = [0, 0, 1, 1, 2, 3, 4, 5, 5, 6, 7, 7]  # the change at group 5: commit c7
    rounds = {g: STILL if g < 5 else SHIFTED for g in range(8)}
    b, asked = _recorded_bisect(tmp_path, groups, rounds)
    assert b.run() == 0
    out = b.state["outcome"]
    assert out["result"] == "found" and [c["sha"] for c in out["culprits"]] == ["c7"]
    assert out["culprits"][0]["parent"] == "c6" and out["culprits"][0]["confirmed"]
    firsts = {"c0", "c2", "c4", "c5", "c6", "c7", "c9", "c10", "c11"}
    assert (
        {a[1] for a in asked} <= firsts and asked[0][0] == "confirm" and asked[-1][0] == "sandwich"
    )
    assert len(asked) == 1 + 3 + 1  # confirm, log2(7 groups) search steps, the sandwich
    assert "FOUND: c7" in (tmp_path / "report.md").read_text()
    # a bimodal group: UNKNOWN up to the cap, the search goes on, the result is ambiguous
    b, asked = _recorded_bisect(tmp_path, groups, rounds | {4: BIMODAL})
    assert b.run() == 0 and b.state["outcome"]["result"] == "ambiguous"
    assert [a[3] for a in asked if a[:2] == ("search", "c6")] == [16, 32, 64]
    assert {"c6", "c7"} <= set(b.state["outcome"]["left"])  # the span the UNKNOWN step was in
    # GOOD and BAD the SAME: "no change in this range" with its figure, nothing searched
    b, asked = _recorded_bisect(tmp_path, groups, dict.fromkeys(range(8), STILL))
    assert b.run() == 0 and [a[0] for a in asked] == ["confirm"]
    assert "NONE: no change in this range: `k` +0.00%" in (tmp_path / "report.md").read_text()
    # GOOD against BAD UNKNOWN at the cap, its median inside the tolerance: never "no change"
    b, asked = _recorded_bisect(tmp_path, groups, dict.fromkeys(range(7), STILL) | {7: WIDE})
    assert b.run() == 0 and [a[3] for a in asked] == [16, 32, 64]
    out = b.state["outcome"]
    assert out["result"] == "ambiguous" and out["left"] == [
        "c2",
        "c4",
        "c5",
        "c6",
        "c7",
        "c9",
        "c10",
    ]
    assert "AMBIGUOUS: candidates left c2, c4" in (tmp_path / "report.md").read_text()
    assert "(the range's change is UNKNOWN at the cap: `k` " in (tmp_path / "report.md").read_text()


def test_the_cases_come_from_a_pattern_or_a_failed_runs_verdicts_and_must_exist_at_good(
    tmp_path: Path,
) -> None:
    from tilegate.errors import InputError
    from tilegate.run.culprit import select

    good = ["tiled-fp16-K128", "tiled-fp16-K512", "grouped-fp16-K128"]
    assert select(good, ["tiled-*"], "") == good[:2]
    assert select(good, [r"(tiled|grouped)-fp16-K128"], "") == [good[0], good[2]]
    with pytest.raises(InputError, match=r"--case 'xtile-\*'"):
        select(good, ["xtile-*"], "")
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(json.dumps({"verdicts": {good[1]: "REGRESSED", good[0]: "SAME"}}))
    assert select(good, [], str(verdicts)) == [good[1]]
    verdicts.write_text(json.dumps({"verdicts": {"new-fp16-K128": "SLOWER"}}))
    with pytest.raises(InputError, match="not at GOOD: new-fp16-K128"):
        select(good, [], str(verdicts))


def test_a_good_that_is_not_an_ancestor_of_bad_is_exit_2_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["init", "--package", "bisectbad"]) == 0
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "init")
    _git(tmp_path, "checkout", "-q", "-b", "side")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "side")
    _git(tmp_path, "checkout", "-q", "main")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "main")
    capsys.readouterr()
    assert main(["bisect", "side", "main", "--profile", "smoke"]) == 2
    err = capsys.readouterr().err
    assert "GOOD side" in err and "BAD main" in err and "not an ancestor" in err, err
    assert main(["bisect", "nosuchref", "main", "--profile", "smoke"]) == 2
    assert "'nosuchref' is not a commit" in capsys.readouterr().err
    assert not (tmp_path / ".perf" / "bisect" / "bisect.json").exists()


def test_a_failed_run_report_prints_the_bisect_command_of_its_range(tmp_path: Path) -> None:
    from tests.test_report import FIXTURES, baseline
    from tilegate.judge.gate import judgement
    from tilegate.judge.verdict import compare
    from tilegate.report.render import render
    from tilegate.store.files import load_results

    data = json.loads((FIXTURES / "synthetic-results-regressed.json").read_text())
    data["commit_info"]["id"] = "b" * 40  # the failed run's commit; the baseline's 73fe4455c0
    (tmp_path / "results.json").write_text(json.dumps(data))
    run = load_results(tmp_path / "results.json")
    text = render(judgement(run, compare(run, baseline())))
    cases = "--case xtile_persistent-fp16-nt-K128 --case persistent-fp16-nt-K4096"
    # with the run's profile, so that it works as printed (issue 48: every hint)
    profile = f"--profile {run.env.profile}"
    assert f"Find the commit: `tilegate bisect 73fe4455c0 bbbbbbbbbb {cases} {profile}`" in text


def _range(repo: Path) -> dict[str, str]:
    """16 commits after `tilegate init`: 10 docs, 2 host code never called, 1 kernel change
    (BLOCK 1024 -> 512), 1 that does not import, its fix, one outside the code. {what: sha}."""
    kernels = repo / "rangekern" / "kernels.py"
    init = repo / "rangekern" / "__init__.py"
    out = {}
    for i in range(1, 17):
        if i in (5, 6):
            text = init.read_text()
            init.write_text(
                ("import not_a_module_xyz\n" + text) if i == 5 else text.split("\n", 1)[1]
            )
        elif i == 9:
            kernels.write_text(kernels.read_text().replace("1024", "512"))
        elif i in (3, 11):
            kernels.write_text(kernels.read_text() + f"\n\ndef _unused_{i}():\n    return {i}\n")
        elif i == 13:
            (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "*.tmp\n")
        else:
            (repo / f"docs-{i}.md").write_text(f"note {i}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
        out[{5: "broken", 9: "kernel", 8: "parent"}.get(i, str(i))] = _git(
            repo, "rev-parse", "HEAD"
        ).strip()
    return out


@pytest.mark.interpreter
def test_bisect_prunes_by_compiled_code_skips_what_does_not_import_and_times_no_group_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["init", "--package", "rangekern"]) == 0
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tilegate init"]):
        _git(tmp_path, *args)
    good = _git(tmp_path, "rev-parse", "HEAD").strip()
    shas = _range(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the profile's
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-m", "tilegate", "bisect", "HEAD~16", "HEAD", "--profile", "smoke"]
    cmd += ["--case", "triton_scale-*-n100", "--rounds", "8", "--max-rounds", "8"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / ".perf" / "bisect" / "bisect.json").read_text())
    out = data["outcome"]
    assert out["candidates"] == [shas["kernel"]]  # docs, host code never called: one group
    assert [s["sha"] for s in out["skipped"]] == [shas["broken"]]
    assert "not_a_module_xyz" in out["skipped"][0]["why"]
    groups = [r.get("group") for r in data["commits"]]
    assert groups == [0] * 5 + [None] + [0] * 3 + [1] * 8, groups
    # timed: the range's ends (confirm), the kernel commit and its parent (the sandwich)
    assert set(out["timed"]) <= {good, shas["16"], shas["kernel"], shas["parent"]}
    assert {good, shas["16"]} <= set(out["timed"])
    assert out["result"] in ("found", "ambiguous", "none")  # the interpreter's times: anything
    words = {v["answer"] for s in data["steps"] for v in s["cases"].values()}
    assert words <= {a.value for a in Answer} and data["steps"][0]["kind"] == "confirm"
    report = (tmp_path / ".perf" / "bisect" / "report.md").read_text()
    assert "## Steps" in report and shas["broken"][:10] in report
    assert "bisect: step 1 (confirm)" in done.stderr
    # --resume replays the saved state: nothing pruned or timed again, the same answer
    again = subprocess.run(
        [*cmd, "--resume"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and "identity" not in again.stderr, again.stderr[-3000:]
    assert json.loads((tmp_path / ".perf" / "bisect" / "bisect.json").read_text()) == data
    other = subprocess.run(
        [*cmd[:-1], "16", "--resume"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert other.returncode == 2 and "other commits or options" in other.stderr
