"""Read and validate a results file: pytest-benchmark JSON with tilegate's keys.

The contract is in docs/architecture.md. Everything the gate needs is read here, once, into
frozen objects; every problem is an `InputError` naming the file and, where there is one, the
case id. Nothing downstream looks at the raw JSON again.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeGuard

from tilegate.errors import InputError
from tilegate.fileio import is_finite_number, is_finite_positive
from tilegate.judge import stats

SMOKE_SLUG = "smoke"  # the "GPU" of a smoke run (CPU interpreter): no GPU facts exist
_PRODUCE = "Produce results with `tilegate perf`; a file cut short or edited by hand: measure again"


@dataclass(frozen=True)
class Gpu:
    name: str
    slug: str
    sm_count: int | None = None
    capability: tuple[int, ...] | None = None
    driver: str | None = None
    cuda: str | None = None
    memory_gib: float | None = None


def describe_gpu(gpu: Gpu | Mapping[str, Any]) -> str:
    """'NVIDIA H200 (sm_90, 132 SMs)', for a run's Gpu or a GPU recorded in a file."""
    name: Any
    cap: tuple[int, ...] | None
    sms: Any
    if isinstance(gpu, Gpu):
        name, cap, sms = gpu.name, gpu.capability, gpu.sm_count
    else:
        name, cap, sms = gpu.get("name"), _capability(gpu.get("capability")), gpu.get("sm_count")
    facts = [_show(cap) if cap else None, f"{sms} SMs" if sms else None]
    return f"{name} ({', '.join(f for f in facts if f) or 'no details'})"


def _capability(value: Any) -> tuple[int, ...] | None:
    """(major, minor) from a JSON [9, 0]; None for anything else."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value)
    ):
        return tuple(value)
    return None


def gpu_mismatch(recorded: Gpu | Mapping[str, Any], gpu: Gpu) -> list[str]:
    """How a GPU recorded in a file (a baseline's or noise file's `gpu`), or another run's,
    differs from `gpu`.

    The slug is a label (from the name, or a runner's): the name, the compute capability and
    the SM count say which GPU it is. Only facts that both sides record are compared.
    """
    then: tuple[Any, Any, Any]
    if isinstance(recorded, Gpu):
        then = (recorded.name, recorded.capability, recorded.sm_count)
    else:
        cap = _capability(recorded.get("capability"))
        then = (recorded.get("name"), cap, recorded.get("sm_count"))
    out = []
    pairs = (
        ("name", then[0], gpu.name),
        ("compute capability", then[1], gpu.capability),
        ("SM count", then[2], gpu.sm_count),
    )
    for what, was, now in pairs:
        if was is not None and now is not None and was != now:
            out.append(f"{what} {_show(was)} vs {_show(now)}")
    return out


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "sm_" + "".join(map(str, value))
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Environment:
    """What a run measured on: `machine_info.tilegate` plus pytest-benchmark's commit info."""

    harness_version: str
    mode: str  # "gpu" or "smoke"
    profile: str
    # the profile's fixed parameters as measured (M, N for matmul; files before "fixed": M, N)
    fixed: Mapping[str, Any]
    l2_flush: bool | None
    timer: str | None
    rounds: int | None
    gpu: Gpu
    software: Mapping[str, str]
    throttled: bool | None
    state_notes: tuple[str, ...]
    injected: tuple[str, ...]
    commit: str | None
    dirty: bool | None
    datetime: str | None
    ab: Mapping[str, Any] | None = None  # an A/B run: {"ref", "sha", "variants"} of its base
    # an A/B run's budget: how its rounds were spent (tilegate.harness.budget.summarize)
    budget: Mapping[str, Any] | None = None
    # Triton / torch warnings of the run (recorded by the suite, not raised): category, message,
    # source, count, first_case
    warnings: tuple[Mapping[str, Any], ...] = ()
    # several GPUs of one host (tilegate.run.shard): each {"gpu": {..., "index", "serial"}, "state"}
    gpus: tuple[Mapping[str, Any], ...] = ()
    # the variants the run was asked to measure (--perf-variants, else all); None: the file does
    # not say (written before the suite recorded it), so every variant counts as selected
    variants: tuple[str, ...] | None = None
    # every variant of the head's registry (None: not recorded) and its renames {new: (old, ...)}
    registry: tuple[str, ...] | None = None
    renamed: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    benchmark: str | None = None  # the declared benchmark's name (None: not recorded)
    # the declared expectations (tilegate.declare.Expectation): {"faster", "than", "per",
    # "where"}; None: not recorded (older files), every twin pair along K
    expectations: tuple[Mapping[str, Any], ...] | None = None
    # the grid's axes in order (files without the key: the matmul benchmark's)
    axes: tuple[str, ...] = ("dtype", "layout", "K")
    # what the run had to measure (tilegate.judge.coverage; None: an older tilegate's results)
    coverage: Mapping[str, Any] | None = None

    @property
    def smoke(self) -> bool:
        return self.mode == "smoke"


@dataclass(frozen=True)
class Row:
    """One benchmark case of one run."""

    key: str
    variant: str
    params: Mapping[str, Any]  # the case's parameters: its grid point and the fixed values
    group: str  # the cases timed together, round by round (the case id less the variant)
    samples_s: tuple[float, ...]
    median_s: float  # median of samples_s: the number the gate compares
    tflops: float | None = None
    gbps: float | None = None
    ratio_to_reference: float | None = None
    twin: str | None = None
    ratio_to_twin: float | None = None
    reference: bool = False  # the reference row: every ratio_to_reference is against it
    code_hash: str | None = None  # tilegate.harness.identity: the compiled code that ran
    code_hash_kind: str | None = None  # "sass", "ptx", "source", "reference"
    side: str = "head"  # "base": the base commit's version in an A/B run
    gpu_index: int | None = None  # `tilegate perf --gpus N`: which GPU of the host measured it
    gpu_serial: str | None = None
    ratio_to_base: float | None = None  # A/B head rows: head / base, paired per round
    # which of its group's rounds the samples are (half-open ranges, tilegate.harness.budget);
    # None: every round of the group. An A/B run's budget times some base rows in fewer rounds
    timed_in: tuple[tuple[int, int], ...] | None = None
    # why the A/B budget stopped timing it (extra_info.tilegate.budget.stopped): "cap" when a
    # changed pair used every round it may have (tilegate.harness.budget.CAP_FACTOR)
    budget_stopped: str | None = None
    # how many timing sweeps (passes) its samples came from (len(extra_info.tilegate.
    # pass_medians_s)); each sweep times rounds_per_pass rounds of its group, so round r of the
    # group is in sweep r // (len(samples_s) // sweeps). None: not recorded (or inconsistent)
    sweeps: int | None = None
    # the autotuner picks its call used (tilegate.harness.autotune; tilegate.judge.autotune)
    autotune: tuple[Mapping[str, Any], ...] = ()
    # host seconds per call (tilegate.harness.timing.host_info): the median, one per round of
    # samples_s, whether the host bounds the call (its verdict is then on the host time), and
    # whether its GPU samples were held (their kernels' time)
    host_s: float | None = None
    host_samples_s: tuple[float, ...] | None = None
    host_bound: bool | None = None
    held: bool = False
    # a tuner flip re-timed with both sides on one config (extra_info.tilegate.pinned, written
    # by tilegate.harness.measure): this case on that config, as a row of its own (its
    # `autotune` the picks both sides ran); None: not re-timed
    pinned: Row | None = None


def param_order(params: Mapping[str, Any], axes: Sequence[str]) -> tuple[Any, ...]:
    """How rows sort: by the grid's `axes` in their order, then every other parameter by name.

    Never by a mapping's own key order: a baseline's rows come back from its file with their
    parameters in the file's (sorted) key order, a results file's in the suite's, and sorting
    both together by their values compared "fp16" with 128 (a crash of every GPU run judged
    against a baseline written with "params"). Numbers sort before text at one position."""
    names = [a for a in axes if a in params] + sorted(k for k in params if k not in axes)
    return tuple(
        (name, 0, v, "") if isinstance(v, (int, float)) else (name, 1, 0, str(v))
        for name, v in ((n, params[n]) for n in names)
    )


def row_order(
    params: Mapping[str, Any],
    variant: str,
    axes: Sequence[str],
    variant_order: Sequence[str] = (),
) -> tuple[Any, ...]:
    """How the rows of every table sort: by their parameters (param_order), then in the suite's
    variant order (Run.variant_order; a variant it lacks comes after those it has), then by name."""
    rank = variant_order.index(variant) if variant in variant_order else len(variant_order)
    return (param_order(params, axes), rank, variant)


def matches(params: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Whether every parameter `where` names has that value in `params`."""
    return all(params.get(k) == v for k, v in where.items())


@dataclass(frozen=True)
class Run:
    path: Path
    env: Environment
    rows: Mapping[str, Row] = field(default_factory=lambda: MappingProxyType({}))
    # A/B runs: the base commit's version of each case, by case id (the same ids as `rows`)
    base_rows: Mapping[str, Row] = field(default_factory=lambda: MappingProxyType({}))

    def find(self, variant: str, group: str, *, side: str = "head") -> Row | None:
        """The row of `variant` in `group` (a group id, `Row.group`)."""
        rows = self.rows if side == "head" else self.base_rows
        for row in rows.values():
            if (row.variant, row.group) == (variant, group):
                return row
        if side == "base" and self.reference == variant:  # the reference is measured once
            return self.find(variant, group)
        return None

    def group_of(self, where: Mapping[str, Any]) -> str | None:
        """The one group whose parameters include `where` (None: none or several)."""
        found = {r.group for r in self.rows.values() if matches(r.params, where)}
        return found.pop() if len(found) == 1 else None

    def ratio(self, variant: str, than: str, group: str, *, side: str = "head") -> float | None:
        """variant / than measured in the same rounds of this run; None unless both were measured.

        `side="base"`: the same, for the base commit's versions in an A/B run.
        Always the paired per-round median of the samples (`stats.paired_ratio`), never a number
        the file merely states: `load_results` has checked that the rows of a group share their
        rounds and that every recorded ratio agrees with its samples.
        """
        x = self.find(variant, group, side=side)
        y = self.find(than, group, side=side)
        if x is None or y is None:
            return None
        return paired(x, y)

    @property
    def reference(self) -> str | None:
        """The reference variant of this run (the row the suite marks; cuBLAS), if it ran."""
        return next((r.variant for r in self.rows.values() if r.reference), None)

    @property
    def groups(self) -> frozenset[str]:
        return frozenset(r.group for r in self.rows.values())

    def relations(self) -> list[tuple[str, str, str, Mapping[str, Any]]]:
        """The expectations this run can check: (faster, than, per, where) as declared, or, for a
        file that does not record them, every twin pair along K (the matmul benchmark's)."""
        if self.env.expectations is not None:
            return [
                (e["faster"], e["than"], e["per"], e.get("where") or {})
                for e in self.env.expectations
            ]
        pairs = sorted({(r.variant, r.twin) for r in self.rows.values() if r.twin})
        return [(f, t, "K", {}) for f, t in pairs if t is not None]

    def series(self, per: str) -> tuple[str, ...]:
        """The axes other than `per`: what holds still along one expectation's or plot's line."""
        return tuple(a for a in self.env.axes if a != per)

    @property
    def variant_order(self) -> list[str]:
        """Variants in the order the suite ran them (the registry's order)."""
        return list(dict.fromkeys(r.variant for r in self.rows.values()))


# --- validation helpers -----------------------------------------------------------------------


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _is_number(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    v = d.get(key)
    return None if v is None else str(v)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    v = d.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


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


_LEGACY_FIXED = ("M", "N")  # files written before "fixed": the matmul benchmark's
_LEGACY_PARAMS = ("dtype", "layout", "M", "N", "K")  # rows written before "params"


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float)) and not (isinstance(v, float) and not math.isfinite(v))


def _fixed(path: Path, tg: Mapping[str, Any]) -> dict[str, Any]:
    fixed = tg.get("fixed")
    if fixed is None:
        return {k: tg[k] for k in _LEGACY_FIXED if _opt_int(tg, k) is not None}
    if not isinstance(fixed, dict) or not all(_scalar(v) for v in fixed.values()):
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


def _parse_env(path: Path, mi: Mapping[str, Any], commit_info: Any, when: Any) -> Environment:
    tg = mi.get("tilegate")
    if not isinstance(tg, dict):
        raise InputError(
            f"results file {path}: machine_info has no 'tilegate' section, so this is not a tilegate perf "
            f"run (a plain pytest-benchmark file?). {_PRODUCE}"
        )
    mode = tg.get("mode")
    if mode not in ("gpu", "smoke"):
        raise InputError(
            f"results file {path}: machine_info.tilegate.mode is {mode!r}; expected 'gpu' or 'smoke'"
        )
    gpu_raw = tg.get("gpu")
    if isinstance(gpu_raw, dict):
        slug = gpu_raw.get("slug")
        if not isinstance(slug, str) or not slug:
            raise InputError(
                f"results file {path}: machine_info.tilegate.gpu.slug is missing; cannot pick a baseline"
            )
        cap = gpu_raw.get("capability")
        if cap is not None and _capability(cap) is None:
            raise InputError(
                f"results file {path}: machine_info.tilegate.gpu.capability is {cap!r}; expected "
                "[major, minor], e.g. [9, 0]"
            )
        gpu = Gpu(
            name=str(gpu_raw.get("name") or slug),
            slug=slug,
            sm_count=_opt_int(gpu_raw, "sm_count"),
            capability=_capability(cap),
            driver=_opt_str(gpu_raw, "driver"),
            cuda=_opt_str(gpu_raw, "cuda"),
            memory_gib=gpu_raw.get("memory_gib")
            if is_finite_number(gpu_raw.get("memory_gib"))
            else None,
        )
    elif gpu_raw is None and mode == "smoke":
        gpu = Gpu(name="CPU interpreter (smoke)", slug=SMOKE_SLUG)
    else:
        raise InputError(f"results file {path}: machine_info.tilegate.gpu is missing in a GPU run")
    software = _obj(tg.get("software"))
    state = _obj(tg.get("state"))
    throttled = state.get("throttled")
    injected = tg.get("injected") or []
    ci = _obj(commit_info)
    ab = tg.get("ab")
    if ab is not None and not (isinstance(ab, dict) and isinstance(ab.get("sha"), str)):
        raise InputError(
            f"results file {path}: machine_info.tilegate.judge.ab must name the base's sha"
        )
    warned = tg.get("warnings") or []
    if not isinstance(warned, list) or not all(
        isinstance(w, dict) and isinstance(w.get("message"), str) for w in warned
    ):
        raise InputError(
            f"results file {path}: machine_info.tilegate.warnings must be a list of warnings "
            "({category, message, source, count, first_case})"
        )
    gpus = tg.get("gpus") or []
    if not isinstance(gpus, list) or not all(
        isinstance(g, dict) and isinstance(g.get("gpu"), dict) for g in gpus
    ):
        raise InputError(f"results file {path}: machine_info.tilegate.gpus must list the GPUs")
    variants = tg.get("variants")
    if variants is not None and not (
        isinstance(variants, list) and all(isinstance(v, str) and v for v in variants)
    ):
        raise InputError(
            f"results file {path}: machine_info.tilegate.variants is {variants!r}; expected the "
            "list of variant names the suite was asked to measure"
        )
    registry, renamed = tg.get("registry"), tg.get("renamed") or {}
    if (registry is not None and not _names(registry)) or not (
        isinstance(renamed, dict) and all(_names(v) for v in renamed.values())
    ):
        raise InputError(
            f"results file {path}: machine_info.tilegate.registry must list variant names and "
            "machine_info.tilegate.renamed map a variant to the names it had before"
        )
    cov = tg.get("coverage")
    if cov is not None and not (isinstance(cov, dict) and isinstance(cov.get("expected"), dict)):
        raise InputError(
            f"results file {path}: machine_info.tilegate.coverage must be an object with the "
            "expected cases (tilegate.judge.coverage); measure again with this tilegate"
        )
    return Environment(
        coverage=cov,
        registry=tuple(registry) if registry is not None else None,
        renamed=MappingProxyType({str(k): tuple(v) for k, v in renamed.items()}),
        gpus=tuple(MappingProxyType(dict(g)) for g in gpus),
        ab=MappingProxyType(dict(ab)) if ab else None,
        budget=(
            MappingProxyType(dict(tg["budget"])) if isinstance(tg.get("budget"), dict) else None
        ),
        warnings=tuple(MappingProxyType(dict(w)) for w in warned),
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
        gpu=gpu,
        software=MappingProxyType({str(k): str(v) for k, v in software.items()}),
        throttled=throttled if isinstance(throttled, bool) else None,
        state_notes=tuple(str(n) for n in state.get("notes") or []),
        injected=tuple(str(i) for i in injected)
        if isinstance(injected, list)
        else (str(injected),),
        commit=_opt_str(ci, "id"),
        dirty=ci.get("dirty") if isinstance(ci.get("dirty"), bool) else None,
        datetime=str(when) if when is not None else None,
    )


def _parse_row(path: Path, index: int, bench: Any) -> Row:
    if not isinstance(bench, dict):
        raise InputError(f"results file {path}: benchmarks[{index}] is not an object")
    name = bench.get("param") or bench.get("name") or f"benchmarks[{index}]"
    extra = bench.get("extra_info")
    tg = extra.get("tilegate") if isinstance(extra, dict) else None
    if not isinstance(tg, dict):
        raise InputError(
            f"results file {path}, row {name}: no extra_info.tilegate; every benchmark in a results file "
            "must come from tilegate's perf suite"
        )
    key = tg.get("key")
    if not isinstance(key, str) or not key:
        raise InputError(f"results file {path}, row {name}: extra_info.tilegate.key is missing")
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
    if not isinstance(tg.get("variant"), str) or not tg["variant"]:
        raise InputError(f"{where}: extra_info.tilegate.variant is missing")
    params = tg.get("params")
    if params is None:  # written before "params": the matmul benchmark's parameters, flat
        for k in ("dtype", "layout"):
            if not isinstance(tg.get(k), str) or not tg[k]:
                raise InputError(f"{where}: extra_info.tilegate.{k} is missing")
        for k in ("M", "N", "K"):
            v = tg.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InputError(
                    f"{where}: extra_info.tilegate.{k} is {v!r}; expected a positive integer"
                )
        params = {k: tg[k] for k in _LEGACY_PARAMS}
    if not isinstance(params, dict) or not params or not all(_scalar(v) for v in params.values()):
        raise InputError(
            f"{where}: extra_info.tilegate.params is {params!r}; expected the case's parameters "
            "(name -> string or number)"
        )
    group = tg.get("group") or bench.get("group")
    if not isinstance(group, str) or not group:
        raise InputError(f"{where}: extra_info.tilegate.group is missing")
    samples = tg.get("samples_s")
    if samples is None:
        stats = bench.get("stats")
        samples = stats.get("data") if isinstance(stats, dict) else None
    if not isinstance(samples, list):
        raise InputError(f"{where}: extra_info.tilegate.samples_s is missing or not a list")
    problem = _timing_problem(samples)
    if problem is None:
        recorded = [tg.get("median_s")]
        stats = bench.get("stats")
        if isinstance(stats, dict) and "median" in stats:
            recorded.append(stats["median"])
        for value in recorded:
            if value is not None and not is_finite_positive(value):
                problem = f"has a recorded median of {value!r}"
    if problem is not None:
        raise InputError(
            f"{where} {problem}. The timer produced an impossible value: re-run the suite; if it "
            "repeats, the timer or the kernel launch is broken."
        )
    ratios: dict[str, float | None] = {}
    if "ratio_to_reference" not in tg and "ratio_to_torch" in tg:  # its name before
        tg = {**tg, "ratio_to_reference": tg["ratio_to_torch"]}
    for k in ("ratio_to_reference", "ratio_to_twin", "ratio_to_base", "tflops", "gbps"):
        v = tg.get(k)
        # throughput may round to 0.0 on the smoke profile's tiny shapes; a ratio never may
        ok = v is None or is_finite_positive(v) or (k in ("tflops", "gbps") and v == 0)
        if not ok:
            raise InputError(
                f"{where}: extra_info.tilegate.{k} is {v!r}; expected a positive number or null"
            )
        ratios[k] = float(v) if v is not None else None
    twin = tg.get("twin")
    side = tg.get("side", "head")
    if side not in ("head", "base"):
        raise InputError(
            f"{where}: extra_info.tilegate.side is {side!r}; expected 'head' or 'base'"
        )
    code = {k: tg.get(k) for k in ("code_hash", "code_hash_kind")}
    for k, v in code.items():
        if v is not None and (not isinstance(v, str) or not v):
            raise InputError(f"{where}: extra_info.tilegate.{k} is {v!r}; expected a string")
    gpu_index = tg.get("gpu_index")
    if gpu_index is not None and (not isinstance(gpu_index, int) or isinstance(gpu_index, bool)):
        raise InputError(
            f"{where}: extra_info.tilegate.gpu_index is {gpu_index!r}; expected an integer"
        )
    timed_in = None
    if tg.get("timed_in") is not None:
        from tilegate.judge.rounds import check_ranges

        try:
            timed_in = check_ranges(tg["timed_in"], len(samples))
        except ValueError as err:
            raise InputError(f"{where}: extra_info.tilegate.{err}") from err
    budget = tg.get("budget")
    stopped = budget.get("stopped") if isinstance(budget, dict) else None
    if stopped is not None and not isinstance(stopped, str):
        raise InputError(
            f"{where}: extra_info.tilegate.budget.stopped is {stopped!r}; expected a string"
        )
    autotune = tg.get("autotune", [])
    if not isinstance(autotune, list) or not all(
        isinstance(p, dict)
        and isinstance(p.get("kernel"), str)
        and isinstance(p.get("config"), dict)
        for p in autotune
    ):
        raise InputError(
            f"{where}: extra_info.tilegate.autotune is {autotune!r}; expected a list of picks "
            "(kernel, key, config)"
        )
    host = tg.get("host_samples_s")
    if host is not None and (
        not isinstance(host, list)
        or len(host) != len(samples)
        or not all(is_finite_positive(h) for h in host)
    ):
        raise InputError(
            f"{where}: extra_info.tilegate.host_samples_s must be one positive host time per "
            f"sample ({len(samples)}); re-run the suite"
        )
    probe = tg.get("host_s")  # a call not held: its host time with nothing queued ahead
    if probe is not None and not is_finite_positive(probe):
        raise InputError(
            f"{where}: extra_info.tilegate.host_s is {probe!r}; expected the host seconds per "
            "call (a positive number); re-run the suite"
        )
    pinned = _parse_pinned(where, tg.get("pinned"))
    pass_medians = tg.get("pass_medians_s")
    sweeps = None
    if isinstance(pass_medians, list) and pass_medians and len(samples) % len(pass_medians) == 0:
        sweeps = len(pass_medians)
    row = Row(
        autotune=tuple(MappingProxyType(dict(p)) for p in autotune),
        host_s=float(statistics.median(host)) if host else probe and float(probe),
        host_samples_s=tuple(float(h) for h in host) if host else None,
        host_bound=bool(tg["host_bound"]) if isinstance(tg.get("host_bound"), bool) else None,
        held=tg.get("held") is True,
        timed_in=timed_in,
        budget_stopped=stopped,
        sweeps=sweeps,
        gpu_index=gpu_index,
        gpu_serial=str(tg["gpu_serial"]) if tg.get("gpu_serial") is not None else None,
        reference=tg.get("reference") is True,
        side=side,
        ratio_to_base=ratios["ratio_to_base"],
        **code,
        key=key,
        variant=tg["variant"],
        params=MappingProxyType(dict(params)),
        group=group,
        samples_s=tuple(float(s) for s in samples),
        median_s=float(statistics.median(samples)),
        tflops=ratios["tflops"],
        gbps=ratios["gbps"],
        ratio_to_reference=ratios["ratio_to_reference"],
        twin=twin if isinstance(twin, str) and twin else None,
        ratio_to_twin=ratios["ratio_to_twin"],
    )
    if pinned is None:
        return row
    samples_p, host_p, picks = pinned
    return replace(
        row,
        pinned=replace(
            row,
            samples_s=samples_p,
            median_s=float(statistics.median(samples_p)),
            host_samples_s=host_p,
            host_s=float(statistics.median(host_p)) if host_p else None,
            autotune=picks,
            timed_in=None,
            budget_stopped=None,
            sweeps=None,
            ratio_to_base=None,
            ratio_to_reference=None,
            ratio_to_twin=None,
        ),
    )


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
    if problem is None and not (
        isinstance(picks, list)
        and picks
        and all(isinstance(p, dict) and isinstance(p.get("config"), dict) for p in picks)
    ):
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


# How far a recorded ratio may be from the one its samples give (relative). The suite writes
# full precision, so the two agree to the last bit; 0.05 % admits a writer that rounds to 4
# significant digits, and is a tenth of the smallest tolerance the gate applies (the A/B floor,
# 0.5 %), so a difference it lets through cannot move a verdict. A ratio "left at 0.67" whose
# samples say 1.0 is 49 % off.
RATIO_AGREEMENT = 5e-4


def paired(x: Row, y: Row) -> float:
    """x / y over the rounds both rows were timed in (`stats.paired_ratio`)."""
    from tilegate.judge.rounds import aligned

    return stats.paired_ratio(*aligned(x.samples_s, x.timed_in, y.samples_s, y.timed_in))


def _ensure_paired(path: Path, sides: Mapping[str, Mapping[str, Row]]) -> None:
    """The rows of a group (both sides of an A/B run) were timed in the same rounds: same count.

    A row that says which of the group's rounds it was timed in (`timed_in`, an A/B budget's
    sentinel or stopped base) is checked against the group's rounds instead: within them, and
    sharing rounds with the group's rows timed in all of them."""
    groups: dict[str, list[tuple[str, int]]] = {}
    spans: dict[str, int] = {}
    for rows in sides.values():
        for row in rows.values():
            if row.timed_in is not None:
                spans[row.group] = max(spans.get(row.group, 0), row.timed_in[-1][1])
    for side, rows in sides.items():
        for row in rows.values():
            if row.timed_in is not None and row.timed_in != ((0, spans[row.group]),):
                continue  # budgeted into some rounds: paired over the rounds it shares
            name = row.key + ("@base" if side == "base" else "")
            groups.setdefault(row.group, []).append((name, len(row.samples_s)))
    for group, members in groups.items():
        if len({n for _, n in members}) > 1:
            counts = ", ".join(f"{name} {n}" for name, n in members)
            raise InputError(
                f"results file {path}: the rows of group {group} have different "
                f"numbers of samples ({counts}), so they were not timed in the same rounds and "
                "their same-run ratios mean nothing. The suite times a group's rows round by "
                "round: measure again; a file assembled from several runs cannot be judged."
            )


def _ensure_same_params(
    path: Path, env: Environment, sides: Mapping[str, Mapping[str, Row]]
) -> None:
    """Every row holds the run's fixed parameters, and the rows of a group (both sides) hold the
    same parameters: a row whose M or K was edited would otherwise be judged, or baselined, as a
    case it was not measured as."""
    first: dict[str, Row] = {}
    for rows in sides.values():
        for row in rows.values():
            wrong = {k: row.params.get(k) for k, v in env.fixed.items() if row.params.get(k) != v}
            if wrong:
                raise InputError(
                    f"results file {path}, row {row.key}: parameters {wrong} differ from the "
                    f"run's fixed {dict(env.fixed)} (machine_info.tilegate.fixed); the file was "
                    "edited or assembled by hand: measure again"
                )
            seen = first.setdefault(row.group, row)
            if dict(row.params) != dict(seen.params):
                raise InputError(
                    f"results file {path}: rows {seen.key} and {row.key} of group {row.group} "
                    f"have different parameters ({dict(seen.params)} vs {dict(row.params)}); a "
                    "group's rows are one grid point: the file was edited or assembled by hand, "
                    "measure again"
                )


def _checked_ratios(
    path: Path, side: str, sides: Mapping[str, Mapping[str, Row]]
) -> dict[str, Row]:
    """The side's rows with every same-run ratio derived from the samples; a recorded one that
    disagrees with them (beyond RATIO_AGREEMENT), or whose other row is absent, is an InputError."""
    rows = sides[side]
    # the reference is measured once, on the head side, against which both sides' ratios are
    references = {r.group: r for r in sides["head"].values() if r.reference}
    by_variant = {(r.variant, r.group): r for r in rows.values()}
    out = {}
    for key, row in rows.items():
        against = {
            "ratio_to_reference": None if row.reference else references.get(row.group),
            "ratio_to_twin": by_variant.get((row.twin, row.group)) if row.twin else None,
            "ratio_to_base": sides["base"].get(key) if side == "head" else None,
        }
        derived: dict[str, float | None] = {}
        for name, other in against.items():
            recorded = getattr(row, name)
            if other is None:
                if recorded is not None:
                    raise InputError(
                        f"results file {path}, row {key}: records {name} = {recorded:g}, but the "
                        "row it is a ratio to is not in the file, so it cannot be checked: "
                        "measure again (the suite writes a ratio only beside both rows)"
                    )
                derived[name] = None
                continue
            try:
                now = paired(row, other)
            except ValueError as err:
                raise InputError(
                    f"results file {path}, row {key}: its {name} cannot be paired with "
                    f"{other.key}: {err}; measure again"
                ) from err
            if recorded is not None and abs(recorded / now - 1) > RATIO_AGREEMENT:
                raise InputError(
                    f"results file {path}, row {key}: records {name} = {recorded:.6g}, but its "
                    f"samples and those of {other.key} give {now:.6g} ({recorded / now - 1:+.2%}). "
                    "A recorded ratio must be what its per-round samples say: the file was edited "
                    "or assembled by hand; measure again."
                )
            derived[name] = now
        out[key] = replace(
            row,
            ratio_to_reference=derived["ratio_to_reference"],
            ratio_to_twin=derived["ratio_to_twin"],
            ratio_to_base=derived["ratio_to_base"],
        )
    return out


def parse_results(data: Any, p: Path) -> Run:
    """Validate one results file's JSON (read by tilegate.store.files.load_results); raise
    InputError naming the file and row on any problem."""
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
        row = _parse_row(p, i, bench)
        rows = sides[row.side]
        if row.key in rows:
            which = "" if row.side == "head" else " (base side)"
            raise InputError(
                f"results file {p}, row {row.key}{which}: appears twice; a results file holds one "
                "run. Were two runs merged into it? Give each run its own file (`tilegate compare "
                "RUN --confirm RERUN`, `tilegate rebaseline RUN1 RUN2 ...`), or measure it again"
            )
        rows[row.key] = row
    _ensure_paired(p, sides)
    _ensure_same_params(p, env, sides)
    sides = {side: _checked_ratios(p, side, sides) for side in sides}
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
