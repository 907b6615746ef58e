"""Synthetic results files shaped like the perf suite's, with H200-like numbers and noise.

Medians come from docs/calibration-h200.md (fp16, M = N = 16384, B K-contiguous "nt"); the
noise model copies its section 4: a tight core with a slow tail inside a run (IQR ~10-19 % at
K = 128, ~3 % at K = 4096), a common per-round factor (GPU state, shared by every variant of a
round, so same-run ratios are tight), and a per-process drift of each row's median (~0.5 % for
Triton rows, ~1.5 % for compute-bound rows: cuBLAS and TMA at large K).

Used by the tests for statistics and by tests/fixtures/_generate.py, which wrote the synthetic
JSON fixtures (tests/fixtures/synthetic-*). The JSON is what pytest-benchmark writes: its own `stats` block (computed by
pytest_benchmark.stats.Stats), `machine_info`, `commit_info`, with tilegate's keys inside.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernels import REFERENCE
from tilegate.judge.stats import paired_ratio

QUICK_KS = (128, 512, 4096)
TWINS = {"xtile_persistent": "swizzle_persistent", "tma_xtile_persistent": "tma_swizzle_persistent"}

# median ms per (variant, K), fp16 nt, from the calibration (tiled/grouped/persistent estimated)
H200_NT_MS: dict[str, dict[int, float]] = {
    "torch": {128: 0.1876, 256: 0.2707, 512: 0.5195, 1024: 0.9361, 4096: 3.3652},
    "tiled": {128: 0.4712, 256: 0.6050, 512: 1.0230, 1024: 1.8120, 4096: 6.4100},
    "grouped": {128: 0.4655, 256: 0.5960, 512: 0.9880, 1024: 1.7410, 4096: 6.0120},
    "persistent": {128: 0.4420, 256: 0.5810, 512: 0.9710, 1024: 1.7050, 4096: 6.1830},
    "swizzle_persistent": {128: 0.4280, 256: 0.5640, 512: 0.9319, 1024: 1.6418, 4096: 5.9654},
    "xtile_persistent": {128: 0.3105, 256: 0.4950, 512: 0.8812, 1024: 1.6229, 4096: 5.8584},
    "tma_swizzle_persistent": {128: 0.3243, 256: 0.4030, 512: 0.6028, 1024: 1.0313, 4096: 3.3895},
    "tma_xtile_persistent": {128: 0.1891, 256: 0.3177, 512: 0.5319, 1024: 0.9273, 4096: 3.3608},
}
VARIANTS = tuple(H200_NT_MS)  # the calibrated variants: the registry's first eight, in its order
COMPUTE_BOUND = {"torch", "tma_swizzle_persistent", "tma_xtile_persistent"}

H200_GPU = {
    "name": "NVIDIA H200",
    "slug": "nvidia-h200",
    "sm_count": 132,
    "capability": [9, 0],
    "memory_gib": 139.8,
    "l2_bytes": 52428800,
    "driver": "580.159.04",
    "cuda": "13.0",
}
SOFTWARE = {"torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3"}


def key(variant: str, dtype: str = "fp16", layout: str = "nt", K: int = 128) -> str:
    return f"{variant}-{dtype}-{layout}-K{K}"


def row_noise(variant: str, K: int) -> tuple[float, float, float, float]:
    """(core sigma, tail fraction, tail mean, process drift sigma) of one row, all relative."""
    small = K <= 256
    core = 0.006 if small else 0.008
    tail_frac = 0.3 if small else 0.25
    tail_mean = 0.35 if small else 0.06
    drift = 0.012 if variant in COMPUTE_BOUND and K >= 1024 else 0.003
    return core, tail_frac, tail_mean, drift


def make_samples(
    median_s: float,
    n: int,
    rng: np.random.Generator,
    *,
    core: float = 0.006,
    tail_frac: float = 0.3,
    tail_mean: float = 0.35,
    common: np.ndarray | None = None,
) -> list[float]:
    """n per-round samples around median_s: normal core plus an exponential slow tail."""
    x = 1.0 + rng.normal(0.0, core, n)
    tail = rng.random(n) < tail_frac
    x = x + tail * rng.exponential(tail_mean, n)
    if common is not None:
        x = x * common
    x = x / np.median(x)  # the row's median is median_s exactly; drift is applied by the caller
    return [float(v) for v in median_s * x]


def _stats_block(samples: list[float]) -> dict[str, Any]:
    from pytest_benchmark.stats import Stats

    st = Stats()
    for s in samples:
        st.update(s)
    out: dict[str, Any] = st.as_dict()
    out["data"] = list(samples)
    out["iterations"] = 1
    return out


def make_run(
    *,
    ks: tuple[int, ...] = QUICK_KS,
    variants: tuple[str, ...] = VARIANTS,
    dtype: str = "fp16",
    layout: str = "nt",
    medians_ms: Mapping[str, Mapping[int, float]] = H200_NT_MS,
    rounds: int = 40,
    seed: int = 0,
    slow: Mapping[str, float] | None = None,
    machine_factor: float = 1.0,
    gpu: Mapping[str, Any] | None = None,
    software: Mapping[str, str] | None = None,
    mode: str = "gpu",
    profile: str = "quick",
    m: int = 16384,
    n: int = 16384,
    throttled: bool = False,
    injected: tuple[str, ...] = (),
    commit: str = "73fe4455c0ffee0123456789abcdef0123456789",
    when: str = "2026-11-30T10:00:00+00:00",
    drift: bool = True,
    code: Mapping[str, str] | None = None,
    ab: Mapping[str, float] | None = None,
    base_code: Mapping[str, str] | None = None,
    pair_sigma: float = 0.01,
) -> dict[str, Any]:
    """A results file (as a dict) with every variant x K, rounds interleaved and paired.

    `slow` maps a case id to a factor (1.10 = 10 % slower); `machine_factor` scales every row
    (a slower runner); `drift=False` removes the per-process drift of the medians. `code` maps a
    variant to its code hash (rows get one only when given). `ab` makes an A/B run: every
    non-reference row gets a base row timed in the same rounds, `ab` mapping a case id to the
    head/base factor (absent: 1.0, the same speed); the pair's per-round ratio scatters by
    `pair_sigma`; `base_code` maps a variant to the base's code hash (default: the head's).
    """
    rng = np.random.default_rng(seed)
    pair_rng = np.random.default_rng(seed + 10_007)  # base rows never disturb the head's draws
    slow = dict(slow or {})
    benchmarks = []
    for K in ks:
        common = np.exp(
            rng.normal(0.0, 0.004, rounds)
        )  # GPU state of each round, shared by the group
        group: dict[str, list[float]] = {}
        for v in variants:
            core, tail_frac, tail_mean, drift_sigma = row_noise(v, K)
            med = medians_ms[v][K] * 1e-3 * machine_factor * slow.get(key(v, dtype, layout, K), 1.0)
            if drift:
                med *= 1.0 + rng.normal(0.0, drift_sigma)
            group[v] = make_samples(
                med, rounds, rng, core=core, tail_frac=tail_frac, tail_mean=tail_mean, common=common
            )
        for v in variants:
            samples = group[v]
            case = key(v, dtype, layout, K)
            median = float(np.median(samples))
            tg: dict[str, Any] = {
                "key": case,
                "variant": v,
                "dtype": dtype,
                "layout": layout,
                "M": m,
                "N": n,
                "K": K,
                "correct": True,
                "rel_err": 0.00021,
                "tolerance": 0.01,
                "samples_s": samples,
                "median_s": median,
                "tflops": round(2.0 * m * n * K / median / 1e12, 3),
                "ratio_to_torch": None if v == "torch" else _paired(samples, group.get("torch")),
            }
            if v == REFERENCE.name:
                tg["reference"] = True
            if v in TWINS:
                tg["twin"] = TWINS[v]
                tg["ratio_to_twin"] = _paired(samples, group.get(TWINS[v]))
            if code is not None:
                tg["code_hash"], tg["code_hash_kind"] = code.get(v, f"sha256:{v}"), "sass"
            benchmarks.append(_benchmark(case, f"{dtype}-{layout}-K{K}", tg, samples))
            if ab is None or v == REFERENCE.name:
                continue
            noise = np.exp(pair_rng.normal(0.0, pair_sigma, rounds))
            base = [float(x) for x in np.asarray(samples) / ab.get(case, 1.0) * noise]
            tg["ratio_to_base"] = _paired(samples, base)
            btg = dict(tg, samples_s=base, median_s=float(np.median(base)), side="base")
            btg.pop("ratio_to_base")
            # the base's own ratio to the reference, which is measured once, in the same rounds
            btg["ratio_to_torch"] = _paired(base, group.get(REFERENCE.name))
            if base_code is not None or code is not None:
                btg["code_hash"] = (base_code or {}).get(v, tg.get("code_hash", f"sha256:{v}"))
                btg["code_hash_kind"] = "sass"
            bench_base = _benchmark(f"{case}@base", f"{dtype}-{layout}-K{K}", btg, base)
            benchmarks.append(bench_base)
    if ab is not None:  # the twins' ratios on the base side are the base's own
        by_param = {b["param"]: b for b in benchmarks}
        for b in benchmarks:
            tgb = b["extra_info"]["tilegate"]
            if tgb.get("side") == "base" and tgb.get("twin"):
                twin = by_param[f"{key(tgb['twin'], dtype, layout, tgb['K'])}@base"]
                tgb["ratio_to_twin"] = _paired(
                    tgb["samples_s"], twin["extra_info"]["tilegate"]["samples_s"]
                )
    return {
        "machine_info": _machine_info(
            mode=mode,
            profile=profile,
            m=m,
            n=n,
            ks=ks,
            rounds=rounds,
            gpu=gpu,
            software=software,
            throttled=throttled,
            injected=injected,
            ab=ab,
        ),
        "commit_info": {
            "id": commit,
            "time": "2026-11-30T09:00:00+00:00",
            "author_time": "2026-11-30T09:00:00+00:00",
            "dirty": False,
            "project": "tilegate",
            "branch": "main",
        },
        "benchmarks": benchmarks,
        "datetime": when,
        "version": "5.2.3",
    }


def _paired(x: list[float], ref: list[float] | None) -> float | None:
    """The same paired ratio the perf suite writes (tilegate.judge.stats.paired_ratio)."""
    return paired_ratio(x, ref) if ref else None


def _benchmark(case: str, group: str, tg: dict[str, Any], samples: list[float]) -> dict[str, Any]:
    return {
        "group": group,
        "name": f"test_matmul[{case}]",
        "fullname": f"perf_tests/test_matmul.py::test_matmul[{case}]",
        "params": {"case": f"UNSERIALIZABLE[Case(id={case!r})]"},
        "param": case,
        "extra_info": {"tilegate": tg},
        "options": {
            "disable_gc": False,
            "timer": "perf_counter",
            "min_rounds": 5,
            "max_time": 1.0,
            "min_time": 5e-06,
            "precision": None,
            "confidence": None,
            "warmup": False,
        },
        "stats": _stats_block(samples),
    }


def _machine_info(
    *,
    mode: str,
    profile: str,
    m: int,
    n: int,
    ks: tuple[int, ...],
    rounds: int,
    gpu: Mapping[str, Any] | None,
    software: Mapping[str, str] | None,
    throttled: bool,
    injected: tuple[str, ...],
    ab: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    smoke = mode == "smoke"
    state_sample = {
        "available": True,
        "sm_clock_mhz": 1980,
        "mem_clock_mhz": 3201,
        "max_sm_clock_mhz": 1980,
        "temperature_c": 41,
        "power_w": 118.4,
        "power_limit_w": 700.0,
        "slowdown_reasons": [],
        "other_reasons": [],
    }
    end = dict(
        state_sample,
        temperature_c=63,
        sm_clock_mhz=1755 if throttled else 1980,
        slowdown_reasons=["sw_thermal_slowdown"] if throttled else [],
    )
    notes = (
        ["SM clock 1755-1980 MHz over 5 samples", "temperature 41-88 C"]
        if throttled
        else ["SM clock 1980-1980 MHz over 5 samples", "temperature 41-63 C"]
    )
    if throttled:
        notes.insert(0, "GPU slowed down (sw_thermal_slowdown) at: fp16-nt-K4096, end")
    return {
        "node": "h200-runner-07",
        "processor": "x86_64",
        "machine": "x86_64",
        "python_compiler": "GCC 13.3.0",
        "python_implementation": "CPython",
        "python_implementation_version": "3.12.3",
        "python_version": "3.12.3",
        "python_build": ["main", "Nov  6 2025 13:44:16"],
        "release": "6.8.0-87-generic",
        "system": "Linux",
        "cpu": {
            "arch": "X86_64",
            "bits": 64,
            "count": 16,
            "brand_raw": "Intel(R) Xeon(R) Platinum 8480+",
        },
        "tilegate": {
            "harness_version": "0.1.0",
            "mode": mode,
            "profile": profile,
            "M": m,
            "N": n,
            "ks": list(ks),
            "l2_flush": not smoke,
            "l2_policy": "none (CPU interpreter)"
            if smoke
            else "flush before every call (256 MiB zeroed)",
            "timer": "perf-counter" if smoke else "cuda-event",
            "rounds": rounds,
            "injected": list(injected),
            **(
                {"ab": {"ref": "HEAD^1", "sha": "b" * 40, "variants": []}} if ab is not None else {}
            ),
            "gpu": None if smoke else dict(gpu or H200_GPU),
            "software": dict(software or SOFTWARE),
            "state": None
            if smoke
            else {
                "start": state_sample,
                "end": end,
                "throttled": throttled,
                "slowdown_reasons": ["sw_thermal_slowdown"] if throttled else [],
                "sm_clock_mhz_range": [1755 if throttled else 1980, 1980],
                "samples": 5,
                "notes": notes,
            },
        },
    }


def write(path: Path, data: dict[str, Any]) -> Path:
    """Write like pytest-benchmark does (indent 4, NaN allowed)."""
    path.write_text(json.dumps(data, indent=4, ensure_ascii=True))
    return path


def bench(data: dict[str, Any], case: str) -> dict[str, Any]:
    """The benchmark entry of one case id, for tests that corrupt one row."""
    for b in data["benchmarks"]:
        if b["param"] == case:
            return b
    raise KeyError(case)


def set_samples(data: dict[str, Any], case: str, samples: list[float]) -> None:
    b = bench(data, case)
    b["extra_info"]["tilegate"]["samples_s"] = samples
    b["stats"]["data"] = samples
    med = (
        float(np.median(samples))
        if samples and all(math.isfinite(s) for s in samples)
        else float("nan")
    )
    b["extra_info"]["tilegate"]["median_s"] = med
    b["stats"]["median"] = med


def results_file(directory: Path, name: str, **kwargs: Any) -> Path:
    """make_run(**kwargs) written to directory/name."""
    return write(Path(directory) / name, make_run(**kwargs))


def load_run(directory: Path, name: str, **kwargs: Any) -> Any:
    from tilegate.store.files import load_results

    return load_results(results_file(directory, name, **kwargs))


def build_baseline(directory: Path, seeds: tuple[int, ...] = (101, 102, 103), **kwargs: Any) -> Any:
    """A baseline built by `tilegate.judge.baseline.rebaseline` from len(seeds) synthetic runs (built-in policy)."""
    from tilegate.judge.policy import Tolerances
    from tilegate.judge.rebaselining import rebaseline

    runs = [load_run(directory, f"rebaseline-{s}.json", seed=s, **kwargs) for s in seeds]
    return rebaseline(
        runs, out=Path(directory) / "nvidia-h200.json", old=None, tolerances=Tolerances()
    ).baseline
