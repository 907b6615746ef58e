"""Baselines: one reviewed JSON file per GPU model, built from repeated runs, never overwritten silently.

File: ``baselines/<gpu-slug>.json`` (the slug is ``machine_info.tilegate.gpu.slug``). Written by
`tilegate rebaseline` with sorted keys, 2-space indent and number lists on one line, so that a
rebaseline reads as a reviewable diff. Schema version 1::

    {
      "schema_version": 1,
      "gpu": {"name": "NVIDIA H200", "slug": "nvidia-h200", "sm_count": 132,
              "capability": [9, 0], "memory_gib": 139.8},
      "provenance": {                      # the environment of the latest rebaseline
        "created": "<latest run's datetime>", "tool": "tilegate 0.1.0",
        "mode": "gpu", "profiles": ["quick"], "harness_version": "0.1.0",
        "driver": "...", "cuda": "13.0", "software": {"torch": "...", "triton": "...", "python": "..."},
        "M": 16384, "N": 16384, "rounds": 40, "timer": "cuda-event", "l2_flush": true,
        "runs": [{"file": "rebaseline-1.json", "datetime": "...", "commit": "...", "dirty": false,
                  "profile": "quick", "throttled": false}],
        "tolerances_file": "baselines/tolerances.toml"
      },
      "policy": {"multiple": 3.0, "floor": 0.04, "ceiling": 0.08, "alpha": 0.01, ...},
      "rows": {
        "<case id>": {
          "variant": "xtile_persistent", "dtype": "fp16", "layout": "nt", "M": 16384, "N": 16384, "K": 128,
          "median_s": 0.0003105,          # median of the per-run medians
          "run_medians_s": [...],         # one per rebaseline run
          "drift": 0.0061,                # spread of the run medians on a 3-run range scale
          "drift_source": "3 runs",       # or "1 run (95% CI of the median)"
          "tolerance": 0.04,              # the row's allowed relative slowdown
          "tolerance_source": "floor",    # noise | floor | ceiling, or "override [variant=...]: <reason>"
          "too_noisy": false,             # needed more than the ceiling
          "samples_s": [...],             # quantile summary of the pooled rounds (Mann-Whitney)
          "n_samples": 120,               # how many rounds that summary stands for
          "twin": "swizzle_persistent", "ratio_to_twin": 0.7254, "ratio_to_twin_runs": [...],
          "tflops": 226.7,
          "measured": {"date": "...", "commit": "...", "triton": "...", "torch": "..."}
        }
      },
      "expectations": [                    # relations between variants, checked on same-run ratios
        {"id": "xtile_persistent-beats-swizzle_persistent-fp16-nt",
         "faster": "xtile_persistent", "than": "swizzle_persistent", "dtype": "fp16", "layout": "nt",
         "checks": [{"K": 128, "max_ratio": 0.762, "measured": [0.7245, 0.7254, 0.7261]}, ...]}
      ]
    }

Tolerances: ``clamp(multiple x drift, floor, ceiling)`` per row, with reviewed overrides in
``baselines/tolerances.toml`` (its own comments document the format). An expectation check at
K exists where cross-tile beat its twin by a clear margin in *every* rebaseline run
(ratio <= win_below); its max_ratio is the worst measured ratio plus `ratio_slack`, capped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeGuard

from tilegate import __version__, stats
from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, read_json
from tilegate.results import SMOKE_SLUG, Row, Run

SCHEMA_VERSION = 1
DEFAULT_DIR = Path("baselines")
DEFAULT_TOLERANCES = DEFAULT_DIR / "tolerances.toml"


def baseline_path(slug: str, directory: str | Path = DEFAULT_DIR) -> Path:
    return Path(directory) / f"{slug}.json"


def how_to_create(slug: str, path: Path) -> str:
    if slug == SMOKE_SLUG:
        return (
            "A smoke run (CPU interpreter) proves the pipeline; its times mean nothing and no smoke baseline is "
            f"committed. Use --report-only, or build a throwaway one: `tilegate rebaseline RESULTS --out {path}`."
        )
    return (
        f"Create it on a {slug} machine with `nox -s rebaseline` (measures the suite several times, "
        f"then runs `tilegate rebaseline RESULTS... --out {path}`), review the printed diff and commit it."
    )


# --- policy and overrides (baselines/tolerances.toml) ---------------------------------------------


@dataclass(frozen=True)
class Policy:
    """How noise becomes tolerances and expectations; stored in the baseline it produced."""

    multiple: float = 3.0  # tolerance = multiple x drift of the run medians ...
    floor: float = 0.04  # ... at least this (relative slowdown) ...
    ceiling: float = 0.08  # ... at most this; a row that needs more is reported too noisy
    alpha: float = 0.01  # one-sided Mann-Whitney U level for "slower" / "faster"
    unsure_band: float = (
        0.2  # significant and within this fraction below the tolerance: measure more
    )
    quantiles: int = 41  # baseline samples kept per row (quantile summary of pooled rounds)
    win_below: float = 0.97  # an expectation needs ratio <= this in every rebaseline run
    ratio_slack: float = 0.05  # max_ratio = worst measured ratio x (1 + slack) ...
    ratio_cap: float = 0.99  # ... capped here, so an expectation always means "wins"
    reference_variants: tuple[str, ...] = ("torch",)  # reported, never fail the gate

    def as_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["reference_variants"] = list(self.reference_variants)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> Policy:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise InputError(f"{where}: unknown policy key(s) {unknown}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name == "reference_variants":
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise InputError(f"{where}: reference_variants must be a list of variant names")
                values[name] = tuple(value)
            elif name == "quantiles":
                if not isinstance(value, int) or isinstance(value, bool) or value < 5:
                    raise InputError(f"{where}: quantiles must be an integer >= 5, got {value!r}")
                values[name] = value
            else:
                if not _number(value) or not 0 < value < (100 if name == "multiple" else 1):
                    raise InputError(f"{where}: {name} = {value!r} is out of range")
                values[name] = float(value)
        policy = cls(**values)
        if policy.floor > policy.ceiling:
            raise InputError(f"{where}: floor {policy.floor} > ceiling {policy.ceiling}")
        return policy


_MATCH_KEYS = ("variant", "dtype", "layout", "K")
_SET_KEYS = ("tolerance", "floor", "ceiling", "multiple")


@dataclass(frozen=True)
class Override:
    """One [[override]] of tolerances.toml: which rows (all given keys must match), what to set, why."""

    reason: str
    variant: str | None = None
    dtype: str | None = None
    layout: str | None = None
    K: tuple[int, ...] | None = None
    tolerance: float | None = None
    floor: float | None = None
    ceiling: float | None = None
    multiple: float | None = None

    def matches(self, variant: str, dtype: str, layout: str, K: int) -> bool:
        return (
            (self.variant is None or self.variant == variant)
            and (self.dtype is None or self.dtype == dtype)
            and (self.layout is None or self.layout == layout)
            and (self.K is None or K in self.K)
        )

    @property
    def specificity(self) -> int:
        return sum(getattr(self, k) is not None for k in _MATCH_KEYS)

    def describe(self) -> str:
        sel = ", ".join(
            f"{k}={'/'.join(map(str, v)) if isinstance(v, tuple) else v}"
            for k in _MATCH_KEYS
            if (v := getattr(self, k)) is not None
        )
        return f"override [{sel}]: {self.reason}"


@dataclass(frozen=True)
class Tolerances:
    policy: Policy = field(default_factory=Policy)
    overrides: tuple[Override, ...] = ()
    source: str = "built-in defaults"

    def override_for(self, variant: str, dtype: str, layout: str, K: int) -> Override | None:
        """The most specific matching override; among equals, the last in the file."""
        best: Override | None = None
        for ov in self.overrides:
            if ov.matches(variant, dtype, layout, K) and (
                best is None or ov.specificity >= best.specificity
            ):
                best = ov
        return best

    def tolerance(
        self, variant: str, dtype: str, layout: str, K: int, drift: float
    ) -> tuple[float, str, bool]:
        """(tolerance, where it came from, too noisy) for one row."""
        p = self.policy
        ov = self.override_for(variant, dtype, layout, K)
        if ov is not None and ov.tolerance is not None:
            return ov.tolerance, ov.describe(), p.multiple * drift > ov.tolerance
        floor = ov.floor if ov and ov.floor is not None else p.floor
        ceiling = ov.ceiling if ov and ov.ceiling is not None else p.ceiling
        multiple = ov.multiple if ov and ov.multiple is not None else p.multiple
        tol = stats.derive_tolerance(
            drift, multiple=multiple, floor=floor, ceiling=min(max(ceiling, floor), 1.0)
        )
        source = tol.bound if ov is None else f"{tol.bound}, {ov.describe()}"
        return tol.value, source, tol.too_noisy


def _number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load_tolerances(path: str | Path | None, *, required: bool = True) -> Tolerances:
    """Read tolerances.toml; without a file (and not required) the built-in policy applies."""
    if path is None:
        return Tolerances()
    p = Path(path)
    if not p.is_file():
        if required:
            raise InputError(f"tolerances file {p} does not exist")
        return Tolerances()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError as err:
            raise InputError(f"reading {p} needs Python >= 3.11 or the `tomli` package") from err
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"tolerances file {p} is not valid TOML: {err}") from err
    unknown = sorted(set(data) - {"policy", "override"})
    if unknown:
        raise InputError(
            f"tolerances file {p}: unknown section(s) {unknown}; expected [policy] and [[override]]"
        )
    policy = Policy.from_json(data.get("policy", {}), f"tolerances file {p} [policy]")
    overrides = []
    for i, raw in enumerate(data.get("override", [])):
        where = f"tolerances file {p}, override #{i + 1}"
        if not isinstance(raw, dict):
            raise InputError(f"{where}: expected a table")
        bad = sorted(set(raw) - {*_MATCH_KEYS, *_SET_KEYS, "reason"})
        if bad:
            raise InputError(
                f"{where}: unknown key(s) {bad}; match on {list(_MATCH_KEYS)}, set {list(_SET_KEYS)}"
            )
        if not isinstance(raw.get("reason"), str) or not raw["reason"].strip():
            raise InputError(
                f"{where}: every override needs a `reason` (it is a reviewed decision)"
            )
        if not any(k in raw for k in _MATCH_KEYS):
            raise InputError(f"{where}: matches every row; change [policy] instead")
        if not any(k in raw for k in _SET_KEYS):
            raise InputError(f"{where}: sets nothing; give one of {list(_SET_KEYS)}")
        for k in _SET_KEYS:
            if k in raw and (
                not _number(raw[k]) or not 0 < raw[k] < (100 if k == "multiple" else 1)
            ):
                raise InputError(f"{where}: {k} = {raw[k]!r} is out of range")
        for k in ("variant", "dtype", "layout"):
            if k in raw and not isinstance(raw[k], str):
                raise InputError(f"{where}: {k} must be a string")
        ks = raw.get("K")
        if ks is not None:
            ks = [ks] if isinstance(ks, int) else ks
            if not isinstance(ks, list) or not all(isinstance(k, int) and k > 0 for k in ks):
                raise InputError(f"{where}: K must be a positive integer or a list of them")
        overrides.append(
            Override(
                reason=raw["reason"].strip(),
                variant=raw.get("variant"),
                dtype=raw.get("dtype"),
                layout=raw.get("layout"),
                K=tuple(ks) if ks is not None else None,
                **{k: float(raw[k]) for k in _SET_KEYS if k in raw},
            )
        )
    return Tolerances(policy=policy, overrides=tuple(overrides), source=str(p))


# --- the baseline model ------------------------------------------------------------------------


@dataclass(frozen=True)
class BaselineRow:
    key: str
    variant: str
    dtype: str
    layout: str
    M: int
    N: int
    K: int
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

    @property
    def group(self) -> tuple[str, str, int]:
        return (self.dtype, self.layout, self.K)


@dataclass(frozen=True)
class Check:
    K: int
    max_ratio: float
    measured: tuple[float, ...]  # the ratio in each rebaseline run


@dataclass(frozen=True)
class Expectation:
    """`faster` takes at most `max_ratio` of the time of `than`, measured in the same run, at each K."""

    id: str
    faster: str
    than: str
    dtype: str
    layout: str
    checks: tuple[Check, ...]

    def check_at(self, K: int) -> Check | None:
        return next((c for c in self.checks if c.K == K), None)


@dataclass(frozen=True)
class Baseline:
    path: Path
    gpu: Mapping[str, Any]
    provenance: Mapping[str, Any]
    policy: Policy
    rows: Mapping[str, BaselineRow]
    expectations: tuple[Expectation, ...]

    @property
    def slug(self) -> str:
        return str(self.gpu["slug"])

    @property
    def mode(self) -> str:
        return str(self.provenance.get("mode", "gpu"))

    def find(self, variant: str, dtype: str, layout: str, K: int) -> BaselineRow | None:
        for row in self.rows.values():
            if (row.variant, row.dtype, row.layout, row.K) == (variant, dtype, layout, K):
                return row
        return None


def expectation_id(faster: str, than: str, dtype: str, layout: str) -> str:
    return f"{faster}-beats-{than}-{dtype}-{layout}"


# --- JSON in and out ---------------------------------------------------------------------------


def _sig(x: float, digits: int = 6) -> float:
    """Round to significant digits: stable numbers that do not churn the diff in the last bits."""
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def _row_json(row: BaselineRow) -> dict[str, Any]:
    data: dict[str, Any] = {
        "variant": row.variant,
        "dtype": row.dtype,
        "layout": row.layout,
        "M": row.M,
        "N": row.N,
        "K": row.K,
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
    return data


def to_json(b: Baseline) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "gpu": dict(b.gpu),
        "provenance": dict(b.provenance),
        "policy": b.policy.as_json(),
        "rows": {key: _row_json(row) for key, row in b.rows.items()},
        "expectations": [
            {
                "id": e.id,
                "faster": e.faster,
                "than": e.than,
                "dtype": e.dtype,
                "layout": e.layout,
                "checks": [
                    {
                        "K": c.K,
                        "max_ratio": round(c.max_ratio, 3),
                        "measured": [round(m, 4) for m in c.measured],
                    }
                    for c in sorted(e.checks, key=lambda c: c.K)
                ],
            }
            for e in sorted(b.expectations, key=lambda e: e.id)
        ],
    }


def save_baseline(path: str | Path, b: Baseline) -> None:
    """Write atomically: readers see the old baseline or the new one, never half of one."""
    atomic_write_json(path, to_json(b), inline_scalar_lists=True)


def _need(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    v = d.get(key)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool):
        raise InputError(
            f"{where}: field {key!r} is missing or not {getattr(kind, '__name__', kind)}"
        )
    return v


def _positive_list(d: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    v = d.get(key)
    if not isinstance(v, list) or not v or not all(_number(x) and x > 0 for x in v):
        raise InputError(f"{where}: {key!r} must be a non-empty list of positive numbers")
    return tuple(float(x) for x in v)


def _parse_row(key: str, raw: Any, where_file: str) -> BaselineRow:
    where = f"{where_file}, row {key}"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not an object")
    median_s = raw.get("median_s")
    if not _number(median_s) or median_s <= 0:
        raise InputError(f"{where}: median_s is {median_s!r}; expected a positive number")
    tol = raw.get("tolerance")
    if not _number(tol) or not 0 < tol < 1:
        raise InputError(f"{where}: tolerance is {tol!r}; expected a fraction in (0, 1)")
    ratio = raw.get("ratio_to_twin")
    if ratio is not None and (not _number(ratio) or ratio <= 0):
        raise InputError(f"{where}: ratio_to_twin is {ratio!r}")
    measured: dict[str, Any] = raw["measured"] if isinstance(raw.get("measured"), dict) else {}
    return BaselineRow(
        key=key,
        variant=_need(raw, "variant", str, where),
        dtype=_need(raw, "dtype", str, where),
        layout=_need(raw, "layout", str, where),
        M=_need(raw, "M", int, where),
        N=_need(raw, "N", int, where),
        K=_need(raw, "K", int, where),
        median_s=float(median_s),
        run_medians_s=_positive_list(raw, "run_medians_s", where),
        drift=float(raw["drift"])
        if _number(raw.get("drift")) and raw["drift"] >= 0
        else _bad(where, "drift"),
        drift_source=str(raw.get("drift_source", "")),
        tolerance=float(tol),
        tolerance_source=str(raw.get("tolerance_source", "")),
        too_noisy=bool(raw.get("too_noisy", False)),
        samples_s=_positive_list(raw, "samples_s", where),
        n_samples=int(raw.get("n_samples") or len(raw["samples_s"])),
        measured=MappingProxyType(
            {str(k): (None if v is None else str(v)) for k, v in measured.items()}
        ),
        twin=raw.get("twin") if isinstance(raw.get("twin"), str) else None,
        ratio_to_twin=float(ratio) if ratio is not None else None,
        ratio_to_twin_runs=tuple(
            float(r) for r in raw.get("ratio_to_twin_runs") or [] if _number(r)
        ),
        tflops=float(raw["tflops"]) if _number(raw.get("tflops")) else None,
    )


def _bad(where: str, key: str) -> float:
    raise InputError(f"{where}: {key!r} is missing or not a non-negative number")


def _parse_expectation(i: int, raw: Any, where_file: str) -> Expectation:
    where = f"{where_file}, expectations[{i}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where}: not an object")
    eid = _need(raw, "id", str, where)
    where = f"{where_file}, expectation {eid}"
    checks = []
    for c in _need(raw, "checks", list, where):
        if (
            not isinstance(c, dict)
            or not isinstance(c.get("K"), int)
            or not _number(c.get("max_ratio"))
            or c["max_ratio"] <= 0
        ):
            raise InputError(
                f"{where}: every check needs an integer K and a positive max_ratio, got {c!r}"
            )
        checks.append(
            Check(
                K=c["K"],
                max_ratio=float(c["max_ratio"]),
                measured=tuple(float(m) for m in c.get("measured") or []),
            )
        )
    return Expectation(
        id=eid,
        faster=_need(raw, "faster", str, where),
        than=_need(raw, "than", str, where),
        dtype=_need(raw, "dtype", str, where),
        layout=_need(raw, "layout", str, where),
        checks=tuple(sorted(checks, key=lambda c: c.K)),
    )


def load_baseline(path: str | Path) -> Baseline:
    """Read and validate a baseline; every problem is an InputError naming the file (and row)."""
    p = Path(path)
    where = f"baseline {p}"
    data = read_json(p, "baseline")
    if not isinstance(data, dict):
        raise InputError(f"{where} is not a tilegate baseline (not a JSON object)")
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
    policy = Policy.from_json(_need(data, "policy", dict, where), f"{where} policy")
    rows_raw = _need(data, "rows", dict, where)
    if not rows_raw:
        raise InputError(f"{where} has no rows")
    rows = {key: _parse_row(key, raw, where) for key, raw in rows_raw.items()}
    exps = tuple(
        _parse_expectation(i, e, where)
        for i, e in enumerate(_need(data, "expectations", list, where))
    )
    return Baseline(
        path=p,
        gpu=MappingProxyType(dict(gpu)),
        provenance=MappingProxyType(dict(provenance)),
        policy=policy,
        rows=MappingProxyType(rows),
        expectations=exps,
    )


# --- rebaseline --------------------------------------------------------------------------------


def pair_ratio(row: Row, twin_row: Row) -> float:
    """row / twin_row measured in the same run: the suite's paired ratio when it is for this twin."""
    if row.twin == twin_row.variant and row.ratio_to_twin is not None:
        return row.ratio_to_twin
    return stats.paired_ratio(row.samples_s, twin_row.samples_s)


@dataclass(frozen=True)
class Rebaseline:
    """What `tilegate rebaseline` would write, why, and what it refuses without --accept-slower."""

    baseline: Baseline
    old: Baseline | None
    lines: tuple[str, ...]  # the reviewable diff, markdown-ish text
    warnings: tuple[str, ...]
    refusals: tuple[str, ...]  # a slower run must not become the baseline silently


def _same(runs: Sequence[Run], what: str, get: Any) -> Any:
    values = {r.path.name: get(r) for r in runs}
    distinct = set(map(repr, values.values()))
    if len(distinct) > 1:
        listing = ", ".join(f"{v!r} ({name})" for name, v in values.items())
        raise InputError(
            f"the runs differ in {what}: {listing}. A baseline is one environment: rebaseline from runs of one."
        )
    return next(iter(values.values()))


def _check_runs(runs: Sequence[Run]) -> None:
    for run in runs:
        if run.env.injected:
            raise InputError(
                f"results {run.path} ran with TEST-ONLY injections {list(run.env.injected)}; "
                "it cannot become a baseline"
            )
    _same(runs, "GPU model", lambda r: r.env.gpu.slug)
    _same(runs, "mode (gpu vs smoke)", lambda r: r.env.mode)
    _same(runs, "driver", lambda r: r.env.gpu.driver)
    _same(runs, "CUDA", lambda r: r.env.gpu.cuda)
    _same(runs, "software versions", lambda r: dict(r.env.software))
    _same(runs, "harness version", lambda r: r.env.harness_version)
    _same(runs, "L2 flush", lambda r: r.env.l2_flush)
    _same(runs, "timer", lambda r: r.env.timer)
    shapes: dict[str, tuple[int, int, Path]] = {}
    for run in runs:
        for row in run.rows.values():
            seen = shapes.setdefault(row.key, (row.M, row.N, run.path))
            if seen[:2] != (row.M, row.N):
                raise InputError(
                    f"row {row.key} is M={seen[0]}, N={seen[1]} in {seen[2]} but M={row.M}, N={row.N} "
                    f"in {run.path}; rebaseline from runs of one shape"
                )


def _measured_row(key: str, per_run: list[tuple[Run, Row]], tolerances: Tolerances) -> BaselineRow:
    first = per_run[0][1]
    run_medians = tuple(r.median_s for _, r in per_run)
    pooled = [s for _, r in per_run for s in r.samples_s]
    if len(per_run) >= 2:
        drift, source = stats.run_drift(run_medians), f"{len(per_run)} runs"
    else:
        drift, source = stats.single_run_drift(first.samples_s), "1 run (95% CI of the median)"
    tol, tol_source, noisy = tolerances.tolerance(
        first.variant, first.dtype, first.layout, first.K, drift
    )
    ratios = []
    if first.twin is not None:
        for run, row in per_run:
            twin_row = run.find(first.twin, row.dtype, row.layout, row.K)
            if twin_row is not None:
                ratios.append(pair_ratio(row, twin_row))
    tflops = [r.tflops for _, r in per_run if r.tflops is not None]
    last = max(per_run, key=lambda rr: rr[0].env.datetime or "")[0].env
    return BaselineRow(
        key=key,
        variant=first.variant,
        dtype=first.dtype,
        layout=first.layout,
        M=first.M,
        N=first.N,
        K=first.K,
        median_s=stats.median(run_medians),
        run_medians_s=run_medians,
        drift=drift,
        drift_source=source,
        tolerance=tol,
        tolerance_source=tol_source,
        too_noisy=noisy,
        samples_s=tuple(stats.quantile_summary(pooled, tolerances.policy.quantiles)),
        n_samples=len(pooled),
        measured=MappingProxyType(
            {
                "date": last.datetime,
                "commit": last.commit,
                "triton": last.software.get("triton"),
                "torch": last.software.get("torch"),
            }
        ),
        twin=first.twin,
        ratio_to_twin=stats.median(ratios) if ratios else None,
        ratio_to_twin_runs=tuple(ratios),
        tflops=stats.median(tflops) if tflops else None,
    )


def _retolerance(row: BaselineRow, tolerances: Tolerances) -> BaselineRow:
    tol, source, noisy = tolerances.tolerance(row.variant, row.dtype, row.layout, row.K, row.drift)
    return replace(row, tolerance=tol, tolerance_source=source, too_noisy=noisy)


def _ceil3(x: float) -> float:
    return math.ceil(x * 1000 - 1e-9) / 1000


def _derive_checks(
    runs: Sequence[Run], policy: Policy
) -> dict[tuple[str, str, str, str], dict[int, Check | None]]:
    """Per (faster, than, dtype, layout) and measured K: a Check where it clearly won in every run, else None."""
    found: dict[tuple[str, str, str, str], dict[int, Check | None]] = {}
    pairs = {
        (row.variant, row.twin, row.dtype, row.layout, row.K)
        for run in runs
        for row in run.rows.values()
    }
    for faster, than, dtype, layout, K in sorted(p for p in pairs if p[1] is not None):
        assert than is not None
        ratios = _run_ratios(runs, faster, than, dtype, layout, K)
        if not ratios:
            continue
        slot = found.setdefault((faster, than, dtype, layout), {})
        worst = max(ratios)
        slot[K] = None
        if worst <= policy.win_below:
            max_ratio = min(_ceil3(worst * (1 + policy.ratio_slack)), policy.ratio_cap)
            slot[K] = Check(K=K, max_ratio=max_ratio, measured=tuple(ratios))
    return found


def _run_ratios(
    runs: Sequence[Run], faster: str, than: str, dtype: str, layout: str, K: int
) -> list[float]:
    """The same-run ratio faster / than in each run that measured both."""
    out = []
    for run in runs:
        x, y = run.find(faster, dtype, layout, K), run.find(than, dtype, layout, K)
        if x is not None and y is not None:
            out.append(pair_ratio(x, y))
    return out


def _merge_expectations(
    runs: Sequence[Run], old: Baseline | None, policy: Policy
) -> tuple[list[Expectation], list[str], list[str]]:
    """New expectations (measured K replaced, unmeasured K kept), the diff lines, and refusals."""
    derived = _derive_checks(runs, policy)
    old_exps = {e.id: e for e in old.expectations} if old is not None else {}
    lines: list[str] = []
    refusals: list[str] = []
    merged = []
    keys = {(e.faster, e.than, e.dtype, e.layout) for e in old_exps.values()} | set(derived)
    for faster, than, dtype, layout in sorted(keys):
        eid = expectation_id(faster, than, dtype, layout)
        before = old_exps.get(eid)
        old_checks = {c.K: c for c in before.checks} if before else {}
        measured = derived.get((faster, than, dtype, layout), {})
        checks = {
            K: c for K, c in old_checks.items() if K not in measured
        }  # unmeasured: kept as reviewed
        checks.update({K: c for K, c in measured.items() if c is not None})
        for K in sorted(set(measured) | set(old_checks)):
            was, fresh = old_checks.get(K), measured.get(K)
            if K not in measured:
                continue
            got = (
                fresh.measured
                if fresh is not None
                else tuple(_run_ratios(runs, faster, than, dtype, layout, K))
            )
            if was is None and fresh is not None:
                lines.append(
                    f"+ {eid} K={K}: max_ratio {fresh.max_ratio:.3f} (measured {_ratios(got)})"
                )
            elif was is not None and fresh is None:
                lines.append(
                    f"- {eid} K={K}: REMOVED, cross-tile no longer wins clearly (measured {_ratios(got)}, "
                    f"was max_ratio {was.max_ratio:.3f})"
                )
            elif (
                was is not None
                and fresh is not None
                and abs(was.max_ratio - fresh.max_ratio) >= 0.0005
            ):
                tag = "  LOOSENED" if fresh.max_ratio > was.max_ratio else ""
                lines.append(
                    f"~ {eid} K={K}: max_ratio {was.max_ratio:.3f} -> {fresh.max_ratio:.3f}{tag} (measured {_ratios(got)})"
                )
            if was is not None and got and stats.median(got) > was.max_ratio:
                refusals.append(
                    f"expectation {eid} at K={K}: these runs break it (ratio {stats.median(got):.3f} > "
                    f"max_ratio {was.max_ratio:.3f}); a run where cross-tile stopped winning must not remove it silently"
                )
        if checks:
            merged.append(
                Expectation(
                    eid,
                    faster,
                    than,
                    dtype,
                    layout,
                    tuple(sorted(checks.values(), key=lambda c: c.K)),
                )
            )
    return merged, lines, refusals


def _provenance(
    runs: Sequence[Run], tolerances_path: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(gpu, provenance) of a baseline built from these (already checked to agree) runs."""
    env = runs[0].env
    last = max(runs, key=lambda r: r.env.datetime or "")
    gpu = {
        "name": env.gpu.name,
        "slug": env.gpu.slug,
        "sm_count": env.gpu.sm_count,
        "capability": list(env.gpu.capability) if env.gpu.capability else None,
        "memory_gib": env.gpu.memory_gib,
    }
    provenance: dict[str, Any] = {
        "created": last.env.datetime,
        "tool": f"tilegate {__version__}",
        "mode": env.mode,
        "profiles": sorted({r.env.profile for r in runs}),
        "harness_version": env.harness_version,
        "driver": env.gpu.driver,
        "cuda": env.gpu.cuda,
        "software": dict(env.software),
        "M": env.M,
        "N": env.N,
        "rounds": env.rounds,
        "timer": env.timer,
        "l2_flush": env.l2_flush,
        "runs": [
            {
                "file": r.path.name,
                "datetime": r.env.datetime,
                "commit": r.env.commit,
                "dirty": r.env.dirty,
                "profile": r.env.profile,
                "throttled": r.env.throttled,
            }
            for r in runs
        ],
        "tolerances_file": tolerances_path,
    }
    return gpu, provenance


def _run_warnings(
    runs: Sequence[Run],
    rows: Mapping[str, BaselineRow],
    per_key: Mapping[str, Sequence[Any]],
    policy: Policy,
) -> list[str]:
    warnings = []
    if len(runs) == 1:
        warnings.append(
            "built from ONE run: tolerances fall back to the floor and the run's own median CI, which "
            "cannot see drift between processes (2-3 % on compute-bound rows). Rebaseline from >= 3 runs."
        )
    short = sorted(k for k, v in per_key.items() if len(v) < len(runs))
    if short:
        warnings.append(f"{len(short)} row(s) were not measured in every run: {listing(short)}")
    reference = set(policy.reference_variants)
    noisy = sorted(k for k in per_key if rows[k].too_noisy and rows[k].variant not in reference)
    if noisy:
        warnings.append(
            f"TOO NOISY: {len(noisy)} row(s) need more tolerance than the ceiling ({policy.ceiling:.0%}), so a "
            "slowdown of that size could hide in their noise; the ceiling is used: "
            + ", ".join(f"{k} (needs {policy.multiple * rows[k].drift:.1%})" for k in noisy)
            + ". Lock clocks or run more rounds, or accept it with a reviewed override in tolerances.toml."
        )
    for run in runs:
        if run.env.throttled:
            warnings.append(
                f"results {run.path}: the GPU THROTTLED during this run; a slow baseline hides regressions"
            )
        if run.env.dirty:
            warnings.append(
                f"results {run.path} was measured on a dirty work tree (commit {run.env.commit})"
            )
    if runs and runs[0].env.smoke:
        warnings.append(
            "these are SMOKE runs (CPU interpreter): this baseline proves the pipeline, its times mean nothing"
        )
    return warnings


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _env_lines(old: Baseline, new_prov: Mapping[str, Any]) -> list[str]:
    lines = []
    old_p = old.provenance
    for label, get in (
        ("driver", lambda p: p.get("driver")),
        ("CUDA", lambda p: p.get("cuda")),
        ("torch", lambda p: (p.get("software") or {}).get("torch")),
        ("Triton", lambda p: (p.get("software") or {}).get("triton")),
        ("harness", lambda p: p.get("harness_version")),
    ):
        a, b = get(old_p), get(new_prov)
        if a != b:
            lines.append(f"- {label}: {a} -> {b}")
    return lines


def rebaseline(
    runs: Sequence[Run],
    *,
    out: Path,
    old: Baseline | None,
    tolerances: Tolerances,
    tolerances_path: str | None = None,
) -> Rebaseline:
    """Build the new baseline from runs (plus the old one's unmeasured rows) and explain the change.

    With no runs, the old baseline's rows are kept and only their tolerances are derived again
    from their stored drift and the current tolerances file.
    """
    if not runs and old is None:
        raise InputError(
            "rebaseline needs results files, or --old BASELINE to re-derive tolerances"
        )
    warnings: list[str] = []
    policy = tolerances.policy
    if runs:
        _check_runs(runs)
        env = runs[0].env
        if old is not None and old.slug != env.gpu.slug:
            raise InputError(
                f"old baseline {old.path} is for {old.slug}, the runs for {env.gpu.slug}: a baseline holds one "
                f"GPU model (write {baseline_path(env.gpu.slug, out.parent)} instead)"
            )
        if old is not None and old.mode != env.mode:
            raise InputError(
                f"old baseline {old.path} is a {old.mode} baseline, the runs are {env.mode} runs"
            )
        if out.name != f"{env.gpu.slug}.json":
            warnings.append(
                f"the runs are on {env.gpu.slug}, but the output file is {out} (expected {env.gpu.slug}.json)"
            )
        gpu, provenance = _provenance(runs, tolerances_path)
    else:
        assert old is not None
        gpu, provenance = dict(old.gpu), {**old.provenance, "tolerances_file": tolerances_path}

    per_key: dict[str, list[tuple[Run, Row]]] = {}
    for run in runs:
        for row in run.rows.values():
            per_key.setdefault(row.key, []).append((run, row))
    rows = {key: _measured_row(key, per_run, tolerances) for key, per_run in per_key.items()}
    kept = [key for key in (old.rows if old is not None else {}) if key not in rows]
    for key in kept:
        assert old is not None
        rows[key] = _retolerance(old.rows[key], tolerances)
    rows = dict(sorted(rows.items()))
    warnings += _run_warnings(runs, rows, per_key, policy)
    expectations, exp_lines, refusals = _merge_expectations(runs, old, policy)
    new = Baseline(
        path=out,
        gpu=MappingProxyType(gpu),
        provenance=MappingProxyType(provenance),
        policy=policy,
        rows=MappingProxyType(rows),
        expectations=tuple(expectations),
    )

    lines = [
        f"# Rebaseline {new.slug} -> {out}",
        "",
        (f"From {len(runs)} run(s): " + ", ".join(str(r.path) for r in runs))
        if runs
        else "No runs: tolerances derived again from the stored drift.",
        f"Tolerances: {tolerances.source} (multiple {policy.multiple:g} x drift, floor {policy.floor:.1%}, "
        f"ceiling {policy.ceiling:.1%})",
    ]
    sw = provenance.get("software") or {}
    lines.append(
        f"Environment: {gpu.get('name')} ({gpu.get('sm_count')} SMs), driver {provenance.get('driver')}, "
        f"CUDA {provenance.get('cuda')}, torch {sw.get('torch')}, Triton {sw.get('triton')}, "
        f"harness {provenance.get('harness_version')}, profile(s) {', '.join(provenance.get('profiles') or [])}"
    )
    if old is None:
        lines.append(f"No previous baseline at {out}: every row is new.")
    else:
        lines += [
            "",
            "## Environment vs the old baseline",
            *(_env_lines(old, provenance) or ["- unchanged"]),
        ]
    row_lines, loosened, slower = _row_diff(rows, old, per_key, kept)
    lines += ["", "## Rows", *row_lines]
    lines += ["", "## Expectations (cross-tile must beat its twin: same-run ratio <= max_ratio)"]
    lines += exp_lines or ["- unchanged"]
    n_checks = sum(len(e.checks) for e in new.expectations)
    lines.append(
        f"{len(new.expectations)} expectation(s), {n_checks} K check(s) in the new baseline."
    )
    if loosened:
        warnings.insert(
            0, f"{loosened} tolerance(s) LOOSENED: review them in the Rows table before committing"
        )
    return Rebaseline(
        baseline=new,
        old=old,
        lines=tuple(lines),
        warnings=tuple(warnings),
        refusals=tuple(slower + refusals),
    )


def listing(items: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _ratios(values: Iterable[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values) or "nothing"


def _row_diff(
    rows: Mapping[str, BaselineRow],
    old: Baseline | None,
    per_key: Mapping[str, Any],
    kept: Sequence[str],
) -> tuple[list[str], int, list[str]]:
    """The per-row table, how many tolerances loosened, and the rows slower than the old tolerance."""
    refusals: list[str] = []
    lines = [
        "| case | median old | median new | change | tolerance old | tolerance new | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    loosened = 0
    for key, row in sorted(
        rows.items(), key=lambda kv: (kv[1].dtype, kv[1].layout, kv[1].K, kv[1].variant)
    ):
        before = old.rows.get(key) if old is not None else None
        notes = []
        if key in kept:
            notes.append("kept: not measured this time")
        elif before is None:
            notes.append("new")
        if before is not None and row.tolerance > before.tolerance + 5e-5:
            loosened += 1
            notes.append(f"**LOOSENED** ({row.tolerance_source})")
        elif before is not None and row.tolerance < before.tolerance - 5e-5:
            notes.append("tightened")
        if row.too_noisy:
            notes.append("too noisy")
        change = ""
        if before is not None and key in per_key:
            delta = stats.rel_change(row.median_s, before.median_s)
            change = _pct(delta)
            if delta > before.tolerance:
                notes.append("**SLOWER than the old tolerance**")
                refusals.append(
                    f"row {key}: new median {row.median_s * 1e3:.4f} ms is {_pct(delta)} against the old "
                    f"{before.median_s * 1e3:.4f} ms (tolerance {before.tolerance:.1%})"
                )
        lines.append(
            f"| {key} | {_ms(before.median_s) if before else ''} | {_ms(row.median_s)} | {change} | "
            f"{f'{before.tolerance:.1%}' if before else ''} | {row.tolerance:.1%} | {'; '.join(notes)} |"
        )
    return lines, loosened, refusals


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f} ms"
