"""SYNTHETIC histories of results files, built by resampling REAL H200 measurements.

Provenance: tests/fixtures/h200-baseline-2026-11-30/nvidia-h200.json (the repository's
baselines/nvidia-h200.json until round 6 rebaselined it, frozen here so that a rebaseline does
not move these histories) holds, for each of the 96 default-profile cases, a
41-quantile summary of the pooled per-round samples of 3 real `default` runs on one NVIDIA H200
(2026-11-30, commit 8fe361a, Triton 3.6.0, torch 2.11.0+cu130) and each run's median. A synthetic
run here:

* picks one of those 3 real runs, the same for every case of the synthetic run (a run's GPU state
  is shared by all its cases, as in reality);
* draws each case's per-round samples from the case's pooled real distribution (inverse CDF,
  linear between the 41 quantiles), scaled so that their median sits at the picked run's real
  median for that case;
* ties the rounds of one (dtype, layout, K) group together with a Gaussian copula (correlation
  `rho`, an assumption): interleaved rounds share the GPU's momentary state;
* computes `ratio_to_reference` and `ratio_to_twin` as the suite does (median over rounds of
  x_i / ref_i, `tilegate.judge.stats.paired_ratio`).

`rounds` defaults to 200 per case, fewer than the real 300-1900, so these series are somewhat
noisier than real ones (a conservative test of false alarms). A `step` multiplies the samples
of chosen cases by a factor from a chosen commit on. Nothing here is a recorded run: every
file says `"synthetic": true` in machine_info.tilegate and has a synthetic commit id.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import ndtr

from tests._factories import H200_GPU, SOFTWARE, VARIANTS, _machine_info
from tilegate.judge.stats import paired_ratio

ROOT = Path(__file__).resolve().parents[1]
# the baselines directory the synthetic runs are resampled from and judged against
REAL_BASELINES = ROOT / "tests" / "fixtures" / "h200-baseline-2026-11-30"
REAL_BASELINE = REAL_BASELINES / "nvidia-h200.json"
START = dt.datetime(2026, 12, 1, 0, 0, tzinfo=dt.timezone.utc)


def real_rows() -> dict[str, dict[str, Any]]:
    """The baseline's rows in the suite's order: group by group, variants in registry order."""
    rows: dict[str, dict[str, Any]] = json.loads(REAL_BASELINE.read_text())["rows"]
    order = {v: i for i, v in enumerate(VARIANTS)}
    return dict(
        sorted(
            rows.items(),
            key=lambda kv: (kv[1]["dtype"], kv[1]["layout"], kv[1]["K"], order[kv[1]["variant"]]),
        )
    )


def commit_id(i: int, salt: str = "") -> str:
    return hashlib.sha1(f"synthetic-commit-{salt}{i}".encode()).hexdigest()


def _stats(samples: np.ndarray) -> dict[str, Any]:
    q1, med, q3 = np.quantile(samples, [0.25, 0.5, 0.75])
    return {
        "min": float(samples.min()),
        "max": float(samples.max()),
        "mean": float(samples.mean()),
        "stddev": float(samples.std(ddof=1)),
        "median": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "iqr": float(q3 - q1),
        "rounds": len(samples),
        "iterations": 1,
        "data": [float(s) for s in samples],
    }


def make_run(
    i: int,
    rng: np.random.Generator,
    *,
    rows: Mapping[str, Mapping[str, Any]] | None = None,
    rounds: int | None = 200,
    rho: float = 0.6,
    factors: Mapping[str, float] | None = None,
    software: Mapping[str, str] | None = None,
    driver: str | None = None,
    salt: str = "",
    profile: str = "default",
    stats_data: bool = True,
) -> dict[str, Any]:
    """Synthetic run number i (commit i) as pytest-benchmark JSON; `factors` slows chosen cases.

    `rounds=None` takes the real per-run round count (n_samples / 3) of every case.
    """
    rows = rows or real_rows()
    factors = factors or {}
    which = int(rng.integers(0, 3))  # the real run whose state this synthetic run replays
    groups: dict[tuple[str, str, int], list[str]] = {}
    for key, r in rows.items():
        groups.setdefault((r["dtype"], r["layout"], r["K"]), []).append(key)
    samples: dict[str, np.ndarray] = {}
    levels = np.linspace(0.0, 1.0, 41)
    for keys in groups.values():
        n = rounds or max(rows[k]["n_samples"] // 3 for k in keys)
        shared = rng.standard_normal(n)
        for key in keys:
            r = rows[key]
            q = np.asarray(r["samples_s"], dtype=float)
            u = ndtr(rho * shared + np.sqrt(1 - rho**2) * rng.standard_normal(n))
            x = np.interp(u, levels, q)
            x *= r["run_medians_s"][which] / np.median(x) * factors.get(key, 1.0)
            samples[key] = x
    benchmarks = []
    for key, r in rows.items():
        x = samples[key]
        ref = samples.get(f"torch-{r['dtype']}-{r['layout']}-K{r['K']}")
        tg: dict[str, Any] = {
            "key": key,
            "variant": r["variant"],
            "dtype": r["dtype"],
            "layout": r["layout"],
            "M": r["M"],
            "N": r["N"],
            "K": r["K"],
            "correct": True,
            "rel_err": 0.0002,
            "tolerance": 0.01,
            "samples_s": [float(s) for s in x],
            "median_s": float(np.median(x)),
            "tflops": round(2.0 * r["M"] * r["N"] * r["K"] / float(np.median(x)) / 1e12, 3),
            "ratio_to_torch": None
            if r["variant"] == "torch" or ref is None
            else paired_ratio(list(x), list(ref)),
        }
        if r["variant"] == "torch":
            tg["reference"] = True  # as the suite marks kernels.REFERENCE's rows
        if r.get("twin"):
            tg["twin"] = r["twin"]
            twin = samples[f"{r['twin']}-{r['dtype']}-{r['layout']}-K{r['K']}"]
            tg["ratio_to_twin"] = paired_ratio(list(x), list(twin))
        stats = _stats(x)
        if not stats_data:
            del stats["data"]
        benchmarks.append(
            {
                "group": f"{r['dtype']}-{r['layout']}-K{r['K']}",
                "name": f"test_matmul[{key}]",
                "fullname": f"perf_tests/test_matmul.py::test_matmul[{key}]",
                "param": key,
                "extra_info": {"tilegate": tg},
                "stats": stats,
            }
        )
    ks = sorted({r["K"] for r in rows.values()})
    gpu = dict(H200_GPU, driver=driver or H200_GPU["driver"])
    mi = _machine_info(
        mode="gpu",
        profile=profile,
        m=16384,
        n=16384,
        ks=tuple(ks),
        rounds=rounds or 300,
        gpu=gpu,
        software=software or SOFTWARE,
        throttled=False,
        injected=(),
    )
    mi["tilegate"]["synthetic"] = True
    return _results_file(mi, benchmarks, i, salt, "tilegate")


def write_history(
    directory: Path,
    n: int = 60,
    *,
    seed: int = 0,
    steps: Iterable[tuple[int, Mapping[str, float]]] = (),
    triton_change_at: int | None = None,
    rounds: int | None = 200,
    salt: str = "",
    stats_data: bool = False,
) -> list[Path]:
    """n synthetic runs (commits 0..n-1) written to directory/synthetic-run-NNN.json.

    Each (commit, {case: factor}) in `steps` makes those cases `factor` times slower from that
    commit on (factors of several steps multiply); from commit `triton_change_at` on, the runs
    say Triton 3.9.0.
    """
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = real_rows()
    steps = list(steps)
    paths = []
    for i in range(n):
        factors: dict[str, float] = {}
        for at, by_case in steps:
            if i >= at:
                for key, f in by_case.items():
                    factors[key] = factors.get(key, 1.0) * f
        software = (
            dict(SOFTWARE, triton="3.9.0")
            if triton_change_at is not None and i >= triton_change_at
            else None
        )
        data = make_run(
            i,
            rng,
            rows=rows,
            rounds=rounds,
            factors=factors,
            software=software,
            salt=salt,
            stats_data=stats_data,
        )
        path = directory / f"synthetic-run-{i:03d}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


STEPPED = (
    "xtile_persistent-fp16-nt-K128",  # the cross-tile case the project is about
    "tma_xtile_persistent-fp16-nn-K4096",  # the noisiest row of the baseline (IQR 7 %)
    "tiled-fp16-nn-K512",
)
STEP_AT = 37


def build_store(
    directory: Path, *, step: bool, seed: int, salt: str, verdicts: bool = True
) -> tuple[Path, list[Path]]:
    """A 60-commit synthetic history in a store (with `verdicts`, each run judged against the
    real baseline): with a +3 % step of STEPPED at commit STEP_AT, where Triton also changes to
    3.9.0, or an A/A history."""
    from tilegate.cli import main as tilegate_main

    def main(argv: list[str]) -> int:
        return tilegate_main(["history", *argv])

    paths = write_history(
        directory / "runs",
        60,
        seed=seed,
        steps=[(STEP_AT, dict.fromkeys(STEPPED, 1.03))] if step else (),
        triton_change_at=STEP_AT if step else None,
        salt=salt,
    )
    store = directory / "history.duckdb"
    judged = ["--baselines", str(REAL_BASELINES)] if verdicts else []
    code = main(["import", str(directory / "runs"), "--store", str(store), *judged])
    assert code == 0
    return store, paths


# --- a toy benchmark that is not the matmul one ------------------------------------------------
# SYNTHETIC, not resampled from anything real: a row-wise "norm" kernel with axes op, rows and
# width (no dtype, layout or K), variants `fused` and `eager` beside the reference `naive` (not
# this repo's `torch`: the page and the store name it), rows with `gbps` (a memory-bound kernel:
# no `tflops`), and one declared expectation: `fused` faster than `eager` per width, where op is
# "norm" (not "scale").
TOY_AXES = ("op", "rows", "width")
TOY_OPS = ("norm", "scale")
TOY_ROWS = (32, 4096)
TOY_WIDTHS = (64, 512, 4096)
TOY_REFERENCE = "naive"
TOY_VARIANTS = (TOY_REFERENCE, "eager", "fused")
TOY_EXPECTATION = {"faster": "fused", "than": "eager", "per": "width", "where": {"op": ["norm"]}}


def toy_case(variant: str, op: str, rows: int, width: int) -> str:
    return f"{variant}-{op}-R{rows}-W{width}"


def toy_run(
    i: int, rng: np.random.Generator, *, rounds: int = 60, salt: str = "toy"
) -> dict[str, Any]:
    """Synthetic toy run number i (commit i) as pytest-benchmark JSON: `fused` takes 0.6 of
    `eager`'s time at width 64, 0.9 at 512 and 1.2 at 4096 (its crossover: width 4096)."""
    share = {64: 0.6, 512: 0.9, 4096: 1.2}
    benchmarks = []
    for op in TOY_OPS:
        for rows in TOY_ROWS:
            for width in TOY_WIDTHS:
                group = f"{op}-R{rows}-W{width}"
                common = np.exp(rng.normal(0.0, 0.01, rounds))
                base = 1e-6 * rows * width / 64
                times = {
                    TOY_REFERENCE: base,
                    "eager": base * 1.5,
                    "fused": base * 1.5 * share[width],
                }
                samples = {
                    v: [float(x) for x in t * common * np.exp(rng.normal(0, 0.005, rounds))]
                    for v, t in times.items()
                }
                for v in TOY_VARIANTS:
                    key = toy_case(v, op, rows, width)
                    x = samples[v]
                    tg: dict[str, Any] = {
                        "key": key,
                        "variant": v,
                        "params": {"op": op, "rows": rows, "width": width},
                        "group": group,
                        "correct": True,
                        "samples_s": x,
                        "median_s": float(np.median(x)),
                        # the row's bytes (read and write, 2 bytes an element) / median
                        "gbps": round(4.0 * rows * width / float(np.median(x)) / 1e9, 3),
                        "ratio_to_reference": None
                        if v == TOY_REFERENCE
                        else paired_ratio(x, samples[TOY_REFERENCE]),
                    }
                    if v == TOY_REFERENCE:
                        tg["reference"] = True
                    benchmarks.append(
                        {
                            "group": group,
                            "name": f"test_toy[{key}]",
                            "param": key,
                            "extra_info": {"tilegate": tg},
                            "stats": _stats(np.asarray(x)),
                        }
                    )
    mi = _machine_info(
        mode="gpu",
        profile="default",
        m=0,
        n=0,
        ks=(),
        rounds=rounds,
        gpu=H200_GPU,
        software=SOFTWARE,
        throttled=False,
        injected=(),
    )
    tg_env = mi["tilegate"]
    for legacy in ("M", "N", "ks"):
        del tg_env[legacy]
    tg_env.update(
        synthetic=True,
        benchmark="toy",
        fixed={},
        axes=list(TOY_AXES),
        expectations=[TOY_EXPECTATION],
    )
    return _results_file(mi, benchmarks, i, salt, "toy")


def _results_file(
    mi: dict[str, Any], benchmarks: list[dict[str, Any]], i: int, salt: str, project: str
) -> dict[str, Any]:
    """A pytest-benchmark results file of run `i` (one hour after run i - 1) on main."""
    when = START + dt.timedelta(hours=i)
    return {
        "machine_info": mi,
        "commit_info": {
            "id": commit_id(i, salt),
            "time": when.isoformat(),
            "dirty": False,
            "project": project,
            "branch": "main",
        },
        "benchmarks": benchmarks,
        "datetime": when.isoformat(),
        "version": "5.3.1",
    }
