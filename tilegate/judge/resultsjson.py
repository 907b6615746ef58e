"""A results file's JSON (pytest-benchmark's, with tilegate's keys; docs/architecture.md) validated
once into a `Run` (tilegate.judge.results); every problem is an `InputError` naming the file and
the case. tilegate.store.files reads the file; nothing downstream looks at the raw JSON again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import is_finite_number
from tilegate.judge.results import SMOKE_SLUG, Environment, Gpu, Row, Run, capability, checked
from tilegate.judge.rowjson import need, parse_row, scalar

_PRODUCE = "Produce results with `tilegate perf`; a file cut short or edited by hand: measure again"


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    return None if v is None else str(v)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


_LEGACY_FIXED = ("M", "N")  # files written before "fixed": the matmul benchmark's


def _fixed(path: Path, tg: Mapping[str, Any]) -> dict[str, Any]:
    fixed = tg.get("fixed")
    if fixed is None:
        return {k: tg[k] for k in _LEGACY_FIXED if _opt_int(tg, k) is not None}
    if not isinstance(fixed, dict) or not all(scalar(v) for v in fixed.values()):
        raise InputError(
            f"results file {path}: machine_info.tilegate.fixed must map a parameter to its value"
        )
    return dict(fixed)


def _expectations(path: Path, tg: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...] | None:
    raw = tg.get("expectations")
    if raw is None:
        return None
    ok = isinstance(raw, list) and all(
        isinstance(e, dict)
        and all(isinstance(e.get(k), str) and e[k] for k in ("faster", "than", "per"))
        and isinstance(e.get("where", {}), dict)
        for e in raw
    )
    if not ok:
        raise InputError(
            f"results file {path}: machine_info.tilegate.expectations must list "
            "{faster, than, per, where} objects"
        )
    return tuple(MappingProxyType(dict(e)) for e in raw)


def _axes(path: Path, tg: Mapping[str, Any]) -> tuple[str, ...]:
    axes = tg.get("axes")
    if axes is None:
        return ("dtype", "layout", "K")
    if not _names(axes):
        raise InputError(f"results file {path}: machine_info.tilegate.axes must list axis names")
    return tuple(axes)


def _gpu(path: Path, tg: Mapping[str, Any], mode: str) -> Gpu:
    where = f"results file {path}"
    raw: Any = tg.get("gpu")
    if raw is None and mode == "smoke":
        return Gpu(name="CPU interpreter (smoke)", slug=SMOKE_SLUG)
    need(isinstance(raw, dict), where, "machine_info.tilegate.gpu is missing in a GPU run")
    slug, cap = raw.get("slug"), raw.get("capability")
    ok = isinstance(slug, str) and bool(slug)
    need(ok, where, "machine_info.tilegate.gpu.slug is missing; cannot pick a baseline")
    expected = "expected [major, minor], e.g. [9, 0]"
    ok = cap is None or capability(cap) is not None
    need(ok, where, f"machine_info.tilegate.gpu.capability is {cap!r}; {expected}")
    memory, sms = raw.get("memory_gib"), _opt_int(raw, "sm_count")
    driver, cuda = _opt_str(raw, "driver"), _opt_str(raw, "cuda")
    gib = memory if is_finite_number(memory) else None
    return Gpu(str(raw.get("name") or slug), slug, sms, capability(cap), driver, cuda, gib)


def _check_env(path: Path, tg: Mapping[str, Any]) -> None:
    """The lists and objects of machine_info.tilegate have their shapes."""
    where, ab, warned = f"results file {path}", tg.get("ab"), tg.get("warnings") or []
    mi = "machine_info.tilegate"
    ok = ab is None or (isinstance(ab, dict) and isinstance(ab.get("sha"), str))
    need(ok, where, f"{mi}.judge.ab must name the base's sha")
    ok = isinstance(warned, list) and all(
        isinstance(w, dict) and isinstance(w.get("message"), str) for w in warned
    )
    fields = "({category, message, source, count, first_case})"
    need(ok, where, f"{mi}.warnings must be a list of warnings {fields}")
    gpus = tg.get("gpus") or []
    ok = isinstance(gpus, list) and all(
        isinstance(g, dict) and isinstance(g.get("gpu"), dict) for g in gpus
    )
    need(ok, where, f"{mi}.gpus must list the GPUs")
    variants = tg.get("variants")
    asked = "expected the list of variant names the suite was asked to measure"
    need(variants is None or _names(variants), where, f"{mi}.variants is {variants!r}; {asked}")
    registry, renamed = tg.get("registry"), tg.get("renamed") or {}
    ok = (registry is None or _names(registry)) and isinstance(renamed, dict)
    before = f"{mi}.renamed map a variant to the names it had before"
    ok = ok and all(_names(v) for v in renamed.values())
    need(ok, where, f"{mi}.registry must list variant names and {before}")
    cov = tg.get("coverage")
    ok = cov is None or (isinstance(cov, dict) and isinstance(cov.get("expected"), dict))
    again = "(tilegate.judge.coverage); measure again with this tilegate"
    need(ok, where, f"{mi}.coverage must be an object with the expected cases {again}")


def _parse_env(path: Path, mi: Mapping[str, Any], commit_info: Any, when: Any) -> Environment:
    tg: Any = mi.get("tilegate")
    where, plain = f"results file {path}", "a plain pytest-benchmark file?"
    no_tg = f"machine_info has no 'tilegate' section, so this is not a tilegate perf run ({plain})"
    need(isinstance(tg, dict), where, f"{no_tg}. {_PRODUCE}")
    mode = tg.get("mode")
    need(
        mode in ("gpu", "smoke"),
        where,
        f"machine_info.tilegate.mode is {mode!r}; expected 'gpu' or 'smoke'",
    )
    _check_env(path, tg)
    state, ci, ab = _obj(tg.get("state")), _obj(commit_info), tg.get("ab")
    registry, variants, injected = tg.get("registry"), tg.get("variants"), tg.get("injected") or []
    throttled = state.get("throttled")
    return Environment(
        memory_tolerance=tg.get("memory_tolerance", "0"),
        peaks=MappingProxyType(_obj(tg.get("peaks"))) or None,
        coverage=tg.get("coverage"),
        registry=tuple(registry) if registry is not None else None,
        renamed=MappingProxyType({str(k): tuple(v) for k, v in (tg.get("renamed") or {}).items()}),
        gpus=tuple(MappingProxyType(dict(g)) for g in tg.get("gpus") or []),
        ab=MappingProxyType(dict(ab)) if ab else None,
        budget=(
            MappingProxyType(dict(tg["budget"])) if isinstance(tg.get("budget"), dict) else None
        ),
        warnings=tuple(MappingProxyType(dict(w)) for w in tg.get("warnings") or []),
        variants=tuple(variants) if variants is not None else None,
        harness_version=str(tg.get("harness_version", "unknown")),
        mode=mode,
        profile=str(tg.get("profile", "unknown")),
        fixed=MappingProxyType(_fixed(path, tg)),
        benchmark=_opt_str(tg, "benchmark"),
        expectations=_expectations(path, tg),
        axes=_axes(path, tg),
        l2_flush=tg.get("l2_flush") if isinstance(tg.get("l2_flush"), bool) else None,
        timer=_opt_str(tg, "timer"),
        rounds=_opt_int(tg, "rounds"),
        gpu=_gpu(path, tg, mode),
        software=MappingProxyType({str(k): str(v) for k, v in _obj(tg.get("software")).items()}),
        throttled=throttled if isinstance(throttled, bool) else None,
        state_notes=tuple(str(n) for n in state.get("notes") or []),
        injected=tuple(map(str, injected if isinstance(injected, list) else [injected])),
        commit=_opt_str(ci, "id"),
        dirty=ci.get("dirty") if isinstance(ci.get("dirty"), bool) else None,
        datetime=str(when) if when is not None else None,
    )


def parse_results(data: Any, p: Path) -> Run:
    """Validate one results file's JSON; InputError naming the file (and row) on any problem."""
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise InputError(
            f"results file {p} is not pytest-benchmark JSON (no 'benchmarks' list). {_PRODUCE}"
        )
    mi = data.get("machine_info")
    if not isinstance(mi, dict):
        raise InputError(
            f"results file {p} is not pytest-benchmark JSON (no 'machine_info'). {_PRODUCE}"
        )
    env = _parse_env(p, mi, data.get("commit_info"), data.get("datetime"))
    sides: dict[str, dict[str, Row]] = {"head": {}, "base": {}}
    for i, bench in enumerate(data["benchmarks"]):
        row = parse_row(p, i, bench)
        rows = sides[row.side]
        if row.key in rows:
            which = "" if row.side == "head" else " (base side)"
            raise InputError(
                f"results file {p}, row {row.key}{which}: appears twice; a results file holds one "
                "run. Were two runs merged into it? Give each run its own file (`tilegate compare "
                "RUN --confirm RERUN`, `tilegate rebaseline RUN1 RUN2 ...`), or measure it again"
            )
        rows[row.key] = row
    sides = checked(p, env, sides)
    rows = sides["head"]
    if sides["base"] and env.ab is None:
        raise InputError(
            f"results file {p} has base rows but machine_info.tilegate.judge.ab does not say which base"
        )
    if not rows:
        raise InputError(
            f"results file {p} has no benchmarks: every case was skipped or the suite did not run "
            "(see the pytest log)"
        )
    return Run(
        path=p, env=env, rows=MappingProxyType(rows), base_rows=MappingProxyType(sides["base"])
    )
