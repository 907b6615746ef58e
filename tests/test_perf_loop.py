"""The perf loop (tilegate/run/loop.py) with a stand-in suite: what is measured again, and the exit code.

The stand-in writes recorded-style synthetic results (tests/_factories.py) instead of running
pytest on a GPU, so the loop's decisions are tested here: suspects measured again before they
can fail, a run that cannot be judged is exit 2 with a CANNOT JUDGE report, a crashed case is
exit 2 even when the rest holds, and `rebaseline --measure` stops at the first failed run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests._factories import bench, build_baseline, key, make_run, set_samples, write
from tilegate.run.loop import Perf, measure_runs
from tilegate.store.files import save_baseline


class FakeSuite:
    """Writes a synthetic results file per call; `plan` says, call by call, how it goes."""

    def __init__(self, *plan: dict[str, object]) -> None:
        self.plan = list(plan)
        self.calls: list[tuple[Path, str, list[str]]] = []

    def __call__(self, out: Path, profile: str, extra: Sequence[str]) -> int:
        step = self.plan[min(len(self.calls), len(self.plan) - 1)]
        self.calls.append((out, profile, list(extra)))
        step = dict(step)
        code = int(step.pop("exit", 0))  # type: ignore[call-overload]
        then = step.pop("then", None)  # a function that edits the results before they are written
        if not step.pop("no_results", False):
            data = make_run(**step)  # type: ignore[arg-type]
            if callable(then):
                then(data)
            write(out, data)
        return code


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("baseline")
    path = d / "nvidia-h200.json"
    save_baseline(path, build_baseline(d))
    return path


def perf(tmp_path: Path, baseline: Path | None, suite: FakeSuite, **kw: object) -> tuple[int, Perf]:
    lines: list[str] = []
    p = Perf(
        baseline=baseline,
        out_dir=tmp_path / ".perf",
        plots=False,
        suite=suite,
        detect_gpu=lambda: "nvidia-h200",
        log=lines.append,
        **kw,  # type: ignore[arg-type]
    )
    code = p.run()
    p.lines = lines  # type: ignore[attr-defined]
    return code, p


def test_unchanged_code_passes_without_measuring_again(tmp_path: Path, baseline: Path) -> None:
    suite = FakeSuite({"seed": 50})
    code, _ = perf(tmp_path, baseline, suite)
    assert code == 0
    assert len(suite.calls) == 1
    assert (tmp_path / ".perf" / "report.md").read_text().startswith("# tilegate: PASS")


def test_a_suspect_is_measured_again_and_confirmed(tmp_path: Path, baseline: Path) -> None:
    slow = {key("persistent", K=4096): 1.10}
    suite = FakeSuite({"seed": 51, "slow": slow}, {"seed": 52, "slow": slow, "ks": (4096,)})
    code, _ = perf(tmp_path, baseline, suite)
    assert code == 1
    assert len(suite.calls) == 2
    _, _, extra = suite.calls[1]
    # stored baseline: the suspect's whole group (its ratio to the reference); the GPU is still
    # warm from the first run (the stand-in ends at once): no second soak
    assert extra == [f"--perf-groups-of={tmp_path / '.perf' / 'suspects.txt'}", "--perf-soak=0"]
    report = (tmp_path / ".perf" / "report.md").read_text()
    assert "confirmed by 1 re-measurement" in report and key("persistent", K=4096) in report


def test_a_confirmation_after_the_gpu_cooled_soaks_again(tmp_path: Path, baseline: Path) -> None:
    """--warm-within: a confirmation starting that long after the last suite process ended
    soaks like a first run (the profile's soak: no --perf-soak)."""
    slow = {key("persistent", K=4096): 1.10}
    suite = FakeSuite({"seed": 51, "slow": slow}, {"seed": 52, "slow": slow, "ks": (4096,)})
    ticks = iter([0.0, 45.0])  # the first suite ends at 0 s, the confirmation starts at 45 s
    code, p = perf(tmp_path, baseline, suite, warm_within_s=30.0, clock=lambda: next(ticks, 99.0))
    assert code == 1 and len(suite.calls) == 2
    assert not any(a.startswith("--perf-soak") for a in suite.calls[1][2])
    code, p = perf(tmp_path, baseline, FakeSuite(*suite.plan), warm_within_s=60.0)
    assert any("still warm" in line for line in p.lines)  # type: ignore[attr-defined]


def test_noise_in_the_first_run_is_acquitted_by_the_second(tmp_path: Path, baseline: Path) -> None:
    suite = FakeSuite(
        {"seed": 53, "slow": {key("persistent", K=4096): 1.10}}, {"seed": 54, "ks": (4096,)}
    )
    code, _ = perf(tmp_path, baseline, suite)
    assert code == 0 and len(suite.calls) == 2


def test_no_gpu_is_2_with_a_cannot_judge_report(tmp_path: Path, baseline: Path) -> None:
    def no_gpu() -> str:
        raise RuntimeError("no CUDA GPU visible to torch")

    report = tmp_path / ".perf" / "report.md"
    report.parent.mkdir()
    report.write_text("# tilegate: PASS (a stale report of an earlier run)\n")
    lines: list[str] = []
    suite = FakeSuite({"seed": 55})
    p = Perf(
        baseline=baseline,
        out_dir=tmp_path / ".perf",
        suite=suite,
        detect_gpu=no_gpu,
        log=lines.append,
    )
    assert p.run() == 2
    assert not suite.calls
    assert report.read_text().startswith("# tilegate: CANNOT JUDGE")
    assert any("no CUDA GPU" in line for line in lines)


def test_an_unknown_profile_is_2_naming_the_benchmarks_profiles(
    tmp_path: Path, baseline: Path
) -> None:
    """Checked before anything is measured (or a missing GPU is reported instead)."""
    lines: list[str] = []
    suite = FakeSuite({"seed": 55})
    p = Perf(
        profile="nightly",
        baseline=baseline,
        out_dir=tmp_path / ".perf",
        suite=suite,
        detect_gpu=lambda: "nvidia-h200",
        log=lines.append,
    )
    assert p.run() == 2
    assert not suite.calls
    said = (tmp_path / ".perf" / "report.md").read_text()
    assert "'nightly' is not a profile of benchmark 'matmul'" in said
    assert "quick, default, full, smoke" in said


def test_no_baseline_is_2_unless_report_only(tmp_path: Path) -> None:
    missing = tmp_path / "nvidia-h200.json"
    code, p = perf(tmp_path, None, FakeSuite({"seed": 56}), baselines_dir=tmp_path)
    assert code == 2
    assert any("tilegate rebaseline --measure 3" in line for line in p.lines)  # type: ignore[attr-defined]
    assert not missing.exists()
    code, _ = perf(
        tmp_path, None, FakeSuite({"seed": 56}), baselines_dir=tmp_path, report_only=True
    )
    assert code == 0


def test_a_suite_that_wrote_nothing_is_2(tmp_path: Path, baseline: Path) -> None:
    code, _ = perf(tmp_path, baseline, FakeSuite({"no_results": True, "exit": 3}))
    assert code == 2
    assert (tmp_path / ".perf" / "report.md").read_text().startswith("# tilegate: CANNOT JUDGE")


def test_a_failed_case_makes_a_passing_run_2(tmp_path: Path, baseline: Path) -> None:
    code, p = perf(tmp_path, baseline, FakeSuite({"seed": 57, "exit": 1}))
    assert code == 2
    assert any("cannot be judged" in line for line in p.lines)  # type: ignore[attr-defined]


def test_measure_runs_stops_at_the_first_failure(tmp_path: Path) -> None:
    suite = FakeSuite({"seed": 60}, {"seed": 61, "exit": 1}, {"seed": 62})
    runs, failed = measure_runs(3, "quick", [], tmp_path, suite=suite, log=lambda line: None)
    assert [r.name for r in runs] == ["run-1.json"]
    assert failed is not None and "run 2 failed" in failed
    assert len(suite.calls) == 2


def _ab_perf(
    tmp_path: Path,
    baseline: Path,
    monkeypatch: pytest.MonkeyPatch,
    factor: float | None,
    confirmation: dict[str, object] | None = None,
) -> tuple[int, FakeSuite, str, list[str]]:
    """An A/B `perf` whose tma_xtile_persistent code changed, its K = 512 case `factor` x the
    base's (None: 1 + its tolerance in the H200 noise file): (exit, suite, case, fake args)."""
    from tilegate.store.files import load_noise

    fake = ["--perf-ab-base=/x", "--perf-ab-ref=HEAD^1", f"--perf-ab-sha={'b' * 40}"]
    monkeypatch.setattr("tilegate.run.loop.ab_args", lambda ref, out: list(fake))
    case = key("tma_xtile_persistent", K=512)
    if factor is None:
        noise = load_noise(Path(__file__).resolve().parents[1] / "baselines/nvidia-h200.ab.json")
        factor = 1 + noise.tolerance(case)[0]
    slow = {case: factor}
    code = {"tma_xtile_persistent": "sha256:new"}
    old = {"tma_xtile_persistent": "sha256:old"}
    step = {"seed": 70, "rounds": 200, "code": code, "ab": slow, "base_code": old}
    suite = FakeSuite(step, confirmation or {**step, "seed": 71, "ks": (512,)})
    code_, _ = perf(tmp_path, baseline, suite, ab="HEAD^1")
    return code_, suite, case, fake


def test_an_ab_slowdown_beyond_doubt_is_not_measured_again(
    tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5 % slower over 200 rounds, its tolerance < 1 %: beyond doubt in the first run
    (tilegate.judge.confirm), so no confirmation, and the report says why."""
    code, suite, case, fake = _ab_perf(tmp_path, baseline, monkeypatch, 1.05)
    assert code == 1
    assert len(suite.calls) == 1
    # the A/B noise file's tolerances go to the suite's stopping rule (tilegate.harness.budget)
    tols = f"--perf-ab-tolerances={tmp_path / '.perf' / 'ab-tolerances.json'}"
    assert suite.calls[0][2] == [*fake, tols]
    report = (tmp_path / ".perf" / "report.md").read_text()
    assert "case slower than its base" in report.splitlines()[0]
    assert f"`{case}` | SLOWER than the base, beyond doubt in one run (not re-measured)" in report
    assert "(those beyond doubt in one run were not re-measured)" in report
    assert not (tmp_path / ".perf" / "confirm-1.json").exists()


def test_an_ab_suspect_is_measured_again_alone_with_its_base_partner(
    tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case about its tolerance (AMBIGUOUS): the confirmation is an A/B run against the same
    base that times that case and its base version only, without a second soak."""
    code, suite, case, fake = _ab_perf(tmp_path, baseline, monkeypatch, None)
    assert code in (0, 1)
    assert len(suite.calls) == 2
    tols = f"--perf-ab-tolerances={tmp_path / '.perf' / 'ab-tolerances.json'}"
    cases = tmp_path / ".perf" / "confirm-cases.txt"
    assert suite.calls[1][2] == [*fake, tols, f"--perf-cases-of={cases}", "--perf-soak=0"]
    assert cases.read_text() == f"{case}\n{case}@base\n"


def test_a_confirmation_that_dies_is_2_named(
    tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A confirmation that exits 3 with no results is no acquittal of the AMBIGUOUS case it was
    to decide: exit 2, the report and the log naming the confirmation (it ended PASS, exit 0)."""
    died = {"no_results": True, "exit": 3}
    code, suite, _, _ = _ab_perf(tmp_path, baseline, monkeypatch, None, died)
    assert len(suite.calls) == 2
    assert code == 2
    report = (tmp_path / ".perf" / "report.md").read_text()
    assert report.startswith("# tilegate: CANNOT JUDGE")
    assert "confirmation 1 (confirm-1.json): the suite wrote no results (pytest exit 3" in report


def test_the_host_hold_covers_twice_the_longest_enqueue_and_names_the_timer() -> None:
    """hold_host: the GPU waits for twice the longest host enqueue time of a group's calls
    (clamped), and the timer's name says so (a baseline timed without is not comparable)."""
    from tilegate.harness import timing

    held = timing.CudaTimer(timing.TimerConfig(l2_flush=False, hold_host=True))
    plain = timing.CudaTimer(timing.TimerConfig(l2_flush=False))
    assert (held.name, plain.name) == ("cuda-event+hold", "cuda-event")
    held._enqueue_s = {"a": [1e-4, 3e-4, 2e-4], "b": [5e-5] * 3}
    assert held.hold_seconds(["a", "b"]) == pytest.approx(4e-4)
    assert held.hold_seconds(["b"]) == pytest.approx(1e-4)
    assert held.hold_seconds(["never-warmed"]) == timing.HOLD_MAX_S
    assert held.hold_cycles(["b"]) == int(1e-4 * timing.HOLD_CLOCK_HZ)
    held._enqueue_s = {"c": [1.0]}
    assert held.hold_seconds(["c"]) == timing.HOLD_MAX_S


def test_the_host_hold_is_the_warmed_groups_own() -> None:
    """Slot names recur in every group ("liger", "torch"): the hold comes from the enqueue times
    of the group just warmed, not from every group warmed before it."""
    import time as _time
    from types import SimpleNamespace

    from tilegate.harness import timing

    held = timing.CudaTimer(timing.TimerConfig(l2_flush=False, hold_host=True))
    # the warm-up also brackets each call with events (the GPU time the host time is held to)
    event = SimpleNamespace(record=lambda: None, elapsed_time=lambda end: 1.0)
    held._torch = SimpleNamespace(
        cuda=SimpleNamespace(synchronize=lambda: None, Event=lambda enable_timing: event)
    )
    held.warm({"liger": lambda: _time.sleep(0.004)}, 0.0)  # a heavy group first
    heavy = held.hold_seconds(["liger"])
    held.warm({"liger": lambda: None}, 0.0)  # then a light one, same slot name
    light = held.hold_seconds(["liger"])
    assert heavy >= 0.008 and light == timing.HOLD_MIN_S


def _two_modes(case: str) -> object:
    """An edit of a results file: `case`'s base side 25 % slower in its later rounds, so the
    head / base ratio has two modes (1.0, then 0.8) and no slower one; the recorded ratios that
    name the edited row are dropped (the gate derives them from the samples)."""

    def edit(data: dict[str, object]) -> None:
        base = bench(data, f"{case}@base")["extra_info"]["tilegate"]["samples_s"]
        n = len(base)
        set_samples(
            data, f"{case}@base", [s * (1.25 if i >= n // 2 else 1.0) for i, s in enumerate(base)]
        )
        for param in (case, f"{case}@base"):
            tg = bench(data, param)["extra_info"]["tilegate"]
            for name in ("ratio_to_base", "ratio_to_torch", "ratio_to_reference", "ratio_to_twin"):
                tg.pop(name, None)

    return edit


def test_an_unstable_case_is_measured_again_and_stays_exit_2(
    tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """UNSTABLE with no slower mode is exit 2 that more rounds may change: unlike any other
    exit 2, the loop measures it again (with its base partner), then judges all its runs."""
    fake = ["--perf-ab-base=/x", "--perf-ab-ref=HEAD^1", f"--perf-ab-sha={'b' * 40}"]
    monkeypatch.setattr("tilegate.run.loop.ab_args", lambda ref, out: list(fake))
    case = key("tma_xtile_persistent", K=512)
    changed = {"code": {"tma_xtile_persistent": "sha256:new"}, "ab": {}}
    old = {"base_code": {"tma_xtile_persistent": "sha256:old"}}
    first = {"seed": 80, "rounds": 200, **changed, **old, "then": _two_modes(case)}
    suite = FakeSuite(first, {**first, "seed": 81, "ks": (512,)})
    code, p = perf(tmp_path, baseline, suite, ab="HEAD^1")
    assert len(suite.calls) == 2, p.lines  # type: ignore[attr-defined]
    assert (tmp_path / ".perf" / "confirm-cases.txt").read_text() == f"{case}\n{case}@base\n"
    assert code == 2
    report = (tmp_path / ".perf" / "report.md").read_text()
    assert (
        report.splitlines()[0] == "# tilegate: CANNOT JUDGE: 1 unstable case that cannot be judged"
    )
    assert "confirmation 1 rounds" in report and "UNSTABLE (no mode slower: exit 2)" in report
