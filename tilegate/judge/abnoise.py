"""A/B noise: the A/A paired ratios of a GPU (`baselines/<gpu>.ab.json`, `tilegate ab-noise`) and
the tolerance each case gets from them (docs/gate.md, "A/B": the rule and its calibration); how
an A/B pair's rounds are paired. A case's noise is the `noise_confidence` upper bound of the RMS
of its A/A ratios' r - 1, its tolerance clamp(multiple x noise, floor, ceiling); a case seen in
fewer than MIN_NOISE_RUNS runs gets at least the largest tolerance of those seen that often
(POOLED), one the file lacks the ceiling (uncalibrated); its host time has rows of its own
(`<case>#host`, HOST_POLICY). The file is read and written by tilegate.store.files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from tilegate.errors import InputError
from tilegate.fileio import is_finite_number
from tilegate.judge import hostprocs, stats
from tilegate.judge.policy import TolerancePolicy
from tilegate.judge.results import GpuFile, Row, Run, gpu_json, gpu_mismatch, provenance_of
from tilegate.judge.rounds import aligned
from tilegate.markdown import listing

NOISE_SCHEMA = "tilegate.ab-noise/1"

HOST = "#host"  # a noise row of a case's host time: "<case id>#host"


def host_key(key: str) -> str:
    return f"{key}{HOST}"


@dataclass(frozen=True)
class ABPolicy(TolerancePolicy):
    """How A/A noise (the spread of the A/A run ratios) becomes a tolerance, and how sure a
    verdict must be (alpha: the one-sided Wilcoxon signed-rank level)."""

    floor: float = 0.005  # 0.5 %: paired ratios hold far tighter than stored medians
    ceiling: float = 0.03  # also the tolerance of an uncalibrated case
    multiple: float = 3.5  # on the noise below: 4.4 x the RMS from 22 runs, 8 x from 3
    confidence: float = 0.99  # of the interval of the median ratio
    noise_confidence: float = 0.9  # of the upper bound of the A/A ratios' RMS (the noise)

    _SAID: ClassVar[str] = "policy "


# Host times move between processes far more than GPU times (Liger's norm ops: up to 50 %), so
# a host verdict gets its own, wider bounds on the same shape of policy
HOST_POLICY = ABPolicy(floor=0.02, ceiling=0.25)

# A case's own A/A spread counts from this many runs on; below, its tolerance is at least the
# largest of the cases measured that often (source POOLED): one run's ratio says little of the next
MIN_NOISE_RUNS = 3

POOLED = "pooled"


@dataclass(frozen=True)
class NoiseRow:
    key: str
    run_ratios: tuple[float, ...]  # the A/A head/base ratio of each calibration run
    spread: float  # max |r - 1| over those runs (shown; the tolerance comes from `noise`)
    tolerance: float
    source: str  # "noise", "floor", "ceiling" or POOLED (too few runs of its own)
    noise: float  # upper bound of the RMS of r - 1 (stats.rms_upper_bound): tolerance / multiple


@dataclass(frozen=True)
class Noise(GpuFile):
    policy: ABPolicy
    rows: Mapping[str, NoiseRow]

    def tolerance(self, key: str) -> tuple[float, str]:
        row = self.rows.get(key)
        if row is None:
            ceiling = HOST_POLICY.ceiling if key.endswith(HOST) else self.policy.ceiling
            return ceiling, f"uncalibrated: {key} not in {self.path}"
        return row.tolerance, f"A/A noise ({row.source}, {len(row.run_ratios)} runs)"


def pair_of(run: Run, key: str) -> tuple[Row, Row] | None:
    head, base = run.rows.get(key), run.base_rows.get(key)
    return (head, base) if head is not None and base is not None else None


def aligned_pair(run: Run, head: Row, base: Row) -> tuple[np.ndarray, np.ndarray]:
    """The head's and base's samples of the rounds both were timed in (Row.timed_in: an A/B
    budget's shorter rows); InputError when they share none or their counts differ."""
    if head.timed_in is not None or base.timed_in is not None:
        h, b = aligned(head.samples_s, head.timed_in, base.samples_s, base.timed_in)
        if not h:
            raise InputError(
                f"results file {run.path}, row {head.key}: head and base share no timed round"
            )
        return np.asarray(h), np.asarray(b)
    if len(head.samples_s) != len(base.samples_s):
        raise InputError(
            f"results file {run.path}, row {head.key}: head and base have {len(head.samples_s)} "
            f"and {len(base.samples_s)} samples; an A/B pair is timed in the same rounds"
        )
    return np.asarray(head.samples_s), np.asarray(base.samples_s)


def pooled_medians(sides: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """The base's and the head's medians over the paired rounds of every run (`aligned_pair`'s)."""
    return (
        float(np.median(np.concatenate([b for _, b in sides]))),
        float(np.median(np.concatenate([h for h, _ in sides]))),
    )


def per_round(run: Run, head: Row, base: Row) -> np.ndarray:
    """head_i / base_i for every round both were timed in (`aligned_pair`)."""
    h, b = aligned_pair(run, head, base)
    return h / b


def on_host(head: Row, base: Row) -> tuple[Row, Row] | None:
    """The pair with their host times as samples, where both have them; else None."""
    h, b = head.host_samples_s, base.host_samples_s
    if h is None or b is None:
        return None
    pinned = (
        on_host(head.pinned, base.pinned)
        if head.pinned is not None and base.pinned is not None
        else None
    )
    return (
        replace(head, samples_s=h, median_s=float(np.median(h)), pinned=pinned and pinned[0]),
        replace(base, samples_s=b, median_s=float(np.median(b)), pinned=pinned and pinned[1]),
    )


def _aa_ratios(runs: Sequence[Run]) -> dict[str, list[float]]:
    """Each case's A/A ratio per run (its host time's: `<case>#host`); InputError unless A/A."""
    if not runs:
        raise InputError("ab-noise needs A/A results files (`tilegate perf --ab HEAD`)")
    slugs = {r.env.gpu.slug for r in runs}
    if len(slugs) != 1:
        raise InputError(f"the A/A runs are of different GPU models: {sorted(slugs)}")
    for run in runs[1:]:
        differs = gpu_mismatch(runs[0].env.gpu, run.env.gpu)
        if differs:
            raise InputError(
                f"the A/A runs {runs[0].path} and {run.path} are of different GPUs "
                f"({', '.join(differs)}), though both are labelled {run.env.gpu.slug}"
            )
    per_key: dict[str, list[float]] = {}
    for run in runs:
        if run.env.ab is None or not run.base_rows:
            raise InputError(f"results {run.path} is not an A/B run (no base rows)")
        if run.env.injected:
            raise InputError(f"results {run.path} ran with TEST-ONLY injections: not A/A")
        rows, bases = run.rows, run.base_rows
        short = [
            k for k, b in bases.items() if k in rows and len(b.samples_s) < len(rows[k].samples_s)
        ]
        budgeted = sorted(k for k in short if bases[k].timed_in is not None)
        if budgeted:
            raise InputError(
                f"results {run.path} timed the base side of {listing(budgeted)} in fewer rounds "
                "(the A/B budget): A/A calibration needs both sides every round; measure with "
                "--perf-ab-full (`tilegate ab-noise --measure N` does)"
            )
        rows = run.rows
        changed = [
            k for k, b in run.base_rows.items() if k in rows and rows[k].code_hash != b.code_hash
        ]
        if changed:
            raise InputError(
                f"results {run.path} is not an A/A run: the compiled code differs for "
                f"{listing(changed)}; measure with REF = the head (`--ab HEAD`)"
            )
        for key in run.base_rows:
            pair = pair_of(run, key)
            if pair is not None:
                per_key.setdefault(key, []).append(float(np.median(per_round(run, *pair))))
                # two processes: the host verdict's unit is a pair of worker processes
                hosts, ratio = on_host(pair[0], pair[1]), hostprocs.run_ratio(*pair)
                if ratio is None and hosts is not None:
                    ratio = float(np.median(per_round(run, *hosts)))
                if ratio is not None:
                    per_key.setdefault(host_key(key), []).append(ratio)
    return per_key


def _noise_rows(per_key: Mapping[str, list[float]], policy: ABPolicy) -> dict[str, NoiseRow]:
    """Each case's noise and tolerance from its A/A ratios (POOLED where it has too few)."""
    noise_of = {
        key: stats.rms_upper_bound([r - 1.0 for r in ratios], policy.noise_confidence)
        for key, ratios in per_key.items()
    }
    own = {
        key: (HOST_POLICY if key.endswith(HOST) else policy).tolerance(noise_of[key])
        for key in per_key
    }
    # A case seen in fewer than MIN_NOISE_RUNS runs (a default-profile case beside quick runs)
    # has a spread that says too little: it gets at least the largest tolerance of the cases
    # that were seen often enough, or the ceiling when none was.
    often = [
        (k.endswith(HOST), t.value) for k, t in own.items() if len(per_key[k]) >= MIN_NOISE_RUNS
    ]
    pooled = {
        host: max(
            (v for h, v in often if h == host), default=(HOST_POLICY if host else policy).ceiling
        )
        for host in (False, True)
    }
    rows = {}
    for key, ratios in sorted(per_key.items()):
        spread, tol, least = max(abs(r - 1.0) for r in ratios), own[key], pooled[key.endswith(HOST)]
        value, source = tol.value, tol.bound
        if len(ratios) < MIN_NOISE_RUNS and tol.value < least:
            value, source = least, POOLED
        rows[key] = NoiseRow(key, tuple(ratios), spread, value, source, noise_of[key])
    return rows


def build_noise(runs: Sequence[Run], out: Path, policy: ABPolicy = ABPolicy()) -> Noise:
    """The noise file from A/A runs (REF = HEAD); InputError for anything that is not A/A."""
    rows = _noise_rows(_aa_ratios(runs), policy)
    env = runs[0].env
    provenance = provenance_of(runs)
    return Noise(
        out, MappingProxyType(gpu_json(env.gpu)), MappingProxyType(provenance), policy, rows
    )


def noise_json(noise: Noise) -> dict[str, Any]:
    """The noise file's JSON (tilegate.store.files writes it)."""
    rows = {
        k: {
            "run_ratios": [round(r, 5) for r in row.run_ratios],
            "spread": round(row.spread, 5),
            "noise": round(row.noise, 5),
            "tolerance": round(row.tolerance, 4),
            "source": row.source,
        }
        for k, row in noise.rows.items()
    }
    return noise.json_of(("schema", NOISE_SCHEMA), policy=noise.policy.as_json(), rows=rows)


def parse_noise(data: Any, path: Path) -> Noise:
    """Validate a noise file's JSON; InputError naming the file (and row) on any problem."""
    where = f"A/B noise file {path}"
    if not isinstance(data, dict) or data.get("schema") != NOISE_SCHEMA:
        raise InputError(
            f"{where} is not a tilegate A/B noise file (schema {NOISE_SCHEMA}); "
            "re-record it with `tilegate ab-noise --measure 4`"
        )
    gpu, rows_raw = data.get("gpu"), data.get("rows")
    if not isinstance(gpu, dict) or not isinstance(gpu.get("slug"), str):
        raise InputError(f"{where}: gpu.slug is missing")
    if not isinstance(rows_raw, dict):
        raise InputError(f"{where}: rows must be an object of case id -> noise")
    policy = ABPolicy.from_json(data.get("policy", {}), where)
    rows = {}
    for key, raw in rows_raw.items():
        ok = (
            isinstance(raw, dict)
            and isinstance(raw.get("run_ratios"), list)
            and all(is_finite_number(r) and r > 0 for r in raw["run_ratios"])
            and is_finite_number(raw.get("spread"))
            and is_finite_number(raw.get("tolerance"))
            and 0 < raw["tolerance"] < 1
            and is_finite_number(raw.get("noise"))
        )
        if not ok:
            raise InputError(
                f"{where}, row {key}: needs run_ratios, spread, a tolerance in (0, 1) and a "
                "finite noise; re-record it with `tilegate ab-noise --measure 4`"
            )
        ratios, source = tuple(map(float, raw["run_ratios"])), str(raw.get("source", ""))
        spread, tolerance, noise = (float(raw[k]) for k in ("spread", "tolerance", "noise"))
        rows[key] = NoiseRow(key, ratios, spread, tolerance, source, noise)
    raw_prov = data.get("provenance")
    provenance: dict[str, Any] = raw_prov if isinstance(raw_prov, dict) else {}
    if not isinstance(provenance.get("runs") or [], list):
        raise InputError(f"{where}: provenance.runs must be the list of A/A runs it came from")
    return Noise(path, MappingProxyType(gpu), MappingProxyType(provenance), policy, rows)
