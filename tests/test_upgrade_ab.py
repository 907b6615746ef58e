"""The GPU upgrade A/B of environments (tilegate/run/upgrade.py) on synthetic runs of two Tritons."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests._factories import key, load_run, make_run, write
from tilegate.errors import InputError
from tilegate.run.upgrade import Change, judge_upgrade, measure_sides, render

OLD = {"torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3"}
NEW = {**OLD, "triton": "3.9.0"}


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
    assert cmp.exit_code == 1
    text = render(cmp)
    assert text.startswith("# tilegate upgrade A/B: FAIL: Triton 3.6.0 -> 3.9.0: persistent slower")


def test_a_whole_machine_shift_is_no_kernel_change(tmp_path: Path) -> None:
    """Every row, cuBLAS included, 4 % slower under the new side: the ratios hold."""
    old = [load_run(tmp_path, f"o-{i}.json", seed=210 + i, software=OLD) for i in range(3)]
    new = [
        load_run(tmp_path, f"n-{i}.json", seed=310 + i, software=NEW, machine_factor=1.04)
        for i in range(3)
    ]
    cmp = judge_upgrade(old, new)
    assert cmp.exit_code == 0
    assert Change.SLOWER not in cmp.kernels().values()


def test_the_same_triton_on_both_sides_is_said_and_passes(tmp_path: Path) -> None:
    old = [load_run(tmp_path, f"a-{i}.json", seed=220 + i, software=OLD) for i in range(3)]
    new = [load_run(tmp_path, f"b-{i}.json", seed=320 + i, software=OLD) for i in range(3)]
    cmp = judge_upgrade(old, new)
    assert cmp.exit_code == 0 and any("A/A" in n for n in cmp.notes)


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
