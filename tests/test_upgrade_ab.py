"""The GPU upgrade A/B of environments (tilegate/judge/upgrade.py judges, tilegate/run/upgrade.py runs
and renders) on synthetic runs of two Tritons."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests._factories import key, load_run, make_run, write
from tilegate.errors import InputError
from tilegate.explain.diff import explain_runs
from tilegate.judge import vocabulary
from tilegate.judge.outcome import Outcome, upgrade_outcome
from tilegate.judge.results import load_results
from tilegate.judge.upgrade import UpgradeComparison, judge_upgrade
from tilegate.judge.vocabulary import Change
from tilegate.report.upgrade import render as _render
from tilegate.run import upgrade
from tilegate.run.upgrade import measure_sides

OLD = {"torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3"}
NEW = {**OLD, "triton": "3.9.0"}
FIXTURES = Path(__file__).parent / "fixtures"
EXPLAIN_FIXTURE = FIXTURES / "synthetic-ab-explain-h200.json"


def render(cmp: UpgradeComparison, *rest: Any) -> str:
    """The upgrade report of `cmp` with its outcome, as tilegate upgrade-ab renders it."""
    return _render(cmp, upgrade_outcome(cmp), *rest)


def sides(tmp_path: Path, slow: dict[str, float], n: int = 3):  # type: ignore[no-untyped-def]
    old = [load_run(tmp_path, f"old-{i}.json", seed=200 + i, software=OLD) for i in range(n)]
    new = [
        load_run(tmp_path, f"new-{i}.json", seed=300 + i, software=NEW, slow=slow) for i in range(n)
    ]
    return old, new


def test_a_kernel_the_upgrade_slows_is_named_and_only_it(tmp_path: Path) -> None:
    cmp = judge_upgrade(*sides(tmp_path, {key("persistent", K=4096): 1.08}))
    by = {c.key: c for c in cmp.cases}
    assert by[key("persistent", K=4096)].change is Change.SLOWER
    assert by[key("persistent", K=4096)].effect == pytest.approx(0.08, abs=0.03)
    assert cmp.kernels()["persistent"] is Change.SLOWER
    assert [v for v, c in cmp.kernels().items() if c is Change.SLOWER] == ["persistent"]
    assert upgrade_outcome(cmp).code == 1
    text = render(cmp)
    assert text.startswith("# tilegate upgrade A/B: FAIL: Triton 3.6.0 -> 3.9.0: persistent slower")


def test_the_upgrade_exit_code_is_the_one_exit_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tilegate.judge.outcome decides the upgrade's exit code, as it does the stored and A/B."""
    slowed = key("persistent", K=4096)
    cmp = judge_upgrade(*sides(tmp_path, {slowed: 1.08}))
    result = upgrade_outcome(cmp)
    assert result.code == 1
    assert [c.key for c in result.upgrade] == [slowed]
    assert result.parts == ["1 case slower under the new environment"]
    (tmp_path / "same").mkdir()
    same = judge_upgrade(*sides(tmp_path / "same", {}))
    assert upgrade_outcome(same) == Outcome(0)
    # the report renders the outcome it is given: it has no rule of its own
    assert not hasattr(cmp, "exit_code"), "the comparison holds facts; the exit rule is outcome's"
    assert _render(cmp, Outcome(2)).startswith("# tilegate upgrade A/B: CANNOT JUDGE: ")


def test_smoke_upgrade_runs_never_fail_by_the_one_exit_rule(tmp_path: Path) -> None:
    slowed = key("persistent", K=4096)
    old = [
        load_run(tmp_path, f"so-{i}.json", seed=230 + i, software=OLD, mode="smoke")
        for i in range(3)
    ]
    new = [
        load_run(
            tmp_path, f"sn-{i}.json", seed=330 + i, software=NEW, mode="smoke", slow={slowed: 1.3}
        )
        for i in range(3)
    ]
    cmp = judge_upgrade(old, new)
    assert cmp.smoke and any(c.change is Change.SLOWER for c in cmp.cases)
    # the one smoke rule (tilegate.judge.outcome.timings_not_judged): its verdicts kept, exit 0
    result = upgrade_outcome(cmp)
    assert result.code == 0 and result.smoke and result.upgrade
    assert render(cmp).startswith("# tilegate upgrade A/B: PASS: ")


def test_the_upgrade_words_are_the_vocabularys() -> None:
    assert Change is vocabulary.Change
    assert [c.value for c in Change] == ["SLOWER", "FASTER", "SAME", "AMBIGUOUS"]
    assert {c.value for c in Change} <= {v.value for v in vocabulary.ABVerdict}


def test_a_whole_machine_shift_is_no_kernel_change(tmp_path: Path) -> None:
    """Every row, cuBLAS included, 4 % slower under the new side: the ratios hold."""
    old = [load_run(tmp_path, f"o-{i}.json", seed=210 + i, software=OLD) for i in range(3)]
    new = [
        load_run(tmp_path, f"n-{i}.json", seed=310 + i, software=NEW, machine_factor=1.04)
        for i in range(3)
    ]
    cmp = judge_upgrade(old, new)
    assert upgrade_outcome(cmp).code == 0
    assert Change.SLOWER not in cmp.kernels().values()


def test_the_same_triton_on_both_sides_is_said_and_passes(tmp_path: Path) -> None:
    old = [load_run(tmp_path, f"a-{i}.json", seed=220 + i, software=OLD) for i in range(3)]
    new = [load_run(tmp_path, f"b-{i}.json", seed=320 + i, software=OLD) for i in range(3)]
    cmp = judge_upgrade(old, new)
    assert upgrade_outcome(cmp).code == 0 and any("A/A" in n for n in cmp.notes)


def test_too_few_processes_or_other_gpus_cannot_judge(tmp_path: Path) -> None:
    old, new = sides(tmp_path, {}, n=1)
    with pytest.raises(InputError, match="at least 2 processes"):
        judge_upgrade(old, new)


def test_the_sides_alternate_and_the_new_triton_goes_first_on_pythonpath(tmp_path: Path) -> None:
    calls: list[tuple[str, Path | None]] = []

    def suite(out: Path, profile: str, extra: Sequence[str], pythonpath: Path | None = None) -> int:
        calls.append((out.name, pythonpath))
        write(out, make_run(seed=len(calls), software=NEW if pythonpath else OLD))
        return 0

    new_triton = tmp_path / "triton-3.9.0"
    (new_triton / "triton").mkdir(parents=True)
    old, new = measure_sides(
        new_triton, None, 3, "quick", [], tmp_path / "ab", suite=suite, log=lambda line: None
    )
    assert [c[0] for c in calls] == [
        "old-1.json",
        "new-1.json",
        "old-2.json",
        "new-2.json",
        "old-3.json",
        "new-3.json",
    ]
    assert [c[1] for c in calls] == [None, new_triton] * 3
    assert len(old) == len(new) == 3
    with pytest.raises(InputError, match="holds no triton/ package"):
        measure_sides(tmp_path, None, 3, "quick", [], tmp_path / "x", suite=suite)
    with pytest.raises(InputError, match="at least 2"):
        measure_sides(new_triton, None, 1, "quick", [], tmp_path / "x", suite=suite)


def _upgrade_side(path: Path, side: str, i: int) -> Path:
    """One process of an upgrade side cut from the explain fixture (an A/B run as an H200
    records it): the `side` rows and the reference, each case's samples scaled a little per
    process (the processes of a side differ, the ratio between the sides holds)."""
    data = json.loads(EXPLAIN_FIXTURE.read_text())
    rows = []
    for b in data["benchmarks"]:
        tg = b["extra_info"]["tilegate"]
        if tg.get("reference") or tg.get("side", "head") == side:
            tg.pop("side", None)
            for ratio in [k for k in tg if k.startswith("ratio_to_")]:
                del tg[ratio]  # derived again from the scaled samples
            if not tg.get("reference"):
                tg["samples_s"] = [x * (1 + 0.002 * i) for x in tg["samples_s"]]
                tg["median_s"] *= 1 + 0.002 * i
            rows.append(b)
    data["benchmarks"] = rows
    data["machine_info"]["tilegate"]["software"]["triton"] = "3.6.0" if side == "base" else "3.9.0"
    return write(path, data)


def test_an_upgrade_explains_its_decided_cases_whose_code_changed(tmp_path: Path) -> None:
    """The explain fixture's base rows as the old side, its head rows as the new: `tiled`'s
    num_stages 3 -> 4 and `grouped`'s extra clone are named, base -> head, in the report."""
    old = [_upgrade_side(tmp_path / f"old-{i}.json", "base", i) for i in (1, 2)]
    new = [_upgrade_side(tmp_path / f"new-{i}.json", "head", i) for i in (1, 2)]
    cmp = judge_upgrade([load_results(p) for p in old], [load_results(p) for p in new])
    assert {c.kernel_name: c.code_changed for c in cmp.cases} == {"tiled": True, "grouped": True}
    assert {c.change for c in cmp.cases} == {Change.SLOWER}
    text = render(cmp, None, upgrade.explain(cmp, old[0], new[0]))
    why = text.split("**Why it changed** (Triton 3.6.0 -> Triton 3.9.0: ", 1)[1]
    assert "<code>tiled_matmul_kernel</code>: programs/SM 2 -&gt; 1, num_stages 3 -&gt; 4" in why
    assert "<code>tiled-fp16-nt-K512</code>" in why
    # one explanation of two cases is said once (its figures as ranges)
    assert "- 2 cases SLOWER: +1 launch: the copy of `aten.clone.default`" in why
    assert "(`grouped-fp16-nt-K128`, `grouped-fp16-nt-K512`)" in why
    assert "| `tiled` | SLOWER | changed |" in text
    sidecar = json.loads((tmp_path / "explain" / "explanations.json").read_text())
    assert set(sidecar["cases"]) == {c.key for c in cmp.cases}


def test_an_upgrade_that_changed_code_but_not_time_says_so_and_explains_nothing(
    tmp_path: Path,
) -> None:
    """Liger 0.8.4 -> 0.8.5 changed the backward kernels and not their time: the kernel reads
    SAME with its compiled code changed, and only a decided case gets a why."""
    old = [
        load_run(tmp_path, f"o-{i}.json", seed=240 + i, software=OLD, code={"persistent": "a"})
        for i in range(3)
    ]
    new = [
        load_run(tmp_path, f"n-{i}.json", seed=340 + i, software=NEW, code={"persistent": "b"})
        for i in range(3)
    ]
    cmp = judge_upgrade(old, new)
    assert cmp.kernels()["persistent"] is Change.SAME
    text = render(cmp)
    assert "| `persistent` | SAME | changed |" in text
    assert "| `tiled` | SAME | same |" in text
    assert "Why it changed" not in text


def test_the_h200s_liger_config_and_loop_changes_are_explained_by_their_facts(
    tmp_path: Path,
) -> None:
    """Recorded on the H200 (examples/liger/tools/h200.sh step e, docs/results-h200.md round 12):
    the first process of each side, Liger 0.8.5 against the copy tools/edited_liger.py made. The
    facts come from the records as the GPU wrote them, not from this test."""
    old, new = (FIXTURES / f"recorded-h200-liger-edit-{s}.json" for s in ("old", "new"))
    rms, ln, swiglu = (
        f"liger-{k}-bf16-T8192-H4096" for k in ("rms_norm-bwd", "layer_norm-bwd", "swiglu-fwd")
    )
    got = {
        e.key: e
        for e in explain_runs(old, new, [(rms, "SLOWER"), (ln, "FASTER"), (swiglu, "SLOWER")])
    }
    # the config change: num_warps 8 -> 2 and what it did to registers and spills
    assert got[rms].lines[0].startswith("`_rms_norm_backward_kernel`: spilled bytes 0 -> 46")
    assert "num_warps 8 -> 2" in got[rms].lines[0]
    # the loop change: the row loop software-pipelined, its loads through shared memory
    assert got[ln].lines[0] == (
        "`_layer_norm_backward_kernel`: shared memory 8 KiB -> 32 KiB, registers/thread 128 -> 103"
    )
    assert any("cp.async 0 -> 18" in line for line in got[ln].lines)
    assert all(len(e.lines) <= 5 for e in got.values())
    # num_warps 8 -> 4 in swiglu's forward: a changed compiled kernel, named by its fact
    assert "num_warps 8 -> 4" in got[swiglu].lines[0]
