"""Issue 40: "The gate's walk from results to report enters each judge module at most twice."

The gate (tilegate.run.gate.gate), and `tilegate perf`'s own path (tilegate.run.loop.Perf: its
inputs checked, the suite, the gate with its suspects and plots, the confirmation's plan), run
on recorded results under `sys.setprofile`, counting how often each judge module is *entered*
by the walk (issue 51: once per judgement, so suspects are decided once):

    Judge module M (a file of tilegate/judge/) is entered when a function of M (a function at
    its top level, `judge`, `load_results`, `beyond_doubt`, `row_order`, ...; or a method of
    one of its classes, `Run.find`, `Comparison.by`, `Pair.crossover`, ...) is called from a
    function outside the judge package (run/, report/, explain/, or library code they
    called: the gate's walk) while no function of M is on the call stack. Not an entry: a
    call made from inside the judge package (the judge's own walk between its modules,
    entered once through `tilegate.judge.gate.judge`); a call back into M while M runs (a sort
    key, a callback); M's module body (an import); a property getter (`RowVerdict.tolerance`,
    `ABCase.fails`: read as a field is, the facts the judge handed over).

So an entry is a transition of the walk into M to have it load, find or decide something: a
renderer that re-decides (a "beyond doubt" per case), looks rows up again (`Run.find` per
value of a pair), an explanation that makes the judge's why line again per case, a table
sorted by the judge's row order at every row: each counts once per call. Load once, decide
once, pass the objects on.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from tilegate.run.gate import gate
from tilegate.run.loop import Perf

ROOT = Path(__file__).resolve().parents[1]
JUDGE = str(ROOT / "tilegate" / "judge") + "/"
FIXTURES = ROOT / "tests" / "fixtures"
RUN_GATE = str(ROOT / "tilegate" / "run" / "gate.py")


def _property(module: str, qualname: str) -> bool:
    """Whether `qualname` of the judge module in file `module` is a property's getter."""
    owner: Any = importlib.import_module(f"tilegate.judge.{Path(module).stem}")
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part, None)
    return owner is not None and isinstance(inspect.getattr_static(owner, name, None), property)


@contextmanager
def entries(per_gate: list[Counter[str]] | None = None) -> Iterator[Counter[str]]:
    """Counts the entries into each judge module (module docstring) while the block runs;
    `per_gate` gets them again, one Counter per call of the gate (a judgement's walk, the
    inputs checked before it counted with the first)."""
    counts: Counter[str] = Counter()

    def on_call(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        module = code.co_filename
        gate_call = per_gate is not None and module == RUN_GATE and code.co_name == "gate"
        if gate_call and (not per_gate or "gate.py:judge" in per_gate[-1]):
            per_gate.append(Counter())
        # a function of M: not a nested function, lambda, comprehension or the module body
        if not module.startswith(JUDGE) or "<" in code.co_qualname:
            return
        caller = frame.f_back
        if caller is None or caller.f_code.co_filename.startswith(JUDGE):
            return  # the judge's own walk
        outer: FrameType | None = caller
        while outer is not None:
            if outer.f_code.co_filename == module:
                return  # M is running: a call back into it
            outer = outer.f_back
        if _property(module, code.co_qualname):
            return
        counts[f"{Path(module).name}:{code.co_qualname}"] += 1
        if per_gate is not None:
            per_gate[-1:] = per_gate[-1:] or [Counter()]
            per_gate[-1][f"{Path(module).name}:{code.co_qualname}"] += 1

    sys.setprofile(on_call)
    try:
        yield counts
    finally:
        sys.setprofile(None)


def _per_module(counts: Counter[str]) -> Counter[str]:
    out: Counter[str] = Counter()
    for where, n in counts.items():
        out[where.split(":")[0]] += n
    return out


@pytest.mark.parametrize(
    "results, baseline",
    [
        # a real H200 run of the quick profile against the committed baseline
        (FIXTURES / "recorded-h200-quick.json", ROOT / "baselines" / "nvidia-h200.json"),
        # an A/B run (SLOWER, beyond doubt, explained cases) with no stored baseline
        (FIXTURES / "synthetic-ab-explain-h200.json", None),
    ],
    ids=["stored", "ab"],
)
def test_the_gate_enters_each_judge_module_at_most_twice(
    tmp_path: Path, results: Path, baseline: Path | None
) -> None:
    with entries() as counts:
        gated = gate(
            results,
            baseline,
            baselines_dir=tmp_path,  # the A/B's: no stored baseline, no noise file
            report_path=tmp_path / "report.md",
        )
    assert gated.error is None and gated.text, gated.error
    assert counts["gate.py:judge"] == 1, counts  # the walk enters the judge once
    modules = _per_module(counts)
    over = {m: n for m, n in modules.items() if n > 2}
    assert over == {}, sorted(counts.items())


def test_the_tracer_counts_a_renderer_that_decides_again(tmp_path: Path) -> None:
    """The counter itself: a function outside the judge calling a judge module's function per
    case enters it per case; the judge calling its own modules does not count."""
    from tilegate.judge import confirm
    from tilegate.judge.abcompare import compare_ab
    from tilegate.store.files import load_results

    run = load_results(FIXTURES / "synthetic-ab-explain-h200.json")
    with entries() as counts:
        cmp = compare_ab(
            run, None
        )  # abcompare.py calls abcase.py, results.py: the judge's own walk
        for case in cmp.cases:
            confirm.beyond_doubt(case)
    assert counts["abcompare.py:compare_ab"] == 1 and counts["results.py:row_order"] == 0
    assert counts["confirm.py:beyond_doubt"] == len(cmp.cases) > 2


@pytest.mark.parametrize(
    "results, baseline, ab",
    [
        (FIXTURES / "recorded-h200-quick.json", ROOT / "baselines" / "nvidia-h200.json", None),
        # A/B: SLOWER and AMBIGUOUS cases, so the loop plans a confirmation and judges again
        (FIXTURES / "synthetic-ab-explain-h200.json", None, "HEAD"),
    ],
    ids=["stored", "ab"],
)
def test_tilegate_perf_enters_each_judge_module_at_most_twice_per_judgement(
    tmp_path: Path, results: Path, baseline: Path | None, ab: str | None
) -> None:
    """`tilegate perf`'s orchestration (tilegate.run.loop) on a recorded results file: the
    suite stands in by copying it (for a confirmation too), the suspects and plots written."""

    def suite(out: Path, profile: str, extra: object) -> int:
        shutil.copy(results, out)
        return 0

    perf = Perf(
        baseline=baseline or tmp_path / "none.json",
        baselines_dir=baseline.parent if baseline else tmp_path,
        out_dir=tmp_path / ".perf",
        suite=suite,
        detect_gpu=lambda: "nvidia-h200",
        log=lambda line: None,
        **({"ab": ab, "ab_sides": ("--perf-ab-full",)} if ab else {}),  # type: ignore[arg-type]
    )
    per_gate: list[Counter[str]] = []
    with entries(per_gate) as counts:
        code = perf.run()
    out = tmp_path / ".perf"
    assert code == (1 if ab else 0) and (out / "suspects.txt").exists()
    assert {p.name for p in out.glob("*.png")} >= {"times-fp16-nt.png"}
    assert len(per_gate) == counts["gate.py:judge"] == (2 if ab else 1)  # one judge per gate
    over = [{m: n for m, n in _per_module(c).items() if n > 2} for c in per_gate]
    assert over == [{}] * len(per_gate), per_gate
