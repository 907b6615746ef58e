"""Cold compiles side by side (tilegate.harness.precompile), the soak's pace, the NVML slug."""

from __future__ import annotations

import math
import threading
import types
from typing import Any

import pytest

from tests.test_budget import _Bench
from tilegate.harness import precompile


def test_worker_launches_compile_only_and_the_main_thread_is_untouched(monkeypatch) -> None:
    from triton.runtime.jit import JITFunction

    seen: list[tuple[str, bool]] = []

    def recorder(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> str:
        seen.append((threading.current_thread().name, warmup))
        return "kernel"

    monkeypatch.setattr(JITFunction, "run", recorder)
    main = threading.current_thread().name

    def launch() -> None:
        JITFunction.run(object(), grid=(1,), warmup=False)

    got = precompile.first_calls([launch, launch, launch], 2, beside=launch)
    assert got == [None, None, None]
    workers = [w for name, w in seen if name != main]
    assert workers == [True, True, True], "a worker's launch compiles and runs nothing"
    assert [w for name, w in seen if name == main] == [False], "beside() launches for real"
    assert JITFunction.run is recorder, "the patch is undone after the block"
    JITFunction.run(object(), grid=(1,), warmup=False)
    assert seen[-1] == (main, False)


def test_an_autotuned_kernel_and_an_error_are_left_to_the_check(monkeypatch) -> None:
    from triton.runtime.autotuner import Autotuner

    tuned: list[str] = []
    monkeypatch.setattr(Autotuner, "run", lambda self, *a, **k: tuned.append("tuned"))
    calls: list[str] = []

    def autotuned() -> None:
        calls.append("autotuned")
        Autotuner.run(types.SimpleNamespace(fn=types.SimpleNamespace(__name__="softmax")))

    def broken() -> None:
        calls.append("broken")
        raise ValueError("BLOCK_K must divide K")

    def fine() -> None:
        calls.append("fine")

    got = precompile.first_calls([autotuned, broken, fine], 3)
    assert got[0] is not None and "autotuned (softmax)" in got[0]
    assert got[1] == "ValueError: BLOCK_K must divide K"
    assert got[2] is None
    assert sorted(calls) == ["autotuned", "broken", "fine"], "every callable called once"
    assert tuned == [], "no autotuning in a worker: it would share the GPU with the compiles"
    Autotuner.run(object())  # outside the block: autotuning as before
    assert tuned == ["tuned"]


def test_default_threads_is_bounded() -> None:
    assert 1 <= precompile.default_threads() <= 16


# --- the measurer: the side-by-side compile on a GPU only, the soak's pace -------------------


class _Variant:
    reference, injected, twin_of = False, None, None

    def __init__(self, name: str, made: list[str]) -> None:
        self.name, self.made = name, made

    def unsupported_reason(self, capability: object, params: object = None) -> None:
        return None

    def make(self, params: object, inputs: object):
        import torch

        self.made.append(self.name)
        return lambda: torch.ones(4)


class _Timer:
    """Paced at SOAK_PACE during the soak (its chunks), WARM_PACE in a warm-up; records both."""

    SOAK_PACE, WARM_PACE = 1e-2, 1e-3

    def __init__(self, chunk: float) -> None:
        from tilegate.harness.timing import TimerConfig

        self.config = TimerConfig(rounds=10, min_time_s=1.0, warmup_s=0.3)
        self.chunk = chunk
        self.warms: list[float] = []

    def warm(self, fns, seconds, pairs=None) -> float:
        self.warms.append(seconds)
        return self.SOAK_PACE if seconds == self.chunk else self.WARM_PACE

    def time(self, fns, rounds=None, pairs=None, **_):
        return {n: [1e-3] * rounds for n in fns}


def _measurer(soak_s: float, device: str = "cpu", threads: int = 4):
    from tilegate.cases import Case
    from tilegate.harness.measure import GroupMeasurer

    made: list[str] = []
    params = {"K": 1}
    cases = [Case(v, ("K1",), params) for v in ("a", "b")]
    registry = {v: _Variant(v, made) for v in ("a", "b")}
    timer = _Timer(chunk=min(0.5, soak_s) if soak_s else -1.0)
    m = GroupMeasurer(
        benchmark=_Bench(),
        registry=registry,
        timer=timer,
        device=device,
        capability=None,
        groups={"K1": cases},
        passes=2,
        warmup_first_s=2.0,
        soak_s=soak_s,
        compile_threads=threads,
    )
    return m, cases, timer, made


def test_after_a_soak_the_first_sweep_takes_the_soaks_pace_and_no_long_warm_up() -> None:
    m, cases, timer, _ = _measurer(soak_s=0.01)
    res = m.result(cases[0])
    assert 2.0 not in timer.warms, "the first group's 2 s warm-up is skipped after a soak"
    rounds = math.ceil(timer.config.rounds_for(timer.SOAK_PACE) / 2)
    assert len(res.samples_s) == 2 * rounds, "the rounds are sized by the soak's pace"


def test_without_a_soak_the_first_group_warms_up_and_paces_itself() -> None:
    m, cases, timer, _ = _measurer(soak_s=0.0)
    res = m.result(cases[0])
    assert timer.warms[0] == 2.0
    assert len(res.samples_s) == 2 * math.ceil(timer.config.rounds_for(timer.WARM_PACE) / 2)


def test_the_side_by_side_compile_is_for_a_gpu_only() -> None:
    m, cases, _, made = _measurer(soak_s=0.0, device="cpu", threads=4)
    assert m.sides["head"].compile_threads == 0, (
        "the interpreter compiles nothing (and is not thread-safe)"
    )
    m.result(cases[0])
    assert sorted(made) == ["a", "b"], "each variant made once: by its check"


# --- the slug from NVML ---------------------------------------------------------------------


class _NVMLError(Exception):
    pass


def _fake_nvml(names: list[str], mig: tuple[int, ...] = ()) -> types.SimpleNamespace:
    def mig_mode(handle: int):
        return (1 if handle in mig else 0, 0)

    return types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: len(names),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetMigMode=mig_mode,
        nvmlDeviceGetName=lambda h: names[h],
        NVMLError_NotSupported=_NVMLError,
    )


@pytest.mark.parametrize(
    ("names", "mig", "visible", "want"),
    [
        (["NVIDIA H200"] * 8, (), None, "nvidia-h200"),
        (["NVIDIA H200", "NVIDIA H200"], (), "1", "nvidia-h200"),
        (["NVIDIA H200", "NVIDIA H100 80GB HBM3"], (), None, None),  # CUDA's order may differ
        (["NVIDIA H200"], (0,), None, None),  # MIG: torch names the instance
        (["NVIDIA H200"], (), "", None),  # no GPU visible: torch says so
        (["NVIDIA H200"], (), "-1", None),
        ([], (), None, None),
    ],
)
def test_nvml_slug_only_where_it_is_certain(monkeypatch, names, mig, visible, want) -> None:
    from tilegate.harness import device

    monkeypatch.setattr(device, "nvml", lambda: _fake_nvml(names, mig))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert device.nvml_slug() == want


def test_gpu_slug_falls_back_to_torch_where_nvml_cannot_say(monkeypatch) -> None:
    from tilegate.harness import device
    from tilegate.run import loop

    monkeypatch.setattr(device, "nvml", lambda: None)
    monkeypatch.setattr(
        device, "gpu_info", lambda: (_ for _ in ()).throw(RuntimeError("no CUDA GPU visible"))
    )
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        loop.gpu_slug()
    monkeypatch.setattr(device, "nvml", lambda: _fake_nvml(["NVIDIA H200"]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert loop.gpu_slug() == "nvidia-h200"
