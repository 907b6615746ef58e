"""The perf suite's parts that run without a GPU: cases, timer helpers, GPU state, measurement."""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path

import pytest
import torch

from kernels import VARIANTS
from perf_tests.test_matmul import BENCHMARK
from tilegate.cases import Case, build_cases, select_variants
from tilegate.harness.device import slugify
from tilegate.harness.gpu_state import Nvml, StateLog, StateSample, StateSampler, window_stats
from tilegate.harness.measure import GroupMeasurer
from tilegate.harness.timing import HostTimer, TimerConfig, round_order
from tilegate.judge.stats import paired_ratio

ORDER = tuple(VARIANTS)  # the registry's order is the run order
PROFILES = BENCHMARK.profile_map


def test_case_ids_are_the_join_key_format() -> None:
    cases = build_cases(PROFILES["quick"], ("xtile_persistent",), axes={"K": (128,)})
    assert [c.id for c in cases] == ["xtile_persistent-fp16-nt-K128"]


def test_profiles_cover_what_the_issue_asks() -> None:
    quick = build_cases(PROFILES["quick"], ORDER)
    assert {(c.params["dtype"], c.params["layout"], c.params["K"]) for c in quick} == {
        ("fp16", "nt", k) for k in (128, 512, 4096)
    }
    default = build_cases(PROFILES["default"], ORDER)
    assert {c.params["layout"] for c in default} == {"nt", "nn"}
    assert sorted({c.params["K"] for c in default}) == [128, 256, 512, 1024, 2048, 4096]
    assert {c.params["dtype"] for c in build_cases(PROFILES["full"], ORDER)} == {"fp16", "bf16"}
    assert all(c.params["M"] == c.params["N"] == 16384 for c in default)
    # GPU profiles soak the GPU before timing and spread each group over several sweeps; the
    # CPU smoke profile measures nothing and must stay fast.
    for name in ("quick", "default", "full"):
        assert PROFILES[name].soak_s > 0 and PROFILES[name].passes >= 3
    assert PROFILES["smoke"].soak_s == 0
    assert len({c.id for c in default}) == len(default) == 2 * 6 * len(ORDER)


def test_cases_are_grouped_and_torch_leads_each_group() -> None:
    cases = build_cases(PROFILES["default"], ORDER)
    seen: list[str] = []
    for c in cases:
        if not seen or seen[-1] != c.group:
            assert c.group not in seen, f"group {c.group} is split"
            seen.append(c.group)
            assert c.variant == "torch"


def test_only_keeps_whole_groups_of_suspects_and_rejects_unknown_ids() -> None:
    profile = PROFILES["quick"]
    cases = build_cases(profile, ORDER, only=frozenset({"xtile_persistent-fp16-nt-K512"}))
    assert {c.group for c in cases} == {"fp16-nt-K512"}
    assert len(cases) == len(ORDER)  # the twin and torch are re-measured too
    with pytest.raises(ValueError, match="not in profile"):
        build_cases(profile, ORDER, only=frozenset({"xtile_persistent-fp16-nn-K512"}))
    with pytest.raises(ValueError, match="unknown variant"):
        select_variants(ORDER, ("nope",))


def test_round_order_rotates_every_variant_through_every_position() -> None:
    names = ["a", "b", "c"]
    firsts = [round_order(names, r)[0] for r in range(3)]
    assert sorted(firsts) == names
    assert all(sorted(round_order(names, r)) == names for r in range(7))


def test_paired_ratio_is_the_median_of_per_round_ratios() -> None:
    # A drift that hits both rows alike leaves the paired ratio exact.
    ref = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert paired_ratio([0.5 * r for r in ref], ref) == pytest.approx(0.5)
    # one behaviour for the whole project: rows not timed in the same rounds have no paired ratio
    with pytest.raises(ValueError, match="empty"):
        paired_ratio([1.0], [])
    with pytest.raises(ValueError, match="same rounds"):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-positive"):
        paired_ratio([1.0, 2.0], [1.0, 0.0])


def test_timer_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="rounds"):
        TimerConfig(rounds=0)
    with pytest.raises(ValueError, match="warmup"):
        TimerConfig(warmup_s=-1)


def test_slugify_names_baseline_files() -> None:
    assert slugify("NVIDIA H200") == "nvidia-h200"
    assert slugify("NVIDIA GeForce RTX 5090") == "nvidia-geforce-rtx-5090"
    with pytest.raises(ValueError):
        slugify("***")


def test_state_log_reports_slowdown_and_power_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    states = iter(
        [
            _sample(0.0, 1980, temp=40),
            _sample(0.1, 1500, temp=85, capped=True, slowdown=("hw_thermal_slowdown",)),
        ]
    )
    monkeypatch.setattr("tilegate.harness.gpu_state.read_state", lambda index=0: next(states))
    log = StateLog()
    log.sample("start")
    log.sample("fp16-nt-K128")
    summary = log.summary()
    assert summary["throttled"] is True
    assert summary["sm_clock_mhz_range"] == [1500, 1980]
    assert any("hw_thermal_slowdown" in n and "fp16-nt-K128" in n for n in summary["notes"])
    assert any("power cap" in n for n in summary["notes"])


def test_state_log_without_nvml_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tilegate.harness.gpu_state.read_state", lambda index=0: None)
    log = StateLog()
    log.sample("start")
    summary = log.summary()
    assert summary["throttled"] is None
    assert any("pynvml" in n for n in summary["notes"])
    assert summary["start"] == {"available": False, "note": summary["notes"][-1], "at": "start"}


class _Torch:
    """A registry entry that computes in torch on the CPU (the reference)."""

    name = "torch"
    twin_of = None
    reference = True

    def __init__(self, scale: float = 1.0, write: bool = True, raises: bool = False) -> None:
        self.scale, self.write, self.raises = scale, write, raises

    def unsupported_reason(self, capability: object, params: object = None) -> str | None:
        return None

    def matmul(
        self, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        if self.raises:
            raise RuntimeError("kernel exploded")
        c = out if out is not None else torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        if self.write:
            c.copy_(torch.matmul(a.float() * self.scale, b.float()).to(a.dtype))
        return c

    def make(self, params: dict[str, object], inputs: dict[str, torch.Tensor]) -> object:
        """The timed call, as kernels.registry makes it: a NaN-poisoned output buffer."""
        a, b = inputs["a"], inputs["b"]
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=a.dtype)
        return lambda: self.matmul(a, b, out)


class _Twin(_Torch):
    twin_of = "torch"
    reference = False


class _Unsupported(_Torch):
    def unsupported_reason(self, capability: object, params: object = None) -> str | None:
        return "needs TMA"


def _measurer(
    registry: dict[str, object], passes: int = 1, rounds: int = 3, **kwargs: object
) -> tuple[GroupMeasurer, list[Case]]:
    """A CPU measurer of the registry's fp16 nt K = 24 group, and that group's cases."""
    cases = [
        c
        for c in build_cases(PROFILES["smoke"], tuple(registry), axes={"K": (24,)})
        if c.params["layout"] == "nt"
    ]
    m = GroupMeasurer(
        benchmark=BENCHMARK,
        registry=registry,
        timer=kwargs.pop("timer", HostTimer(TimerConfig(rounds=rounds))),
        device="cpu",
        capability=None,
        groups={cases[0].group: cases},
        passes=passes,
        warmup_first_s=0.0,
        **kwargs,  # type: ignore[arg-type]
    )
    return m, cases


def _measure(registry: dict[str, object], passes: int = 1, **kwargs: object) -> dict[str, object]:
    m, cases = _measurer(registry, passes, **kwargs)
    return {c.variant: m.result(c) for c in cases}


def test_measurer_checks_correctness_before_timing_and_pairs_ratios() -> None:
    names = ("torch", "tiled", "grouped", "persistent", "xtile_persistent")
    registry: dict[str, object] = {
        "torch": _Torch(),
        "tiled": _Torch(scale=1.5),  # wrong numbers, fully written
        "grouped": _Torch(write=False),  # leaves the poisoned output untouched
        "persistent": _Torch(raises=True),  # raises
        "xtile_persistent": _Twin(),  # right, with a twin
    }
    assert set(registry) == set(names)
    res = _measure(registry)
    assert res["torch"].correct is True and res["torch"].failure is None
    assert len(res["torch"].samples_s) == 3
    assert res["tiled"].correct is False and "wrong result" in res["tiled"].failure
    assert res["tiled"].samples_s, "a wrong kernel is still timed and written, marked incorrect"
    assert "never written" in res["grouped"].failure and not res["grouped"].samples_s
    assert "kernel exploded" in res["persistent"].failure
    extra = res["xtile_persistent"].extra
    assert extra["twin"] == "torch" and extra["ratio_to_twin"] is not None
    assert extra["key"] == "xtile_persistent-fp16-nt-K24"
    assert math.isclose(extra["median_s"], sorted(extra["samples_s"])[1])


def test_measurer_skips_what_the_device_cannot_run() -> None:
    res = _measure({"torch": _Torch(), "tma_swizzle_persistent": _Unsupported()})
    assert (
        res["tma_swizzle_persistent"].skip_reason
        == "tma_swizzle_persistent cannot run here: needs TMA"
    )
    assert res["torch"].correct is True


def test_rounds_fill_the_minimum_time_within_bounds() -> None:
    config = TimerConfig(rounds=40, min_time_s=3.0, max_rounds=2000)
    assert config.rounds_for(0.002) == 1500  # fast groups get many rounds
    assert config.rounds_for(0.0005) == 2000  # ... up to the cap
    assert config.rounds_for(0.5) == 40  # slow groups keep the minimum count
    assert TimerConfig(rounds=7).rounds_for(0.001) == 7  # no minimum time: a fixed count
    with pytest.raises(ValueError, match="max_rounds"):
        TimerConfig(rounds=50, max_rounds=10)


def test_passes_spread_a_groups_rounds_and_keep_them_paired() -> None:
    res = _measure({"torch": _Torch(), "xtile_persistent": _Twin()}, passes=2)
    # 3 rounds in 2 passes: ceil(3 / 2) = 2 per pass, the same count for every variant
    assert len(res["torch"].samples_s) == len(res["xtile_persistent"].samples_s) == 4
    assert res["xtile_persistent"].extra["ratio_to_twin"] is not None


def test_measurer_refuses_a_case_of_another_group() -> None:
    cases = build_cases(PROFILES["smoke"], ("torch",), axes={"K": (24,)})
    m = GroupMeasurer(
        benchmark=BENCHMARK,
        registry={"torch": _Torch()},
        timer=HostTimer(TimerConfig(rounds=1)),
        device="cpu",
        capability=None,
        groups={cases[0].group: cases[:1]},
        warmup_first_s=0.0,
    )
    with pytest.raises(KeyError, match="not in the groups"):
        m.result(cases[1])
    with pytest.raises(ValueError, match="passes"):
        GroupMeasurer(
            benchmark=BENCHMARK,
            registry={},
            timer=None,
            device="cpu",
            capability=None,
            groups={},
            passes=0,
        )


def _sample(
    t: float,
    clock: int,
    power: float = 600.0,
    temp: int = 50,
    capped: bool = False,
    slowdown: tuple[str, ...] = (),
) -> StateSample:
    return StateSample(t, clock, power, temp, capped, slowdown)


def test_window_stats_summarise_clock_power_and_caps() -> None:
    stats = window_stats(
        [_sample(0.0, 1980, 500.0, 40), _sample(0.1, 1500, 700.0, 60, True, ("hw_slowdown",))]
    )
    assert stats["samples"] == 2
    assert stats["sm_clock_mhz"] == 1740.0
    assert stats["sm_clock_mhz_range"] == [1500, 1980]
    assert stats["power_w"] == 600.0 and stats["power_w_max"] == 700.0
    assert stats["temperature_c_range"] == [40, 60]
    assert stats["power_capped_frac"] == 0.5
    assert stats["slowdown_reasons"] == ["hw_slowdown"]
    assert window_stats([]) == {"samples": 0}


def test_state_sampler_reads_in_the_background_and_windows_by_time() -> None:
    clocks = itertools.count(1000)
    sampler = StateSampler(
        interval_s=0.001, reader=lambda: _sample(time.perf_counter(), next(clocks))
    ).start()
    t0 = time.perf_counter()
    deadline = t0 + 5.0
    while len(sampler.samples) < 20 and time.perf_counter() < deadline:
        time.sleep(0.005)
    t1 = time.perf_counter()
    sampler.stop()
    n = len(sampler.samples)
    assert n >= 20
    time.sleep(0.02)
    assert len(sampler.samples) == n, "stop() ends sampling"
    inside = sampler.window([(t0, t1)])
    assert 0 < inside["samples"] <= n
    assert sampler.window([(t1 + 10, t1 + 20)]) == {"samples": 0}
    summary = sampler.summary()
    assert summary["samples"] == n and summary["interval_s"] == 0.001
    assert summary["sm_clock_mhz_range"][0] == 1000  # the clocks it read, in order


def test_state_sampler_survives_a_failing_read_and_says_why() -> None:
    def broken() -> StateSample:
        raise RuntimeError("NVML went away")

    sampler = StateSampler(interval_s=0.001, reader=broken).start()
    deadline = time.perf_counter() + 5.0
    while sampler.error is None and time.perf_counter() < deadline:
        time.sleep(0.005)
    sampler.stop()
    assert "NVML went away" in (sampler.error or "")
    assert sampler.summary()["error"] == sampler.error
    with pytest.raises(ValueError, match="interval_s"):
        StateSampler(interval_s=0)


def test_state_sampler_without_nvml_records_nothing_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tilegate.harness.gpu_state.nvml", lambda: None)
    sampler = StateSampler().start()
    sampler.stop()
    assert not sampler.available and sampler.samples == []
    assert "pynvml" in (sampler.error or "")


class _CountingTimer(HostTimer):
    """A host timer that records how long it was asked to warm up, in total."""

    def __init__(self) -> None:
        super().__init__(TimerConfig(rounds=2))
        self.warm_seconds = 0.0

    def warm(self, fns, seconds, pairs=None):  # type: ignore[no-untyped-def]
        self.warm_seconds += seconds
        return super().warm(fns, seconds, pairs)


def test_soak_runs_the_groups_kernels_untimed_before_the_first_pass() -> None:
    progress: list[str] = []
    timer = _CountingTimer()
    res = _measure(
        {"torch": _Torch(), "xtile_persistent": _Twin()},
        timer=timer,
        soak_s=0.2,
        on_progress=progress.append,
    )
    assert timer.warm_seconds >= 0.2, "the soak asked for at least soak_s of warm-up"
    assert any(line.startswith("soaking the GPU for 0.2 s") for line in progress)
    assert any(line.startswith("soaked ") for line in progress)
    assert len(res["torch"].samples_s) == 2, "the soak adds no samples"
    with pytest.raises(ValueError, match="soak_s"):
        _measure({"torch": _Torch()}, soak_s=-1.0)


class _FakeSampler:
    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.samples: list[StateSample] = []

    def window(self, spans):  # type: ignore[no-untyped-def]
        self.spans = list(spans)
        return {"samples": len(spans), "sm_clock_mhz": 1234.0}


def test_each_case_carries_its_pass_medians_and_the_gpu_state_it_was_timed_in() -> None:
    sampler = _FakeSampler()
    res = _measure({"torch": _Torch(), "xtile_persistent": _Twin()}, passes=3, sampler=sampler)
    for r in res.values():
        extra = r.extra
        assert len(extra["pass_medians_s"]) == 3
        assert all(p > 0 for p in extra["pass_medians_s"])
        assert extra["gpu_state"] == {"samples": 3, "sm_clock_mhz": 1234.0}
    assert len(sampler.spans) == 3 and all(a <= b for a, b in sampler.spans)
    assert sampler.spans[0][1] <= sampler.spans[1][0], "one timed window per pass, in order"


def test_state_log_summary_folds_in_what_the_sampler_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    calm = _sample(0.0, 1980, temp=40)
    monkeypatch.setattr("tilegate.harness.gpu_state.read_state", lambda index=0: calm)
    log = StateLog()
    log.sample("start")
    series = window_stats(
        [
            _sample(0.0, 1900, 690.0, 60, True),
            _sample(0.05, 1500, 700.0, 62, True, ("hw_slowdown",)),
        ]
    )
    series["interval_s"] = 0.05
    summary = log.summary(while_running=series)
    assert summary["while_running"] is series
    assert summary["throttled"] is True, "a slowdown seen only while running still counts"
    assert summary["slowdown_reasons"] == ["hw_slowdown"]
    assert any(
        n.startswith("every 50 ms while running: SM clock mean 1700 MHz (1500-1900)")
        and "power-capped in 100% of 2 samples" in n
        for n in summary["notes"]
    )
    quiet = StateLog()
    quiet.sample("start")
    assert quiet.summary(while_running={"samples": 0, "interval_s": 0.05})["throttled"] is False


def test_nvml_reader_decodes_clock_event_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeNvml:
        NVML_CLOCK_SM = 0
        NVML_TEMPERATURE_GPU = 0

        @staticmethod
        def nvmlDeviceGetCurrentClocksEventReasons(handle: object) -> int:
            return 0x4 | 0x40  # SW power cap + HW thermal slowdown

        @staticmethod
        def nvmlDeviceGetClockInfo(handle: object, which: int) -> int:
            return 1755

        @staticmethod
        def nvmlDeviceGetPowerUsage(handle: object) -> int:
            return 699_500  # milliwatts

        @staticmethod
        def nvmlDeviceGetTemperature(handle: object, which: int) -> int:
            return 61

    monkeypatch.setattr("tilegate.harness.gpu_state.nvml", lambda: FakeNvml)
    monkeypatch.setattr(Nvml, "_handle", lambda self, index: "h")
    reader = Nvml.open(0)
    assert reader is not None
    s = reader.read()
    assert (s.sm_clock_mhz, s.power_w, s.temperature_c) == (1755, 699.5, 61)
    assert s.power_capped is True
    assert s.slowdown == ("hw_thermal_slowdown",)


class _TritonWarns(_Torch):
    """A kernel whose compile makes Triton warn (as Triton 3.9 does about TRITON_DEFAULT_FP_FUSION)."""

    def matmul(self, a, b, out=None):  # type: ignore[no-untyped-def]
        import warnings

        import triton

        knobs = str(Path(triton.__file__).parent / "knobs.py")
        warnings.warn_explicit("TRITON_DEFAULT_FP_FUSION is unset", UserWarning, knobs, 504)
        return super().matmul(a, b, out)


class _OwnWarns(_Torch):
    def matmul(self, a, b, out=None):  # type: ignore[no-untyped-def]
        import warnings

        warnings.warn("our own code warns", UserWarning, stacklevel=1)
        return super().matmul(a, b, out)


def test_a_triton_warning_is_recorded_per_case_and_run_not_raised() -> None:
    registry: dict[str, object] = {"torch": _Torch(), "tiled": _TritonWarns()}
    m, cases = _measurer(registry, rounds=2)
    res = {c.variant: m.result(c) for c in cases}
    assert res["tiled"].correct is True and res["tiled"].failure is None
    (w,) = res["tiled"].extra["warnings"]
    assert (
        w["message"] == "TRITON_DEFAULT_FP_FUSION is unset" and w["source"] == "triton/knobs.py:504"
    )
    assert "warnings" not in res["torch"].extra
    seen = m.warnings_seen()
    assert seen[0]["first_case"] == "tiled-fp16-nt-K24" and seen[0]["count"] >= 1


def test_our_own_warning_still_fails_its_case() -> None:
    """Under pytest's filterwarnings = error our own warning is an error: the case fails with it."""
    m, cases = _measurer({"torch": _OwnWarns()}, rounds=1)
    res = m.result(cases[0])
    assert res.failure is not None and "UserWarning: our own code warns" in res.failure
    assert not res.samples_s and not m.warnings_seen()
