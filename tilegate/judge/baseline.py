"""Baselines: one reviewed JSON file per GPU model, built from repeated runs, never overwritten silently.

File: ``baselines/<gpu-slug>.json`` (the slug is ``machine_info.tilegate.gpu.slug``), schema
version 1 (docs/architecture.md, "Baselines", shows it). Written by `tilegate rebaseline` with
sorted keys, 2-space indent and number lists on one line: a rebaseline is a reviewable diff.
This module is the model and its JSON; `tilegate.judge.rebaselining` builds one from runs,
`tilegate.judge.policy` holds the policy that derives each row's tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tilegate import __version__
from tilegate.errors import InputError
from tilegate.fileio import is_finite_number, is_finite_positive
from tilegate.judge.memory import Memory
from tilegate.judge.memory import parse as parse_memory
from tilegate.judge.policy import Policy
from tilegate.judge.results import SMOKE_SLUG, GpuFile

SCHEMA_VERSION = 1
DEFAULT_DIR = Path("baselines")


def baseline_path(slug: str, directory: str | Path = DEFAULT_DIR) -> Path:
    return Path(directory) / f"{slug}.json"


def how_to_create(
    slug: str, path: Path, results: Path = Path(".perf/results.json"), profile: str | None = None
) -> str:
    """How to get a baseline at `path`: commands that work as printed where `results` (a run of
    `profile`) was measured."""
    given = f" --profile {profile}" if profile else ""
    if slug == SMOKE_SLUG:
        return (
            "A smoke run (CPU interpreter) proves the pipeline; its times mean nothing and no smoke baseline is "
            f"committed. Run `tilegate perf{given or ' --profile smoke'} --report-only` (no baseline needed), or "
            f"build a throwaway one from this run: `tilegate rebaseline {results} --out {path}`."
        )
    return (
        f"Create it on a {slug} machine with `tilegate rebaseline --measure 3{given} --out {path}` (measures "
        "the suite 3 times, then builds it from the runs), review the printed diff and commit it."
    )


@dataclass(frozen=True)
class BaselineRow:
    key: str
    variant: str
    params: Mapping[str, Any]  # the case's parameters (tilegate.judge.results.Row.params)
    group: str
    median_s: float
    run_medians_s: tuple[float, ...]
    drift: float
    drift_source: str
    tolerance: float
    tolerance_source: str
    too_noisy: bool
    samples_s: tuple[float, ...]
    n_samples: int
    measured: Mapping[str, str | None]
    twin: str | None = None
    ratio_to_twin: float | None = None
    ratio_to_twin_runs: tuple[float, ...] = ()
    tflops: float | None = None
    # what tells a row's own change from a shift of the whole machine (judge.shift)
    ratio_to_reference: float | None = None
    code_hash: str | None = None
    # each distinct pick of its runs, `kernel: BK=64, num_warps=4 (3 runs)` (judge.autotune)
    autotune: tuple[str, ...] = ()
    memory: Memory | None = None


@dataclass(frozen=True)
class Bound:
    """One check of an expectation: at `value` of its axis, `faster` takes at most max_ratio of
    `than`'s time."""

    value: Any
    max_ratio: float
    measured: tuple[float, ...]  # the ratio in each rebaseline run


@dataclass(frozen=True)
class Expectation:
    """`faster` takes at most `max_ratio` of the time of `than`, measured in the same run, at
    each value of axis `per`, where the other parameters are `where`."""

    id: str
    faster: str
    than: str
    where: Mapping[str, Any]
    per: str
    bounds: tuple[Bound, ...]  # "checks" in the JSON

    def at(self, value: Any) -> dict[str, Any]:
        """The parameters of its check at `value`."""
        return {**self.where, self.per: value}


@dataclass(frozen=True)
class Baseline(GpuFile):
    policy: Policy
    rows: Mapping[str, BaselineRow]
    expectations: tuple[Expectation, ...]

    @property
    def mode(self) -> str:
        return str(self.provenance.get("mode", "gpu"))


def expectation_id(faster: str, than: str, where: Mapping[str, Any]) -> str:
    return "-".join([f"{faster}-beats-{than}", *(str(v) for v in where.values())])


def _sig(x: float, digits: int = 6) -> float:
    """Round to significant digits: stable numbers that do not churn the diff in the last bits."""
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def _row_json(row: BaselineRow) -> dict[str, Any]:
    data: dict[str, Any] = {
        "variant": row.variant,
        "group": row.group,
        "params": dict(row.params),
        "median_s": _sig(row.median_s),
        "run_medians_s": [_sig(x) for x in row.run_medians_s],
        "drift": round(row.drift, 5),
        "drift_source": row.drift_source,
        "tolerance": round(row.tolerance, 4),
        "tolerance_source": row.tolerance_source,
        "too_noisy": row.too_noisy,
        "samples_s": [_sig(x, 5) for x in row.samples_s],
        "n_samples": row.n_samples,
        "measured": dict(row.measured),
    }
    if row.twin is not None:
        data["twin"] = row.twin
        data["ratio_to_twin"] = (
            round(row.ratio_to_twin, 4) if row.ratio_to_twin is not None else None
        )
        data["ratio_to_twin_runs"] = [round(r, 4) for r in row.ratio_to_twin_runs]
    if row.tflops is not None:
        data["tflops"] = round(row.tflops, 1)
    if row.autotune:
        data["autotune"] = list(row.autotune)
    if row.ratio_to_reference is not None:
        data["ratio_to_reference"] = round(row.ratio_to_reference, 5)
    if row.code_hash is not None:
        data["code_hash"] = row.code_hash
    if row.memory is not None:
        data["memory"] = row.memory.as_json()
    return data


def to_json(b: Baseline) -> dict[str, Any]:
    return b.json_of(
        ("schema_version", SCHEMA_VERSION),
        policy=b.policy.as_json(),
        rows={key: _row_json(row) for key, row in b.rows.items()},
        expectations=[
            {
                "id": e.id,
                "faster": e.faster,
                "than": e.than,
                **e.where,
                "checks": [
                    {
                        e.per: c.value,
                        "max_ratio": round(c.max_ratio, 3),
                        "measured": [round(m, 4) for m in c.measured],
                    }
                    for c in sorted(e.bounds, key=lambda c: c.value)
                ],
            }
            for e in sorted(b.expectations, key=lambda e: e.id)
        ],
    )


def _need(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    v = d.get(key)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        raise InputError(
            f"{where}: field {key!r} is missing or not {getattr(kind, '__name__', kind)}"
        )
    return v


def _positive_list(d: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    v = d.get(key)
    if not isinstance(v, list) or not v or not all(is_finite_number(x) and x > 0 for x in v):
        raise InputError(f"{where}: {key!r} must be a non-empty list of positive numbers")
    return tuple(float(x) for x in v)


def _parse_row(key: str, raw: Any, where_file: str) -> BaselineRow:
    where = f"{where_file}, row {key}"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not an object")
    median_s = raw.get("median_s")
    if not is_finite_number(median_s) or median_s <= 0:
        raise InputError(f"{where}: median_s is {median_s!r}; expected a positive number")
    tol = raw.get("tolerance")
    if not is_finite_number(tol) or not 0 < tol < 1:
        raise InputError(f"{where}: tolerance is {tol!r}; expected a fraction in (0, 1)")
    ratio = raw.get("ratio_to_twin")
    if ratio is not None and (not is_finite_number(ratio) or ratio <= 0):
        raise InputError(f"{where}: ratio_to_twin is {ratio!r}")
    measured: dict[str, Any] = raw["measured"] if isinstance(raw.get("measured"), dict) else {}
    params = raw.get("params")
    if params is None:  # written before "params": the matmul benchmark's, flat
        kinds = {"dtype": str, "layout": str, "M": int, "N": int, "K": int}
        params = {k: _need(raw, k, kind, where) for k, kind in kinds.items()}
    ok = isinstance(params, dict) and all(isinstance(v, (str, int, float)) for v in params.values())
    if not ok or not params:
        raise InputError(f"{where}: params must map each parameter to a string or number")
    group = raw.get("group")
    if group is None and "params" not in raw:
        group = f"{params['dtype']}-{params['layout']}-K{params['K']}"
    if not isinstance(group, str) or not group:
        raise InputError(f"{where}: field 'group' is missing or not str")
    return BaselineRow(
        key=key,
        variant=_need(raw, "variant", str, where),
        params=MappingProxyType(dict(params)),
        group=group,
        median_s=float(median_s),
        run_medians_s=_positive_list(raw, "run_medians_s", where),
        drift=float(raw["drift"])
        if is_finite_number(raw.get("drift")) and raw["drift"] >= 0
        else _bad(where, "drift"),
        drift_source=str(raw.get("drift_source", "")),
        tolerance=float(tol),
        tolerance_source=str(raw.get("tolerance_source", "")),
        too_noisy=bool(raw.get("too_noisy", False)),
        samples_s=_positive_list(raw, "samples_s", where),
        n_samples=_count(raw, "n_samples", where, default=len(raw["samples_s"])),
        measured=MappingProxyType(
            {str(k): (None if v is None else str(v)) for k, v in measured.items()}
        ),
        twin=raw.get("twin") if isinstance(raw.get("twin"), str) else None,
        ratio_to_twin=float(ratio) if ratio is not None else None,
        ratio_to_twin_runs=tuple(
            float(r) for r in raw.get("ratio_to_twin_runs") or [] if is_finite_number(r)
        ),
        tflops=float(raw["tflops"]) if is_finite_number(raw.get("tflops")) else None,
        ratio_to_reference=_optional_positive(raw, "ratio_to_reference", where),
        code_hash=raw.get("code_hash") if isinstance(raw.get("code_hash"), str) else None,
        autotune=tuple(str(a) for a in raw.get("autotune") or [] if isinstance(a, str)),
        memory=parse_memory(where, raw.get("memory")),
    )


def _count(raw: Mapping[str, Any], key: str, where: str, *, default: int) -> int:
    v = raw.get(key)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError(f"{where}: {key} is {v!r}; expected a positive integer")
    return v


def _optional_positive(raw: Mapping[str, Any], key: str, where: str) -> float | None:
    v = raw.get(key)
    if v is None:
        return None
    if not is_finite_number(v) or v <= 0:
        raise InputError(f"{where}: {key} is {v!r}; expected a positive number")
    return float(v)


def _bad(where: str, key: str) -> float:
    raise InputError(f"{where}: {key!r} is missing or not a non-negative number")


def _parse_expectation(i: int, raw: Any, where_file: str) -> Expectation:
    where = f"{where_file}, expectations[{i}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not an object")
    eid = _need(raw, "id", str, where)
    where = f"{where_file}, expectation {eid}"
    checks = []
    axes = set()
    for c in _need(raw, "checks", list, where):
        others = [k for k in c if k not in ("max_ratio", "measured")] if isinstance(c, dict) else []
        if (
            len(others) != 1
            or not isinstance(c[others[0]], (str, int, float))
            or not is_finite_number(c.get("max_ratio"))
            or c["max_ratio"] <= 0
        ):
            raise InputError(
                f"{where}: every check needs the value of its axis (e.g. K) and a positive "
                f"max_ratio, got {c!r}"
            )
        axis = others[0]
        axes.add(axis)
        measured = c.get("measured") or []
        if not isinstance(measured, list) or not all(is_finite_positive(m) for m in measured):
            raise InputError(
                f"{where}, check {axis}={c[axis]}: measured must be a list of the positive ratios "
                f"measured at rebaseline, got {measured!r}"
            )
        checks.append(Bound(c[axis], float(c["max_ratio"]), tuple(map(float, measured))))
    if len(axes) > 1:
        raise InputError(f"{where}: its checks run along several axes {sorted(axes)}; one only")
    kinds = {isinstance(b.value, str) for b in checks}
    if len(kinds) > 1:  # they are sorted by value: an axis's values are all numbers or all text
        raise InputError(
            f"{where}: its checks mix numbers and strings as values of "
            f"{next(iter(axes))}: {[b.value for b in checks]}"
        )
    at = {k: v for k, v in raw.items() if k not in ("id", "faster", "than", "checks")}
    if not all(isinstance(v, (str, int, float)) for v in at.values()):
        raise InputError(f"{where}: its parameters {at} must be strings or numbers")
    return Expectation(
        id=eid,
        faster=_need(raw, "faster", str, where),
        than=_need(raw, "than", str, where),
        where=MappingProxyType(at),
        per=axes.pop() if axes else "",
        bounds=tuple(sorted(checks, key=lambda c: c.value)),
    )


_PROVENANCE_KINDS: dict[str, type | tuple[type, ...]] = {
    "software": dict,
    "profiles": list,
    "runs": list,
    "mode": str,
    "timer": str,
    "l2_flush": bool,
    "driver": str,
    "cuda": str,
    "harness_version": str,
    "created": str,
    "M": int,
    "N": int,
    "fixed": dict,
    "rounds": int,
}


def _check_provenance(prov: Mapping[str, Any], where: str) -> None:
    """The provenance fields the gate compares and reports have their kind (or are null)."""
    for key, kind in _PROVENANCE_KINDS.items():
        v = prov.get(key)
        if v is not None and (not isinstance(v, kind) or (isinstance(v, bool) and kind is int)):
            raise InputError(
                f"{where}: provenance.{key} is {v!r}; expected {getattr(kind, '__name__', kind)} or "
                "null. Restore the baseline from git or rebaseline"
            )
    if not all(isinstance(p, str) for p in prov.get("profiles") or []):
        raise InputError(f"{where}: provenance.profiles must be a list of profile names")
    if not all(isinstance(v, str) or v is None for v in (prov.get("software") or {}).values()):
        raise InputError(f"{where}: provenance.software must map a package to its version")


def parse_baseline(data: Any, p: Path) -> Baseline:
    """Validate a baseline's JSON; InputError naming the file (and row) on any problem."""
    where = f"baseline {p}"
    remedy = f"restore it from git (`git checkout -- {p}`) or record a new one with "
    remedy += "`tilegate rebaseline --measure 3` on that GPU"
    if not isinstance(data, dict):
        kind = "a JSON array" if isinstance(data, list) else f"a JSON {type(data).__name__}"
        raise InputError(
            f"{where} is not a tilegate baseline ({kind}, not an object of gpu, rows, ...): {remedy}"
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{where} has schema_version {version!r}; this tilegate ({__version__}) reads version "
            f"{SCHEMA_VERSION}. Use the tilegate that wrote it, or rebaseline with this one."
        )
    gpu = _need(data, "gpu", dict, where)
    if not isinstance(gpu.get("slug"), str) or not gpu["slug"]:
        raise InputError(f"{where}: gpu.slug is missing")
    provenance = _need(data, "provenance", dict, where)
    _check_provenance(provenance, where)
    policy = Policy.from_json(_need(data, "policy", dict, where), f"{where} policy")
    rows_raw = _need(data, "rows", dict, where)
    if not rows_raw:
        raise InputError(f"{where} has no rows, so it can judge nothing: {remedy}")
    rows = {key: _parse_row(key, raw, where) for key, raw in rows_raw.items()}
    exps = tuple(
        _parse_expectation(i, e, where)
        for i, e in enumerate(_need(data, "expectations", list, where))
    )
    recorded = (MappingProxyType(dict(gpu)), MappingProxyType(dict(provenance)))
    return Baseline(p, *recorded, policy=policy, rows=MappingProxyType(rows), expectations=exps)
