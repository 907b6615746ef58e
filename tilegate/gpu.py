"""Device facts (name, slug, SMs, versions) and device state (clocks, temperature, throttling).

State comes from NVML (nvidia-ml-py) when it is importable; without it the state says so instead
of guessing. Nothing here changes the GPU: clocks, power limits and modes are only read.
"""

from __future__ import annotations

import platform
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# NVML clock-event reasons that mean the GPU ran slower than it would have. The SW power cap is
# listed separately: a compute-bound GEMM on an H200 routinely runs at its power limit.
_SLOWDOWN_REASONS = {
    0x0000000000000008: "hw_slowdown",
    0x0000000000000020: "sw_thermal_slowdown",
    0x0000000000000040: "hw_thermal_slowdown",
    0x0000000000000080: "hw_power_brake_slowdown",
}
_OTHER_REASONS = {
    0x0000000000000001: "gpu_idle",
    0x0000000000000002: "applications_clocks_setting",
    0x0000000000000004: "sw_power_cap",
    0x0000000000000100: "display_clock_setting",
}


def slugify(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': the baseline file name for a GPU model."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise ValueError(f"GPU name {name!r} gives an empty slug")
    return slug


@dataclass(frozen=True)
class GpuInfo:
    name: str
    slug: str
    sm_count: int
    capability: tuple[int, int]
    memory_gib: float
    l2_bytes: int
    driver: str
    cuda: str

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["capability"] = list(self.capability)
        return data


def software_versions() -> dict[str, str]:
    import torch
    import triton

    return {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
    }


def gpu_info(device_index: int = 0) -> GpuInfo:
    """Facts about the CUDA device; raises RuntimeError when there is none."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            f"no CUDA GPU visible to torch {torch.__version__} (torch.version.cuda={torch.version.cuda})"
        )
    props = torch.cuda.get_device_properties(device_index)
    return GpuInfo(
        name=props.name,
        slug=slugify(props.name),
        sm_count=props.multi_processor_count,
        capability=(props.major, props.minor),
        memory_gib=round(props.total_memory / 2**30, 1),
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
        driver=_nvml_driver() or "unknown",
        cuda=str(torch.version.cuda),
    )


def _nvml() -> Any | None:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def _nvml_driver() -> str | None:
    nv = _nvml()
    if nv is None:
        return None
    version = nv.nvmlSystemGetDriverVersion()
    return version.decode() if isinstance(version, bytes) else str(version)


def _nvml_handle(nv: Any, device_index: int) -> Any:
    import torch

    uuid = getattr(torch.cuda.get_device_properties(device_index), "uuid", None)
    if uuid is not None:
        try:
            return nv.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        except Exception:
            pass
    return nv.nvmlDeviceGetHandleByIndex(device_index)


def _reasons_getter(nv: Any) -> Callable[[Any], int]:
    """NVML's clock-event reasons query (named "throttle reasons" before driver 530)."""
    return (
        getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    )


def _reasons(mask: int, names: dict[int, str]) -> list[str]:
    """The names of the reason bits set in `mask`."""
    return [n for bit, n in names.items() if mask & bit]


def read_state(device_index: int = 0) -> dict[str, Any]:
    """Clocks, temperature, power and clock-event (throttle) reasons, as read now."""
    nv = _nvml()
    if nv is None:
        return {
            "available": False,
            "note": "nvidia-ml-py (pynvml) not importable: GPU state not recorded",
        }
    handle = _nvml_handle(nv, device_index)
    state: dict[str, Any] = {"available": True}
    readers = {
        "sm_clock_mhz": lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM),
        "max_sm_clock_mhz": lambda: nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_SM),
        "temperature_c": lambda: nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU),
        "power_w": lambda: round(nv.nvmlDeviceGetPowerUsage(handle) / 1000.0, 1),
        "power_limit_w": lambda: round(nv.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0, 1),
    }
    for key, read in readers.items():
        try:
            state[key] = read()
        except Exception as err:  # one unsupported query must not lose the others
            state[key] = None
            state.setdefault("errors", []).append(f"{key}: {err}")
    try:
        mask = int(_reasons_getter(nv)(handle))
        state["slowdown_reasons"] = _reasons(mask, _SLOWDOWN_REASONS)
        state["other_reasons"] = _reasons(mask, _OTHER_REASONS)
    except Exception as err:
        state["slowdown_reasons"] = None
        state.setdefault("errors", []).append(f"clock event reasons: {err}")
    return state


class StateLog:
    """Samples of the device state over a run: at start, after each measured group, at end."""

    def __init__(self, device_index: int = 0) -> None:
        self.device_index = device_index
        self.samples: list[dict[str, Any]] = []

    def sample(self, label: str) -> dict[str, Any]:
        state = read_state(self.device_index)
        state["at"] = label
        self.samples.append(state)
        return state

    def summary(self, while_running: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start and end state, whether the GPU slowed down at any sample, and notes for the report.

        `while_running` is a StateSampler summary: it is kept under that key, adds a note on the
        clock, power and power cap seen while kernels ran, and a slowdown it saw counts too.
        """
        if not self.samples:
            return {
                "start": None,
                "end": None,
                "throttled": None,
                "notes": ["GPU state was not sampled"],
            }
        slowed = sorted({r for s in self.samples for r in (s.get("slowdown_reasons") or [])})
        power_capped = sum("sw_power_cap" in (s.get("other_reasons") or []) for s in self.samples)
        notes = []
        if slowed:
            where = [s["at"] for s in self.samples if s.get("slowdown_reasons")]
            notes.append(f"GPU slowed down ({', '.join(slowed)}) at: {', '.join(where)}")
        if power_capped:
            notes.append(f"SW power cap active in {power_capped} of {len(self.samples)} samples")
        clocks = [s["sm_clock_mhz"] for s in self.samples if s.get("sm_clock_mhz")]
        temps = [s["temperature_c"] for s in self.samples if s.get("temperature_c") is not None]
        if clocks:
            notes.append(f"SM clock {min(clocks)}-{max(clocks)} MHz over {len(clocks)} samples")
        if temps:
            notes.append(f"temperature {min(temps)}-{max(temps)} C")
        if not self.samples[0].get("available", False):
            notes.append(self.samples[0].get("note", "GPU state unavailable"))
        out = {
            "start": self.samples[0],
            "end": self.samples[-1],
            "throttled": bool(slowed) if self.samples[0].get("available", False) else None,
            "slowdown_reasons": slowed,
            "sm_clock_mhz_range": [min(clocks), max(clocks)] if clocks else None,
            "samples": len(self.samples),
            "notes": notes,
        }
        if while_running is not None:
            out["while_running"] = while_running
            if while_running.get("samples"):
                w = while_running
                notes.append(
                    f"every {w['interval_s'] * 1e3:.0f} ms while running: SM clock mean "
                    f"{w['sm_clock_mhz']:.0f} MHz ({w['sm_clock_mhz_range'][0]}-"
                    f"{w['sm_clock_mhz_range'][1]}), power mean {w['power_w']:.0f} W "
                    f"(max {w['power_w_max']:.0f}), power-capped in "
                    f"{w['power_capped_frac']:.0%} of {w['samples']} samples"
                )
                if w["slowdown_reasons"]:
                    out["throttled"] = True
                    out["slowdown_reasons"] = sorted(set(slowed) | set(w["slowdown_reasons"]))
                    notes.append(
                        "GPU slowed down while running: " + ", ".join(w["slowdown_reasons"])
                    )
        return out


@dataclass(frozen=True)
class StateSample:
    """One reading of the state sampler: perf_counter time, SM clock, power, temperature."""

    t: float
    sm_clock_mhz: int
    power_w: float
    temperature_c: int
    power_capped: bool
    slowdown: tuple[str, ...] = ()


def _nvml_reader(device_index: int) -> Callable[[], StateSample] | None:
    """A cheap reader of the four fast-moving values, or None without NVML."""
    nv = _nvml()
    if nv is None:
        return None
    handle = _nvml_handle(nv, device_index)
    get_reasons = _reasons_getter(nv)

    def read() -> StateSample:
        mask = int(get_reasons(handle))
        return StateSample(
            t=time.perf_counter(),
            sm_clock_mhz=int(nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM)),
            power_w=nv.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            temperature_c=int(nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)),
            power_capped="sw_power_cap" in _reasons(mask, _OTHER_REASONS),
            slowdown=tuple(_reasons(mask, _SLOWDOWN_REASONS)),
        )

    return read


def window_stats(samples: Sequence[StateSample]) -> dict[str, Any]:
    """What the GPU did over some samples: mean/min/max SM clock, power, temperature, caps."""
    if not samples:
        return {"samples": 0}
    clocks = [s.sm_clock_mhz for s in samples]
    power = [s.power_w for s in samples]
    temps = [s.temperature_c for s in samples]
    slowed = sorted({r for s in samples for r in s.slowdown})
    return {
        "samples": len(samples),
        "sm_clock_mhz": round(statistics.fmean(clocks), 1),
        "sm_clock_mhz_range": [min(clocks), max(clocks)],
        "power_w": round(statistics.fmean(power), 1),
        "power_w_max": round(max(power), 1),
        "temperature_c_range": [min(temps), max(temps)],
        "power_capped_frac": round(sum(s.power_capped for s in samples) / len(samples), 3),
        "slowdown_reasons": slowed,
    }


class StateSampler:
    """Reads SM clock, power, temperature and clock-event reasons every `interval_s` in a thread.

    The per-group samples of StateLog are taken between groups, when the GPU idles; this one
    sees the GPU while kernels run, so each group can carry the clock and power it was timed at
    (`window`), and a run can say whether it was power-capped or throttled while measuring.
    It only reads NVML; without NVML (or with `reader=None`) it records nothing and says so.
    """

    def __init__(
        self,
        interval_s: float = 0.05,
        device_index: int = 0,
        reader: Callable[[], StateSample] | None = None,
        max_samples: int = 200_000,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self._device_index = device_index
        self._reader = reader
        self._max = max_samples
        self.samples: list[StateSample] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._reader is not None

    def start(self) -> StateSampler:
        if self._reader is None:
            self._reader = _nvml_reader(self._device_index)
        if self._reader is None:
            self.error = "nvidia-ml-py (pynvml) not importable: no state samples"
            return self
        self._thread = threading.Thread(target=self._loop, name="tilegate-state", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        assert self._reader is not None
        while not self._stop.is_set() and len(self.samples) < self._max:
            try:
                self.samples.append(self._reader())
            except Exception as err:  # a failing read ends sampling; the run goes on
                self.error = f"state sampling stopped: {type(err).__name__}: {err}"
                return
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def window(self, spans: Sequence[tuple[float, float]]) -> dict[str, Any]:
        """Statistics of the samples taken inside any of the (start, end) perf_counter spans."""
        inside = [s for s in list(self.samples) if any(a <= s.t <= b for a, b in spans)]
        return window_stats(inside)

    def summary(self) -> dict[str, Any]:
        """The whole run: window statistics over every sample, the interval, and any error."""
        out = window_stats(list(self.samples))
        out["interval_s"] = self.interval_s
        if self.error:
            out["error"] = self.error
        return out


def main(argv: list[str] | None = None) -> int:
    """`python -m tilegate.gpu`: print the GPU's slug, or say there is none (exit 2)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        info = gpu_info()
    except (RuntimeError, ImportError) as err:
        print(
            f"tilegate: cannot measure: {err}.\n"
            "  `nox -s perf` needs a CUDA GPU and the runner's CUDA build of torch and Triton.\n"
            "  Without a GPU: `nox -s tests` (CPU tests), `nox -s smoke` (pipeline on the interpreter),\n"
            "  `tilegate compare RESULTS BASELINE` (judge results measured elsewhere).",
            file=sys.stderr,
        )
        return 2
    if "--slug" in args:
        print(info.slug)
    else:
        print(
            f"{info.name} ({info.slug}), {info.sm_count} SMs, sm_{info.capability[0]}{info.capability[1]}, "
            f"driver {info.driver}, CUDA {info.cuda}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
