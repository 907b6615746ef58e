"""What the GPU does while the suite runs: clocks, power, temperature and throttling, from NVML.

One reading, `StateSample`, in two depths: `StateSampler` reads the fast-moving values every
50 ms while kernels run; `StateLog` a full reading at the start, after each group and at the
end. Without NVML nothing is guessed. Nothing here changes the GPU: it is only read.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tilegate.harness.device import nvml

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
NO_NVML = "nvidia-ml-py (pynvml) not importable: GPU state not recorded"
MAX_SAMPLES = 200_000  # the sampler's, at most


def _reasons(mask: int, names: dict[int, str]) -> tuple[str, ...]:
    """The names of the reason bits set in `mask`."""
    return tuple(n for bit, n in names.items() if mask & bit)


@dataclass(frozen=True)
class StateSample:
    """One NVML reading: the sampler's fast one fills the first six fields, the log's all."""

    t: float
    sm_clock_mhz: int | None
    power_w: float | None
    temperature_c: int | None
    power_capped: bool
    slowdown: tuple[str, ...] = ()
    mem_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    power_limit_w: float | None = None
    other_reasons: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The reading as results files store it (machine_info.tilegate.state.start / end)."""
        out: dict[str, Any] = {
            "available": True,
            "sm_clock_mhz": self.sm_clock_mhz,
            "mem_clock_mhz": self.mem_clock_mhz,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "temperature_c": self.temperature_c,
            "power_w": None if self.power_w is None else round(self.power_w, 1),
            "power_limit_w": self.power_limit_w,
            "slowdown_reasons": list(self.slowdown),
            "other_reasons": list(self.other_reasons),
        }
        if self.errors:
            out["errors"] = list(self.errors)
        return out


class Nvml:
    """NVML queries for one device, read only."""

    def __init__(self, nv: Any, device_index: int = 0) -> None:
        self.nv = nv
        self.handle = self._handle(device_index)
        # named "throttle reasons" before driver 530
        self._get_reasons = (
            getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        )

    @classmethod
    def open(cls, device_index: int = 0) -> Nvml | None:
        nv = nvml()
        return None if nv is None else cls(nv, device_index)

    def _handle(self, device_index: int) -> Any:
        import torch

        uuid = getattr(torch.cuda.get_device_properties(device_index), "uuid", None)
        if uuid is not None:
            try:
                return self.nv.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
            except Exception:
                pass
        return self.nv.nvmlDeviceGetHandleByIndex(device_index)

    def read(self, *, full: bool = False) -> StateSample:
        """A reading. Fast: a failing query raises. Full: it is noted in `errors`, left None."""
        nv, h = self.nv, self.handle
        queries: dict[str, Callable[[], Any]] = {
            "sm_clock_mhz": lambda: int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "power_w": lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "temperature_c": lambda: int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            "reasons": lambda: int(self._get_reasons(h)),
        }
        if full:
            queries |= {
                "mem_clock_mhz": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                "max_sm_clock_mhz": lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
                "power_limit_w": lambda: round(nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0, 1),
            }
        values: dict[str, Any] = {}
        errors = []
        for key, query in queries.items():
            try:
                values[key] = query()
            except Exception as err:
                if not full:
                    raise
                values[key] = None
                errors.append(f"{'clock event reasons' if key == 'reasons' else key}: {err}")
        mask = values.pop("reasons")
        other = _reasons(mask, _OTHER_REASONS) if mask is not None else ()
        return StateSample(
            t=time.perf_counter(),
            power_capped="sw_power_cap" in other,
            slowdown=_reasons(mask, _SLOWDOWN_REASONS) if mask is not None else (),
            other_reasons=other if full else (),
            errors=tuple(errors),
            **values,
        )


def read_state() -> StateSample | None:
    """A full reading now, or None without NVML."""
    reader = Nvml.open()
    return None if reader is None else reader.read(full=True)


class StateLog:
    """Full readings over a run: at start, after each measured group, at end."""

    def __init__(self) -> None:
        self.samples: list[tuple[str, StateSample | None]] = []

    def sample(self, label: str) -> StateSample | None:
        state = read_state()
        self.samples.append((label, state))
        return state

    def summary(self, while_running: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start and end state, whether the GPU slowed down at any sample, and notes for the report;
        `while_running` (a StateSampler summary) is kept, noted, and its slowdown counts too."""
        if not self.samples:
            return {
                "start": None,
                "end": None,
                "throttled": None,
                "notes": ["GPU state was not sampled"],
            }
        read = [(at, s) for at, s in self.samples if s is not None]
        available = self.samples[0][1] is not None
        slowed = sorted({r for _, s in read for r in s.slowdown})
        power_capped = sum(s.power_capped for _, s in read)
        notes = []
        if slowed:
            where = [at for at, s in read if s.slowdown]
            notes.append(f"GPU slowed down ({', '.join(slowed)}) at: {', '.join(where)}")
        if power_capped:
            notes.append(f"SW power cap active in {power_capped} of {len(self.samples)} samples")
        clocks = [s.sm_clock_mhz for _, s in read if s.sm_clock_mhz]
        temps = [s.temperature_c for _, s in read if s.temperature_c is not None]
        if clocks:
            notes.append(f"SM clock {min(clocks)}-{max(clocks)} MHz over {len(clocks)} samples")
        if temps:
            notes.append(f"temperature {min(temps)}-{max(temps)} C")
        if not available:
            notes.append(NO_NVML)
        out = {
            "start": self._json(0),
            "end": self._json(-1),
            "throttled": bool(slowed) if available else None,
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

    def _json(self, index: int) -> dict[str, Any]:
        at, state = self.samples[index]
        data = state.as_json() if state is not None else {"available": False, "note": NO_NVML}
        data["at"] = at
        return data


def window_stats(samples: Sequence[StateSample]) -> dict[str, Any]:
    """What the GPU did over some samples: mean/min/max SM clock, power, temperature, caps."""
    if not samples:
        return {"samples": 0}
    clocks = [s.sm_clock_mhz for s in samples if s.sm_clock_mhz is not None]
    power = [s.power_w for s in samples if s.power_w is not None]
    temps = [s.temperature_c for s in samples if s.temperature_c is not None]
    slowed = sorted({r for s in samples for r in s.slowdown})
    return {
        "samples": len(samples),
        "sm_clock_mhz": round(statistics.fmean(clocks), 1) if clocks else None,
        "sm_clock_mhz_range": [min(clocks), max(clocks)] if clocks else None,
        "power_w": round(statistics.fmean(power), 1) if power else None,
        "power_w_max": round(max(power), 1) if power else None,
        "temperature_c_range": [min(temps), max(temps)] if temps else None,
        "power_capped_frac": round(sum(s.power_capped for s in samples) / len(samples), 3),
        "slowdown_reasons": slowed,
    }


class StateSampler:
    """Reads SM clock, power, temperature and clock-event reasons every `interval_s` in a thread:
    the GPU while kernels run (the StateLog's readings are taken while it idles), so each group
    carries the clock and power it was timed at (`window`). Without NVML it records nothing and
    says so."""

    def __init__(
        self,
        interval_s: float = 0.05,
        reader: Callable[[], StateSample] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self._reader = reader
        self.samples: list[StateSample] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._reader is not None

    def start(self) -> StateSampler:
        if self._reader is None and (nvml_reader := Nvml.open()) is not None:
            self._reader = nvml_reader.read
        if self._reader is None:
            self.error = NO_NVML
            return self
        self._thread = threading.Thread(target=self._loop, name="tilegate-state", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        assert self._reader is not None
        while not self._stop.is_set() and len(self.samples) < MAX_SAMPLES:
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
