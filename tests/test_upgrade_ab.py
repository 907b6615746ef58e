"""The upgrade A/B (tilegate/run/upgrade.py): an A/B of this tree under two environments, on the
engine of every A/B (tilegate.run.loop, each side a process: tilegate.harness.sides); the report
says what differs between the sides (tilegate/report/upgrade.py). The whole run on the CPU is
tests/test_installed.py's and examples/liger's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tilegate.explain.diff import explain_pair, read_sides
from tilegate.report.upgrade import changed, upgrade_section
from tilegate.run import loop, upgrade

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_upgrade_section_names_what_changed_and_where_each_side_came_from(
    tmp_path: Path,
) -> None:
    old = {"torch": "2.11.0", "triton": "3.6.0", "liger_kernel": "0.8.4"}
    new = {**old, "triton": "3.9.0", "liger_kernel": "0.8.5"}
    assert changed(old, new) == [("liger_kernel", "0.8.4", "0.8.5"), ("triton", "3.6.0", "3.9.0")]
    text = upgrade_section(old, new, tmp_path / "new", None, "5 facts changed")
    assert text.startswith("## Upgrade: liger_kernel 0.8.4 -> 0.8.5, Triton 3.6.0 -> 3.9.0\n")
    assert f"`{tmp_path / 'new'}` first" in text and "the runner's own environment" in text
    assert "5 facts changed" in text
    same = upgrade_section(old, old, tmp_path / "new", tmp_path / "old")
    assert "no package version differs between the sides" in same


class _Perf:
    """Stands in for tilegate.run.loop.Perf: records how it was made, writes what a run writes."""

    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        _Perf.made.append(kwargs)

    def run(self) -> int:
        out = self.kwargs["out_dir"]
        out.mkdir(parents=True, exist_ok=True)
        sides = {
            "head": {"software": {"triton": "3.9.0", "torch": "2.11.0"}},
            "base": {"software": {"triton": "3.6.0", "torch": "2.11.0"}},
        }
        (out / "results.json").write_text(
            json.dumps({"machine_info": {"tilegate": {"ab": {"sides": sides}}}, "benchmarks": []})
        )
        (out / "report.md").write_text("# tilegate: FAIL: 1 case slower than its base\n\nbody\n")
        return 1


def test_an_upgrade_is_an_ab_of_this_tree_with_the_new_release_first_on_the_heads_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop, "Perf", _Perf)
    _Perf.made.clear()
    new, old = tmp_path / "triton-3.9.0", tmp_path / "triton-3.6.0"
    for d in (new, old):
        (d / "triton").mkdir(parents=True)
    out = tmp_path / "upgrade-ab"
    code = upgrade.run_upgrade(
        new, old, "quick", ["-x"], out, fingerprint=False, log=lambda line: None
    )
    assert code == 1, "the A/B's verdict is the upgrade's"
    (made,) = _Perf.made
    assert made["ab_sides"][0] == "--perf-ab-base=@head"
    assert f"--perf-side-path=head={new.resolve()}" in made["ab_sides"]
    assert f"--perf-side-path=base={old.resolve()}" in made["ab_sides"]
    assert made["stored"] is False and made["pytest_args"] == ["-x"]
    report = (out / "report.md").read_text()
    lines = report.splitlines()
    assert lines[0] == "# tilegate: FAIL: 1 case slower than its base", "one headline: the A/B's"
    assert lines[2] == "## Upgrade: Triton 3.6.0 -> 3.9.0"
    assert report.rstrip().endswith("body")


def test_a_new_dir_with_nothing_to_import_cannot_judge(tmp_path: Path) -> None:
    out = tmp_path / "upgrade-ab"
    code = upgrade.run_upgrade(tmp_path, None, "quick", [], out, log=lambda line: None)
    assert code == 2
    report = (out / "report.md").read_text()
    assert report.startswith("# tilegate: CANNOT JUDGE") and "--new" in report
    assert "holds no triton/ package" in report


def test_the_h200s_liger_config_and_loop_changes_are_explained_by_their_facts(
    tmp_path: Path,
) -> None:
    """Recorded on the H200 (examples/liger/tools/h200.sh step e, docs/results-h200.md round 12):
    the first process of each side, Liger 0.8.5 against the copy tools/edited_liger.py made. The
    facts come from the records as the GPU wrote them, not from this test."""
    old, new = (read_sides(FIXTURES / f"recorded-h200-liger-edit-{s}.json") for s in ("old", "new"))
    rms, ln, swiglu = (
        f"liger-{k}-bf16-T8192-H4096" for k in ("rms_norm-bwd", "layer_norm-bwd", "swiglu-fwd")
    )
    got = {  # each side's process wrote its rows as the head's
        k: explain_pair(k, v, old.get(("head", k)), new.get(("head", k)))
        for k, v in [(rms, "SLOWER"), (ln, "FASTER"), (swiglu, "SLOWER")]
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
