"""Peak GPU memory per case (tilegate.judge.memory) and percent of the GPU's peak (tilegate.peaks),
on synthetic results: exact, with a tolerance, a peak that does not repeat, against a stored
baseline; a file without memory still reads; smoke never fails on memory; bad tolerances."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests._factories import key, make_run, write
from tilegate.cli import main
from tilegate.errors import InputError
from tilegate.judge.policy import Tolerances
from tilegate.judge.rebaselining import rebaseline
from tilegate.peaks import lookup, percent
from tilegate.report.pr_comment import DECIDING
from tilegate.run.gate import gate
from tilegate.store.files import judge_files as judge
from tilegate.store.files import load_baseline, load_results, save_baseline

MiB = 2**20
CASE = key("tma_xtile_persistent", K=512)


def _results(
    tmp_path: Path,
    name: str = "results.json",
    peaks: dict[str, int] | None = None,
    *,
    tolerance: Any = "0",
    varies: tuple[str, ...] = (),
    **kw: Any,
) -> Path:
    """A results file whose every row (base rows: `<case>@base`) records a peak of 64 MiB, or
    its own in `peaks`; the rows in `varies` did not repeat their peak."""
    data = make_run(ks=(512,), rounds=20, **kw)
    for b in data["benchmarks"]:
        b["extra_info"]["tilegate"]["memory"] = {
            "peak_bytes": (peaks or {}).get(b["param"], 64 * MiB),
            "held_bytes": 32 * MiB,
            "repeats": b["param"] not in varies,
        }
    data["machine_info"]["tilegate"]["memory_tolerance"] = tolerance
    return write(tmp_path / name, data)


def _verdicts(path: Path, baselines: Path) -> dict[str, str]:
    return {m.key: m.verdict.value for m in judge(path, baselines_dir=baselines).memory}


@pytest.mark.parametrize(
    ("tolerance", "head", "verdict"),
    [
        ("0", 64 * MiB, "SAME"),
        ("0", 64 * MiB + 1, "MORE MEMORY"),
        ("0", 64 * MiB - 512, "LESS MEMORY"),
        ("4 MiB", 68 * MiB, "SAME"),
        ("4 MiB", 68 * MiB + 1, "MORE MEMORY"),
        ("1 %", 64 * MiB + 600_000, "SAME"),
        ("1 %", 64 * MiB + 700_000, "MORE MEMORY"),
        ("1 %", 60 * MiB, "LESS MEMORY"),
    ],
)
def test_ab_memory_is_exact_within_the_declared_tolerance(
    tmp_path: Path, tolerance: str, head: int, verdict: str
) -> None:
    path = _results(tmp_path, peaks={CASE: head}, tolerance=tolerance, ab={})
    got = _verdicts(path, tmp_path)
    assert got[CASE] == verdict
    assert {v for k, v in got.items() if k != CASE} == {"SAME"}
    assert judge(path, baselines_dir=tmp_path).code == (1 if verdict == "MORE MEMORY" else 0)


def test_a_peak_that_does_not_repeat_is_reported_and_not_gated(tmp_path: Path) -> None:
    path = _results(tmp_path, peaks={CASE: 256 * MiB}, varies=(f"{CASE}@base",), ab={})
    judged = judge(path, baselines_dir=tmp_path)
    assert {m.key: m.verdict.value for m in judged.memory}[CASE] == "PEAK VARIES"
    assert judged.code == 0 and not judged.outcome.more_memory


def test_more_memory_fails_and_the_report_names_it_where_time_verdicts_are(
    tmp_path: Path,
) -> None:
    path = _results(tmp_path, peaks={CASE: 128 * MiB}, ab={})
    report = tmp_path / "report.md"
    gated = gate(path, None, baselines_dir=tmp_path, report_path=report)
    assert gated.code == 1
    assert gated.headline == "tilegate: FAIL: 1 case with more memory"
    text = report.read_text()
    deciding = text.split(DECIDING)[1].split("\n## ")[0]
    line = next(ln for ln in deciding.splitlines() if f"`{CASE}`" in ln)
    assert "MORE MEMORY than the base" in line and "+64.0 MiB (+100.0%)" in line
    assert "64.0 MiB -> 128.0 MiB" in line
    # every row's memory and its percent of the H200's fp16 peak... where its work names a dtype
    assert "## Memory and % of peak" in text and "MORE MEMORY (+64.0 MiB" in text


def test_verdicts_json_and_explain_carry_the_memory_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _results(tmp_path, peaks={CASE: 128 * MiB}, ab={})
    gate(path, None, baselines_dir=tmp_path, report_path=tmp_path / "report.md")
    record = json.loads((tmp_path / "verdicts.json").read_text())["memory"]
    assert record[CASE] == {"verdict": "MORE_MEMORY", "before": 64 * MiB, "after": 128 * MiB,
                            "tolerance": "0", "against": "base"}  # fmt: skip
    assert {v["verdict"] for k, v in record.items() if k != CASE} == {"SAME"}
    assert main(["explain", str(path)]) == 0
    shown = capsys.readouterr().out
    assert f"{CASE}: MORE MEMORY against the base: peak GPU memory 64.0 MiB -> 128.0 MiB" in shown
    assert "(+64.0 MiB (+100.0%); tolerance 0)" in shown and shown.count("MEMORY against") == 1


def test_smoke_never_fails_on_memory(tmp_path: Path) -> None:
    path = _results(tmp_path, peaks={CASE: 128 * MiB}, ab={}, mode="smoke", profile="smoke")
    judged = judge(path, baselines_dir=tmp_path, report_only=False)
    assert [m.key for m in judged.outcome.more_memory] == [CASE]
    assert judged.code == 0


def test_the_stored_baseline_records_memory_and_judges_against_it(tmp_path: Path) -> None:
    runs = [load_results(_results(tmp_path, f"r{s}.json", seed=s)) for s in (1, 2)]
    out = tmp_path / "nvidia-h200.json"
    save_baseline(out, rebaseline(runs, out=out, old=None, tolerances=Tolerances()).baseline)
    stored = json.loads(out.read_text())["rows"][CASE]["memory"]
    assert stored == {
        "peak_bytes": 64 * MiB,
        "held_bytes": 32 * MiB,
        "repeats": True,
        "tolerance": "0",
    }
    assert _verdicts(_results(tmp_path, "now.json", peaks={CASE: 80 * MiB}), tmp_path)[CASE] == (
        "MORE MEMORY"
    )
    # runs whose peaks differ: the baseline's peak does not repeat, and is not gated
    other = load_results(_results(tmp_path, "r3.json", peaks={CASE: 65 * MiB}, seed=3))
    old = load_baseline(out)
    plan = rebaseline([*runs, other], out=out, old=old, tolerances=Tolerances())
    row = next(ln for ln in plan.lines if ln.startswith(f"| {CASE} "))  # the reviewer's diff
    assert "peak memory 64.0 MiB (tolerance 0) -> 65.0 MiB (tolerance 0) **LOOSENED**" in row
    assert sum("peak memory" in ln for ln in plan.lines) == 1
    assert "LOOSENED" in plan.warnings[0]
    save_baseline(out, plan.baseline)
    assert _verdicts(_results(tmp_path, "now.json", peaks={CASE: 80 * MiB}), tmp_path)[CASE] == (
        "PEAK VARIES"
    )


def test_a_results_file_without_memory_still_reads(tmp_path: Path) -> None:
    path = write(tmp_path / "old.json", make_run(ks=(512,), rounds=20, ab={}))
    judged = judge(path, baselines_dir=tmp_path)
    assert all(r.memory is None for r in judged.run.rows.values())
    assert judged.memory == () and judged.code == 0
    assert judged.peaks is not None  # an H200 file of before: the table's row


def test_a_bad_tolerance_is_exit_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _results(tmp_path, tolerance="64 megs", ab={})
    assert main(["compare", str(path), "--baselines", str(tmp_path)]) == 2
    assert str(path) in capsys.readouterr().err
    from tilegate.protocol import check, find_benchmarks

    protocol = Path(__file__).resolve().parents[1] / "perf_tests"
    file, bench = find_benchmarks(protocol)[0]
    for bad in ("4 megs", "-1 MiB", "1%%", 4):
        with pytest.raises(InputError, match=f"{file}.*memory_tolerance"):
            check([(file, replace(bench, memory_tolerance=bad))], protocol)


def test_the_peak_table_and_the_percent_of_each_bound() -> None:
    h200 = lookup("nvidia-h200", {})
    assert h200 is not None and h200["hbm_gbs"] == 4800 and h200["fp16_tflops"] == 989.5
    assert lookup("nvidia-h200", {"nvidia-h200": {"hbm_gbs": 4000}})["hbm_gbs"] == 4000  # type: ignore[index]
    assert lookup("some-gpu", {}) is None
    assert lookup("some-gpu", {"some-gpu": {"hbm_gbs": 100.0}}) == {"hbm_gbs": 100.0}

    def row(tflops: float | None = None, gbps: float | None = None, dt: str | None = None) -> Any:
        return SimpleNamespace(tflops=tflops, gbps=gbps, work_dtype=dt)

    assert percent(row(gbps=2400.0), h200) == (0.5, "bandwidth")
    assert percent(row(tflops=494.75, dt="torch.bfloat16"), h200) == (0.5, "bf16 compute")
    assert percent(row(tflops=494.75), h200) is None  # FLOPs of no known precision
    assert percent(row(tflops=100.0, dt="fp4"), h200) is None  # no peak for it
    # both: the roofline, its binding bound the larger fraction
    assert percent(row(tflops=98.95, gbps=2400.0, dt="fp16"), h200) == (
        0.5,
        "roofline, bandwidth-bound",
    )
    assert percent(row(gbps=2400.0), None) is None


@pytest.mark.parametrize(
    "peaks", [{"nvidia-h200": {"hbm": 1}}, {"nvidia-h200": {"hbm_gbs": -1}}, {"x": 4800}, []]
)
def test_a_peaks_table_is_validated_strictly(tmp_path: Path, peaks: Any) -> None:
    from tilegate.config import parse

    pyproject = tmp_path / "pyproject.toml"
    with pytest.raises(InputError, match=f"{pyproject}.*peaks"):
        parse({"source": "pkg", "peaks": peaks}, pyproject)
    got = parse({"source": "pkg", "peaks": {"my-gpu": {"hbm_gbs": 1000}}}, pyproject).peaks
    assert lookup("my-gpu", got) == {"hbm_gbs": 1000.0}


def test_the_history_and_its_page_keep_memory_and_percent_of_peak(tmp_path: Path) -> None:
    from tilegate.history.dashboard import build_data
    from tilegate.store.historydb import open_store

    data = make_run(ks=(512,), rounds=20)
    for b in data["benchmarks"]:
        b["extra_info"]["tilegate"] |= {"work_dtype": "fp16"}
    write(tmp_path / "old.json", data)  # no memory: NULL
    _results(tmp_path, "new.json", when="2026-12-01T10:00:00+00:00", peaks={CASE: 96 * MiB})
    runs = [load_results(tmp_path / n) for n in ("old.json", "new.json")]
    with open_store(tmp_path / "h.duckdb", write=True) as s:
        s.add([(r, {}) for r in runs])
        table = s.case_table()
        page, _ = build_data(s)
    rows = [i for i, c in enumerate(table["case_id"]) if c == CASE]
    assert [table["peak_bytes"][i] for i in rows] == [None, 96 * MiB]
    assert abs(table["pct_of_peak"][rows[0]] - runs[0].rows[CASE].tflops / 989.5) < 1e-9
    case = next(c for c in page["gpus"][0]["cases"] if c["id"] == CASE)
    assert case["mem"] == [None, 96.0] and case["pct"][0] is not None and case["pct"][1] is None


def test_a_gpu_missing_from_the_table_shows_no_percentage_and_how_to_add_it(
    tmp_path: Path,
) -> None:
    from tests._factories import H200_GPU
    from tilegate.report.render import render

    reports = {}
    for slug in ("nvidia-h200", "nvidia-a10g"):
        data = make_run(ks=(512,), rounds=20, gpu=dict(H200_GPU, slug=slug))
        for b in data["benchmarks"]:
            b["extra_info"]["tilegate"]["work_dtype"] = "fp16"
        judged = judge(
            write(tmp_path / f"results-{slug}.json", data), report_only=True, baselines_dir=tmp_path
        )
        reports[slug] = (judged, render(judged))
    known, text = reports["nvidia-h200"]
    assert len(known.percent) == 8 and "% of fp16 compute" in text
    unknown, text = reports["nvidia-a10g"]
    assert unknown.percent == {} and "% of fp16 compute" not in text
    assert (
        'nvidia-a10g is not in tilegate\'s table of GPU peaks; add its row to pyproject.toml: [tool.tilegate] peaks = {"nvidia-a10g" = {'
        in text
    )


def test_a_pull_request_loosening_a_baselines_memory_is_named(tmp_path: Path) -> None:
    from tilegate.store.files import diff_dirs, load_baseline

    runs = [load_results(_results(tmp_path, f"r{s}.json", seed=s)) for s in (1, 2)]
    built = rebaseline(runs, out=tmp_path / "x.json", old=None, tolerances=Tolerances()).baseline
    dirs = {}
    for name, peak, tol in (("base", 64, "0"), ("tight", 60, "0"), ("loose", 64, "1 %")):
        (tmp_path / name).mkdir()
        row = replace(
            built.rows[CASE],
            memory=replace(built.rows[CASE].memory, peak_bytes=peak * MiB, tolerance=tol),
        )  # type: ignore[arg-type]
        save_baseline(
            tmp_path / name / "nvidia-h200.json", replace(built, rows={**built.rows, CASE: row})
        )
        dirs[name] = tmp_path / name
    assert load_baseline(dirs["loose"] / "nvidia-h200.json").rows[CASE].memory.tolerance == "1 %"  # type: ignore[union-attr]
    (tight,) = diff_dirs(dirs["base"], dirs["tight"])
    assert not tight.loosens and "64.0 MiB (tolerance 0) -> 60.0 MiB (tolerance 0)" in tight.what
    (loose,) = diff_dirs(dirs["base"], dirs["loose"])
    assert loose.loosens and f"row {CASE}: peak memory" in loose.what
