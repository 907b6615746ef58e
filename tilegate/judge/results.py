"""A run: its environment, its rows (both sides of an A/B), their order, their same-run ratios;
frozen, built once from a results file (tilegate.judge.resultsjson), `checked` as one run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tilegate import __version__
from tilegate.errors import InputError
from tilegate.judge import stats
from tilegate.judge.memory import Memory
from tilegate.judge.rounds import aligned

SMOKE_SLUG = "smoke"  # the "GPU" of a smoke run (CPU interpreter): no GPU facts exist


@dataclass(frozen=True)
class Gpu:
    name: str
    slug: str
    sm_count: int | None = None
    capability: tuple[int, ...] | None = None
    driver: str | None = None
    cuda: str | None = None
    memory_gib: float | None = None


@dataclass(frozen=True)
class GpuFile:
    """A file of one GPU model (a baseline, an A/B noise file): where, the GPU, its provenance."""

    path: Path
    gpu: Mapping[str, Any]
    provenance: Mapping[str, Any]

    @property
    def slug(self) -> str:
        return str(self.gpu["slug"])

    def ensure_gpu_of(self, run: Run, what: str, remedy: str) -> None:
        """InputError unless `run`'s GPU is the one the file's label names (`gpu_mismatch`)."""
        gpu, differs = run.env.gpu, gpu_mismatch(self.gpu, run.env.gpu)
        if differs:
            raise InputError(
                f"{what} {self.path} was recorded on {describe_gpu(self.gpu)} but results "
                f"{run.path} on {describe_gpu(gpu)}, both labelled {gpu.slug}: "
                f"{', '.join(differs)}. {remedy}"
            )

    def json_of(self, schema: tuple[str, Any], **rest: Any) -> dict[str, Any]:
        """The file's JSON: its schema key, the GPU, the provenance, then `rest` in order."""
        return {
            schema[0]: schema[1],
            "gpu": dict(self.gpu),
            "provenance": dict(self.provenance),
            **rest,
        }


def _facts(gpu: Gpu | Mapping[str, Any]) -> tuple[Any, tuple[int, ...] | None, Any]:
    """(name, capability, SM count) of a run's Gpu or a GPU recorded in a file."""
    if isinstance(gpu, Gpu):
        return gpu.name, gpu.capability, gpu.sm_count
    return gpu.get("name"), capability(gpu.get("capability")), gpu.get("sm_count")


def gpu_json(gpu: Gpu) -> dict[str, Any]:
    """The GPU as a baseline or noise file records it."""
    cap = list(gpu.capability) if gpu.capability else None
    return {"name": gpu.name, "slug": gpu.slug, "sm_count": gpu.sm_count, "capability": cap}


def provenance_of(runs: Sequence[Run]) -> dict[str, Any]:
    """What a file built from `runs` (a baseline, a noise file) records of them."""
    env = runs[0].env
    return {
        "tool": f"tilegate {__version__}",
        "software": dict(env.software),
        "driver": env.gpu.driver,
        "cuda": env.gpu.cuda,
        "profiles": sorted({r.env.profile for r in runs}),
        "runs": [
            {"file": r.path.name, "datetime": r.env.datetime, "commit": r.env.commit} for r in runs
        ],
    }


def describe_gpu(gpu: Gpu | Mapping[str, Any]) -> str:
    """'NVIDIA H200 (sm_90, 132 SMs)'."""
    name, cap, sms = _facts(gpu)
    facts = [_show(cap) if cap else None, f"{sms} SMs" if sms else None]
    return f"{name} ({', '.join(f for f in facts if f) or 'no details'})"


def capability(value: Any) -> tuple[int, ...] | None:
    """(major, minor) from a JSON [9, 0]; None for anything else."""
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value)
    ):
        return tuple(value)
    return None


def gpu_mismatch(recorded: Gpu | Mapping[str, Any], gpu: Gpu) -> list[str]:
    """How a GPU recorded in a file, or another run's, differs from `gpu`: the slug is a label,
    name, capability and SM count say which GPU it is (facts both sides record)."""
    whats = ("name", "compute capability", "SM count")
    return [
        f"{what} {_show(was)} vs {_show(now)}"
        for what, was, now in zip(whats, _facts(recorded), _facts(gpu), strict=True)
        if was is not None and now is not None and was != now
    ]


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
    fixed: Mapping[str, Any]  # the profile's fixed parameters as measured
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
    budget: Mapping[str, Any] | None = None  # how an A/B run's rounds were spent (harness.budget)
    warnings: tuple[Mapping[str, Any], ...] = ()  # Triton / torch warnings, recorded (warnlog)
    # several GPUs of one host (run.shard): each {"gpu": {..., "index", "serial"}, "state"}
    gpus: tuple[Mapping[str, Any], ...] = ()
    # asked to measure (--perf-variants, else all); None: not recorded, every variant selected
    variants: tuple[str, ...] | None = None
    # every variant of the head's registry (None: not recorded) and its renames {new: (old, ...)}
    registry: tuple[str, ...] | None = None
    renamed: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    benchmark: str | None = None  # the declared benchmark's name
    # the declared expectations {"faster", "than", "per", "where"} (None: `Run.relations`)
    expectations: tuple[Mapping[str, Any], ...] | None = None
    # the grid's axes in order (files without the key: the matmul benchmark's)
    axes: tuple[str, ...] = ("dtype", "layout", "K")
    coverage: Mapping[str, Any] | None = None
    memory_tolerance: str | None = "0"  # the protocol's (tilegate.judge.memory)
    peaks: Mapping[str, float] | None = None  # the GPU's row of tilegate.peaks, if known

    @property
    def smoke(self) -> bool:
        return self.mode == "smoke"


@dataclass(frozen=True)
class Row:
    """One benchmark case of one run (its extra_info.tilegate: docs/architecture.md, "Results")."""

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
    # which of its group's rounds the samples are (half-open ranges; None: every round): an
    # A/B run's budget (tilegate.harness.budget) times some base rows in fewer rounds
    timed_in: tuple[tuple[int, int], ...] | None = None
    # why the A/B budget stopped timing it (extra_info.tilegate.budget.stopped): "cap" when a
    # changed pair used every round it may have (tilegate.harness.budget.CAP_FACTOR)
    budget_stopped: str | None = None
    # how many timing sweeps its samples came from (len(pass_medians_s); None: not recorded):
    # round r of the group is in sweep r // (len(samples_s) // sweeps)
    sweeps: int | None = None
    autotune: tuple[Mapping[str, Any], ...] = ()
    # host seconds per call: the median, one per round of samples_s; host-bound, held
    host_s: float | None = None
    host_samples_s: tuple[float, ...] | None = None
    host_bound: bool | None = None
    held: bool = False
    # a host-bound case of a two-process A/B (tilegate.harness.hostworkers)
    host_procs_s: tuple[float, ...] | None = None
    host_blocks_s: tuple[tuple[float, ...], ...] | None = None  # each process's, alternated
    host_profile: tuple[tuple[str, float], ...] = ()
    syncs_inside: bool | None = None
    pinned: Row | None = None  # a tuner flip re-timed on the base's pick, as a row of its own
    memory: Memory | None = None  # peak GPU memory of one call (tilegate.judge.memory)
    work_dtype: str | None = None  # the precision of its declared FLOPs (tilegate.peaks)


def param_order(params: Mapping[str, Any], axes: Sequence[str]) -> tuple[Any, ...]:
    """How rows sort: the grid's `axes` in order, then the other parameters by name, numbers before
    text. Never by a mapping's key order: sorting a baseline's (sorted) and a results file's rows
    by their values compared "fp16" with 128 (a crash of every GPU run judged against it)."""
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
        found = next((r for r in rows.values() if (r.variant, r.group) == (variant, group)), None)
        if found is None and side == "base" and self.reference == variant:  # measured once
            return self.find(variant, group)
        return found

    def group_of(self, where: Mapping[str, Any]) -> str | None:
        """The one group whose parameters include `where` (None: none or several)."""
        found = {r.group for r in self.rows.values() if matches(r.params, where)}
        return found.pop() if len(found) == 1 else None

    def ratio(self, variant: str, than: str, group: str, *, side: str = "head") -> float | None:
        """variant / than paired per round in this run (`side="base"`: the base's versions), never a
        number the file merely states; None unless both were measured."""
        x, y = self.find(variant, group, side=side), self.find(than, group, side=side)
        return paired(x, y) if x is not None and y is not None else None

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

    def sort_key(self, row: Row | Any) -> tuple[Any, ...]:
        """Where `row` (or a verdict of one) stands in every table of this run (`row_order`)."""
        return row_order(row.params, row.variant, self.env.axes, self.variant_order)

    @property
    def variant_order(self) -> list[str]:
        """Variants in the order the suite ran them (the registry's order)."""
        return list(dict.fromkeys(r.variant for r in self.rows.values()))


# How far a recorded ratio may be from the one its samples give (relative). The suite writes
# full precision, so the two agree to the last bit; 0.05 % admits a writer that rounds to 4
# significant digits, and is a tenth of the smallest tolerance the gate applies (the A/B floor,
# 0.5 %), so a difference it lets through cannot move a verdict. A ratio "left at 0.67" whose
# samples say 1.0 is 49 % off.
RATIO_AGREEMENT = 5e-4


def paired(x: Row, y: Row) -> float:
    """x / y over the rounds both rows were timed in (`stats.paired_ratio`)."""
    return stats.paired_ratio(*aligned(x.samples_s, x.timed_in, y.samples_s, y.timed_in))


def _ensure_paired(path: Path, sides: Mapping[str, Mapping[str, Row]]) -> None:
    """A group's rows (both sides) were timed in the same rounds: the same count, but for a row
    timed in some of them (`timed_in`), paired over the rounds it shares."""
    every = [(side, row) for side, rows in sides.items() for row in rows.values()]
    spans: dict[str, int] = {}
    for _, row in every:
        if row.timed_in is not None:
            spans[row.group] = max(spans.get(row.group, 0), row.timed_in[-1][1])
    groups: dict[str, list[tuple[str, int]]] = {}
    for side, row in every:
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
    """Every row holds the run's fixed parameters and a group's rows one set: an edited row would
    otherwise be judged, or baselined, as a case it was not measured as."""
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
        derived: dict[str, Any] = {}
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
        out[key] = replace(row, **derived)
    return out


def checked(
    path: Path, env: Environment, sides: Mapping[str, Mapping[str, Row]]
) -> dict[str, dict[str, Row]]:
    """A run's rows (both sides) checked as one run and their ratios derived from the samples."""
    _ensure_paired(path, sides)
    _ensure_same_params(path, env, sides)
    return {side: _checked_ratios(path, side, sides) for side in sides}
