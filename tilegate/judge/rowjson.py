"""One row of a results file (a benchmark of pytest-benchmark's JSON, with tilegate's keys
under extra_info.tilegate) validated into a `Row` (tilegate.judge.resultsjson reads the rest).
Every problem is an InputError naming the file and the case."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeGuard

from tilegate.errors import InputError
from tilegate.fileio import is_finite_positive
from tilegate.judge.memory import parse as parse_memory
from tilegate.judge.results import Row
from tilegate.judge.rounds import check_ranges


def _is_number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _timing_problem(samples: list[Any]) -> str | None:
    """Why these samples cannot be timings, or None."""
    if not samples:
        return "has no timing samples"
    for i, s in enumerate(samples):
        if not _is_number(s):
            return f"has a non-numeric timing sample {s!r} (round {i})"
        if math.isnan(s):
            return f"has a NaN timing (round {i})"
        if not math.isfinite(s):
            return f"has an infinite timing (round {i})"
        if s <= 0:
            return f"has a {'zero' if s == 0 else 'negative'} timing {s!r} (round {i})"
    return None


_LEGACY_PARAMS = ("dtype", "layout", "M", "N", "K")  # rows written before "params"


def scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float)) and not (isinstance(v, float) and not math.isfinite(v))


def need(ok: bool, where: str, what: str) -> None:
    """InputError `where: what` unless `ok`."""
    if not ok:
        raise InputError(f"{where}: {what}")


def _row_tg(path: Path, index: int, bench: Any) -> tuple[str, dict[str, Any]]:
    """Where a row is (for messages) and its extra_info.tilegate: a correct case's."""
    need(isinstance(bench, dict), f"results file {path}", f"benchmarks[{index}] is not an object")
    name = bench.get("param") or bench.get("name") or f"benchmarks[{index}]"
    extra = bench.get("extra_info")
    tg: Any = extra.get("tilegate") if isinstance(extra, dict) else None
    row = f"results file {path}, row {name}"
    from_suite = "every benchmark in a results file must come from tilegate's perf suite"
    need(isinstance(tg, dict), row, f"no extra_info.tilegate; {from_suite}")
    key = tg.get("key")
    need(isinstance(key, str) and bool(key), row, "extra_info.tilegate.key is missing")
    where = f"results file {path}, row {key}"
    if tg.get("correct") is not True:
        why = tg.get("error") or (
            f"relative error {tg.get('rel_err')} > {tg.get('tolerance')}"
            if tg.get("rel_err") is not None
            else "no passing check"
        )
        raise InputError(
            f"{where}: failed its correctness check ({why}). A wrong kernel's time means nothing: "
            "fix the kernel (see the pytest log of the perf run) before the gate can judge this run."
        )
    variant = tg.get("variant")
    need(
        isinstance(variant, str) and bool(variant), where, "extra_info.tilegate.variant is missing"
    )
    if "ratio_to_reference" not in tg and "ratio_to_torch" in tg:  # its name before
        tg = {**tg, "ratio_to_reference": tg["ratio_to_torch"]}
    return where, tg


def _params(where: str, tg: Mapping[str, Any]) -> dict[str, Any]:
    params = tg.get("params")
    if params is None:  # written before "params": the matmul benchmark's parameters, flat
        for k in ("dtype", "layout"):
            need(
                isinstance(tg.get(k), str) and bool(tg[k]),
                where,
                f"extra_info.tilegate.{k} is missing",
            )
        for k in ("M", "N", "K"):
            v = tg.get(k)
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 1
            need(ok, where, f"extra_info.tilegate.{k} is {v!r}; expected a positive integer")
        params = {k: tg[k] for k in _LEGACY_PARAMS}
    ok = isinstance(params, dict) and bool(params) and all(scalar(v) for v in params.values())
    expected = "expected the case's parameters (name -> string or number)"
    need(ok, where, f"extra_info.tilegate.params is {params!r}; {expected}")
    return dict(params)


def _samples(where: str, tg: Mapping[str, Any], bench: Mapping[str, Any]) -> list[float]:
    """The row's timing samples (pytest-benchmark's stats.data where tilegate wrote none)."""
    stats = bench.get("stats")
    samples: Any = tg.get("samples_s")
    if samples is None:
        samples = stats.get("data") if isinstance(stats, dict) else None
    need(isinstance(samples, list), where, "extra_info.tilegate.samples_s is missing or not a list")
    problem = _timing_problem(samples)
    recorded = [tg.get("median_s"), stats.get("median") if isinstance(stats, dict) else None]
    bad = [v for v in recorded if v is not None and not is_finite_positive(v)]
    if problem is None and bad:
        problem = f"has a recorded median of {bad[-1]!r}"
    if problem is not None:
        raise InputError(
            f"{where} {problem}. The timer produced an impossible value: re-run the suite; if it "
            "repeats, the timer or the kernel launch is broken."
        )
    return samples


def _numbers(where: str, tg: Mapping[str, Any]) -> dict[str, Any]:
    """The row's ratios, throughputs and its side, code hashes, GPU index: checked."""
    out: dict[str, Any] = {}
    for k in ("ratio_to_reference", "ratio_to_twin", "ratio_to_base", "tflops", "gbps"):
        v = tg.get(k)
        # throughput may round to 0.0 on the smoke profile's tiny shapes; a ratio never may
        ok = v is None or is_finite_positive(v) or (k in ("tflops", "gbps") and v == 0)
        need(ok, where, f"extra_info.tilegate.{k} is {v!r}; expected a positive number or null")
        out[k] = float(v) if v is not None else None
    side = out["side"] = tg.get("side", "head")
    need(
        side in ("head", "base"),
        where,
        f"extra_info.tilegate.side is {side!r}; expected 'head' or 'base'",
    )
    for k in ("code_hash", "code_hash_kind"):
        v = out[k] = tg.get(k)
        ok = v is None or (isinstance(v, str) and bool(v))
        need(ok, where, f"extra_info.tilegate.{k} is {v!r}; expected a string")
    index = out["gpu_index"] = tg.get("gpu_index")
    ok = index is None or (isinstance(index, int) and not isinstance(index, bool))
    need(ok, where, f"extra_info.tilegate.gpu_index is {index!r}; expected an integer")
    return out


def _timing(where: str, tg: Mapping[str, Any], samples: list[float]) -> dict[str, Any]:
    """How the row was timed: its rounds (an A/B budget's), picks, host times, re-time."""
    timed_in = None
    if tg.get("timed_in") is not None:
        try:
            timed_in = check_ranges(tg["timed_in"], len(samples))
        except ValueError as err:
            raise InputError(f"{where}: extra_info.tilegate.{err}") from err
    budget = tg.get("budget")
    stopped = budget.get("stopped") if isinstance(budget, dict) else None
    ok = stopped is None or isinstance(stopped, str)
    need(ok, where, f"extra_info.tilegate.budget.stopped is {stopped!r}; expected a string")
    autotune = tg.get("autotune", [])
    ok = isinstance(autotune, list) and all(
        _is_pick(p) and isinstance(p.get("kernel"), str) for p in autotune
    )
    picks = "expected a list of picks (kernel, key, config)"
    need(ok, where, f"extra_info.tilegate.autotune is {autotune!r}; {picks}")
    host = tg.get("host_samples_s")
    ok = host is None or (
        isinstance(host, list) and len(host) == len(samples) and all(map(is_finite_positive, host))
    )
    per = f"one positive host time per sample ({len(samples)}); re-run the suite"
    need(ok, where, f"extra_info.tilegate.host_samples_s must be {per}")
    probe = tg.get("host_s")  # a call not held: its host time with nothing queued ahead
    per = "expected the host seconds per call (a positive number); re-run the suite"
    ok = probe is None or is_finite_positive(probe)
    need(ok, where, f"extra_info.tilegate.host_s is {probe!r}; {per}")
    pass_medians = tg.get("pass_medians_s")
    sweeps = None
    if isinstance(pass_medians, list) and pass_medians and len(samples) % len(pass_medians) == 0:
        sweeps = len(pass_medians)
    return {
        "autotune": tuple(MappingProxyType(dict(p)) for p in autotune),
        "host_s": float(statistics.median(host)) if host else probe and float(probe),
        "host_samples_s": tuple(float(h) for h in host) if host else None,
        "host_bound": bool(tg["host_bound"]) if isinstance(tg.get("host_bound"), bool) else None,
        "held": tg.get("held") is True,
        **_host_procs(where, tg),
        "timed_in": timed_in,
        "budget_stopped": stopped,
        "sweeps": sweeps,
    }


def parse_row(path: Path, index: int, bench: Any) -> Row:
    where, tg = _row_tg(path, index, bench)
    group = tg.get("group") or bench.get("group")
    need(isinstance(group, str) and bool(group), where, "extra_info.tilegate.group is missing")
    samples = _samples(where, tg, bench)
    twin = tg.get("twin")
    row = Row(
        memory=parse_memory(where, tg.get("memory")),
        work_dtype=str(tg["work_dtype"]) if tg.get("work_dtype") is not None else None,
        **_timing(where, tg, samples),
        **_numbers(where, tg),
        gpu_serial=str(tg["gpu_serial"]) if tg.get("gpu_serial") is not None else None,
        reference=tg.get("reference") is True,
        key=tg["key"],
        variant=tg["variant"],
        params=MappingProxyType(_params(where, tg)),
        group=group,
        samples_s=tuple(float(s) for s in samples),
        median_s=float(statistics.median(samples)),
        twin=twin if isinstance(twin, str) and twin else None,
    )
    pinned = _parse_pinned(where, tg.get("pinned"))
    if pinned is None:
        return row
    samples_p, host_p, picks = pinned
    unset: dict[str, Any] = dict.fromkeys(
        (
            "timed_in",
            "budget_stopped",
            "sweeps",
            "ratio_to_base",
            "ratio_to_reference",
            "ratio_to_twin",
        )
    )
    host_s = float(statistics.median(host_p)) if host_p else None
    median_s = float(statistics.median(samples_p))
    again = replace(row, samples_s=samples_p, median_s=median_s, host_samples_s=host_p, **unset)
    return replace(row, pinned=replace(again, host_s=host_s, autotune=picks))


def _host_procs(where: str, tg: Mapping[str, Any]) -> Mapping[str, Any]:
    """A row's host times over worker processes (tilegate.harness.hostworkers), checked."""
    procs, prof = tg.get("host_procs_s"), tg.get("host_profile", [])
    blocks = tg.get("host_blocks_s")
    procs_ok = procs is None or (isinstance(procs, list) and all(map(is_finite_positive, procs)))
    blocks_ok = blocks is None or (
        isinstance(blocks, list)
        and all(isinstance(b, list) and b and all(map(is_finite_positive, b)) for b in blocks)
    )
    if not procs_ok or not blocks_ok or not isinstance(prof, list) or not all(map(_pair, prof)):
        raise InputError(
            f"{where}: extra_info.tilegate.host_procs_s / host_blocks_s / host_profile are {procs!r}"
            f" / {blocks!r} / {prof!r}, not seconds / lists of them / [function, seconds]; re-run"
        )
    procs = procs or ([statistics.median(b) for b in blocks] if blocks else None)  # derivable
    return {
        "host_procs_s": tuple(map(float, procs)) if procs else None,
        "host_blocks_s": tuple(tuple(map(float, b)) for b in blocks) if blocks else None,
        "host_profile": tuple((n, float(t)) for n, t in prof),
        "syncs_inside": tg["syncs_inside"] if isinstance(tg.get("syncs_inside"), bool) else None,
    }


def _is_pick(p: Any) -> bool:
    return isinstance(p, dict) and isinstance(p.get("config"), dict)


def _pair(p: Any) -> bool:
    return isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and _is_number(p[1])


def _parse_pinned(
    where: str, pinned: Any
) -> tuple[tuple[float, ...], tuple[float, ...] | None, tuple[Mapping[str, Any], ...]] | None:
    """extra_info.tilegate.pinned (a tuner flip's re-time on one config): its samples, host
    seconds and the picks both sides ran; None where the row has none."""
    if pinned is None:
        return None
    samples = pinned.get("samples_s") if isinstance(pinned, dict) else None
    picks = pinned.get("autotune") if isinstance(pinned, dict) else None
    problem = _timing_problem(samples) if isinstance(samples, list) else "has no samples_s"
    if problem is None and not (isinstance(picks, list) and picks and all(map(_is_pick, picks))):
        problem = "names no picks (autotune)"
    host = pinned.get("host_samples_s") if isinstance(pinned, dict) else None
    if problem is None and host is not None:
        assert isinstance(samples, list)
        if not isinstance(host, list) or len(host) != len(samples):
            problem = "has host_samples_s that are not one per sample"
        elif not all(is_finite_positive(h) for h in host):
            problem = "has a host time that is not a positive number"
    if problem is not None:
        raise InputError(
            f"{where}: extra_info.tilegate.pinned (a tuner flip re-timed on one config) "
            f"{problem}; re-run the suite"
        )
    assert isinstance(samples, list) and isinstance(picks, list)
    return (
        tuple(float(x) for x in samples),
        tuple(float(h) for h in host) if host else None,
        tuple(MappingProxyType(dict(p)) for p in picks),
    )
