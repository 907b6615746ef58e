"""Stored fingerprints (`baselines/fingerprints/triton-<version>/<arch>.json`) and their diff.

One file per (Triton version, architecture): a Triton upgrade is a new directory, recorded on
purpose, never a silent pass. Schema (validated on load; a bad file is an InputError, exit 2)::

    {"schema": "tilegate.fingerprint/1", "triton": "3.6.0", "arch": "sm_90", "ptxas": "12.8.93",
     "target": {"capability": [9, 0], "num_sms": 132, "gpu": "..."},
     "profile": {"name": "default", "m": 16384, "n": 16384, "ks": [...], ...},
     "kernels": {"xtile_persistent-fp16-nn-sm90": {
         "variant": ..., "dtype": ..., "layout": ..., "ks": [128, ..., 4096],
         "config": {"num_warps": 8, "num_stages": 3, "constexprs": {...}, "signature": "..."},
         "facts": {"fused": true, "a_buffers": 3, ..., "registers": 214, "spill_stores": 0}}}}

Comparison (see docs/fingerprint.md for why): every fact and the launch configuration must be
equal, except `registers`, which may move by the rules file's allowance. Each difference is
labelled worse / better / changed and carries a sentence on why it matters. The ptxas version
(Triton bundles its own; registers and spills come from it) is compared too, for information.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, read_json

from .compile import FACT_KEYS

SCHEMA = "tilegate.fingerprint/1"
DEFAULT_DIR = Path("baselines") / "fingerprints"


def record_hint(triton: str) -> str:
    """The command that records the fingerprints of Triton `triton` (any version: the session
    builds a virtualenv with it), and the one for an environment that already has it."""
    return (
        f"`nox -s fingerprint_rebaseline -- --triton {triton}` (or, where Triton {triton} is "
        f"installed: `tilegate fingerprint --record`)"
    )


_CONFIG_KEYS = ("num_warps", "num_stages", "constexprs", "signature")


@dataclass(frozen=True)
class Entry:
    """One kernel's stored fingerprint."""

    id: str
    variant: str
    dtype: str
    layout: str
    ks: tuple[int, ...]
    config: Mapping[str, Any]
    facts: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "dtype": self.dtype,
            "layout": self.layout,
            "ks": list(self.ks),
            "config": dict(self.config),
            "facts": dict(self.facts),
        }


@dataclass(frozen=True)
class FingerprintFile:
    """One stored fingerprint file: the kernels of one (Triton version, architecture)."""

    path: Path
    triton: str
    arch: str
    ptxas: str  # the version of the ptxas that assembled them, e.g. "12.8.93"
    entries: dict[str, Entry]


def fingerprint_path(base_dir: Path, triton: str, arch: str) -> Path:
    return Path(base_dir) / f"triton-{triton}" / f"{arch}.json"


def version_key(v: str) -> tuple[int, ...]:
    """Numeric order of Triton versions ("3.10.0" after "3.9.0")."""
    return tuple(int(x) for x in re.findall(r"\d+", v))


def other_versions(base_dir: Path, arch: str, exclude: str) -> list[tuple[str, Path]]:
    """Recorded (version, path) of other Triton versions for `arch`, newest first."""
    out = []
    for d in Path(base_dir).glob("triton-*"):
        v = d.name.removeprefix("triton-")
        if v != exclude and (d / f"{arch}.json").is_file():
            out.append((v, d / f"{arch}.json"))
    return sorted(out, key=lambda x: version_key(x[0]), reverse=True)


@dataclass(frozen=True)
class Reference:
    """The recording a first recording of a Triton version is compared with."""

    triton: str
    path: Path
    upgrade: bool  # True: an older version (the upgrade's "from"); False: a newer one

    def describe(self, version: str) -> str:
        if self.upgrade:
            return f"Triton {self.triton} -> {version}: what the upgrade changes"
        return f"Triton {self.triton} -> {version} is a downgrade: what going back changes"


def reference_for(base_dir: Path, arch: str, version: str) -> Reference | None:
    """The newest recorded version older than `version` (the upgrade's "from"); failing that,
    the oldest newer one (then the change is a downgrade); None if `arch` has no other."""
    others = other_versions(base_dir, arch, version)  # newest first
    older = [(v, p) for v, p in others if version_key(v) < version_key(version)]
    if older:
        return Reference(*older[0], upgrade=True)
    if others:
        return Reference(*others[-1], upgrade=False)
    return None


def _bad(path: Path, where: str, what: str) -> InputError:
    version = Path(path).parent.name.removeprefix("triton-")  # the directory names the version
    return InputError(
        f"fingerprint file {path}: {where}: {what}; restore it from git or re-record it with "
        f"{record_hint(version)}"
    )


def load_fingerprints(
    path: Path, *, triton: str | None = None, arch: str | None = None
) -> FingerprintFile:
    """Read and validate one fingerprint file."""
    data = read_json(path, "fingerprint file")
    if not isinstance(data, dict):
        raise _bad(path, "top level", "must be an object")
    if data.get("schema") != SCHEMA:
        raise _bad(path, "schema", f"expected {SCHEMA!r}, found {data.get('schema')!r}")
    if triton is not None and data.get("triton") != triton:
        raise _bad(
            path,
            "triton",
            f"file says Triton {data.get('triton')!r} but lies in the directory of {triton}",
        )
    if arch is not None and data.get("arch") != arch:
        raise _bad(path, "arch", f"file says {data.get('arch')!r}, expected {arch!r}")
    for key in ("triton", "arch", "ptxas"):
        if not isinstance(data.get(key), str):
            raise _bad(path, key, "must be a string")
    kernels = data.get("kernels")
    if not isinstance(kernels, dict):
        raise _bad(path, "kernels", "must be an object of kernel id -> fingerprint")
    out: dict[str, Entry] = {}
    for kid, e in kernels.items():
        where = f"kernels[{kid!r}]"
        if not isinstance(e, dict):
            raise _bad(path, where, "must be an object")
        facts, config = e.get("facts"), e.get("config")
        if not isinstance(facts, dict):
            raise _bad(path, where, "'facts' must be an object")
        missing = [k for k in FACT_KEYS if k not in facts]
        if missing:
            raise _bad(path, where, f"facts lack {missing}")
        if not isinstance(config, dict) or any(k not in config for k in _CONFIG_KEYS):
            raise _bad(path, where, f"'config' must hold {list(_CONFIG_KEYS)}")
        for k in ("variant", "dtype", "layout"):
            if not isinstance(e.get(k), str):
                raise _bad(path, where, f"{k!r} must be a string")
        ks = e.get("ks")
        if not (isinstance(ks, list) and all(isinstance(k, int) for k in ks)):
            raise _bad(path, where, "'ks' must be a list of integers")
        out[kid] = Entry(kid, e["variant"], e["dtype"], e["layout"], tuple(ks), config, facts)
    return FingerprintFile(Path(path), data["triton"], data["arch"], data["ptxas"], out)


def write_fingerprints(
    path: Path,
    *,
    triton: str,
    arch: str,
    target: Mapping[str, Any],
    profile: Mapping[str, Any],
    ptxas: str,
    entries: Mapping[str, Entry],
) -> None:
    """Write one fingerprint file atomically (stable key order: reviewable diffs)."""
    atomic_write_json(
        path,
        {
            "schema": SCHEMA,
            "triton": triton,
            "arch": arch,
            "ptxas": ptxas,
            "target": dict(target),
            "profile": dict(profile),
            "kernels": {k: e.to_json() for k, e in sorted(entries.items())},
        },
        inline_scalar_lists=True,
    )


# --- diff ------------------------------------------------------------------------------------

_LOAD_RANK = {"sync": 0, "sync-tma": 0, "cp.async": 1, "tma": 1}

# field -> (which direction is better: "higher" / "lower" / None, why it matters)
FIELD_INFO: dict[str, tuple[str | None, str]] = {
    "fused": (
        "higher",
        "tile and K loops fused = cross-tile pipelining: the next tile's loads overlap this "
        "tile's epilogue; unfused, the pipeline drains at every tile boundary",
    ),
    "loops": (None, "the loop structure of the kernel changed (fusion, versioning or peeling)"),
    "mma_loop_depth": (
        None,
        "the MMA moved to a loop of another depth: nested (pipeline restarts per tile) vs fused",
    ),
    "mma": (
        None,
        "the MMA instruction changed (wgmma is async warpgroup MMA; mma_v2 is synchronous per warp)",
    ),
    "acc_select": (
        None,
        "the per-step accumulator reset (select over the whole accumulator) that flattening "
        "adds appeared or went away",
    ),
    "a_buffers": (
        "higher",
        "stages of A in flight: fewer hide less memory latency, 1 means A's loads stop "
        "overlapping the MMA; more cost shared memory",
    ),
    "b_buffers": (
        "higher",
        "stages of B in flight: fewer hide less memory latency, 1 means B's loads stop "
        "overlapping the MMA; more cost shared memory",
    ),
    "a_load": (
        "higher",
        "how A reaches shared memory: cp.async / TMA run ahead of the MMA, sync does not",
    ),
    "b_load": (
        "higher",
        "how B reaches shared memory: cp.async / TMA run ahead of the MMA, sync does not",
    ),
    "a_multi_buffered": ("higher", "A's loads overlap the MMA only when multi-buffered"),
    "b_multi_buffered": ("higher", "B's loads overlap the MMA only when multi-buffered"),
    "wgmma_wait": (
        "higher",
        "wgmma ops left in flight at the loop's wait: 0 serializes MMA and the next loads",
    ),
    "ws_requested": (
        None,
        "the kernel's request for warp specialization (the TTGIR's tt.warp_specialize) appeared or "
        "went away: warp_specialize= edited in the kernel, or a Triton that handles it otherwise",
    ),
    "warp_specialized": (
        "higher",
        "warp-specialized, a producer partition issues the TMA loads while consumer partitions run "
        "the MMAs and the epilogue, so one tile's store overlaps the next tile's MMAs; without it "
        "the same kernel is a plain persistent one (H200, K = 128: 0.20 ms vs 0.32 ms)",
    ),
    "ws_partitions": (
        None,
        "the warp groups that run at once changed (the default region plus each partition): "
        "a different split of loads, MMAs and epilogue",
    ),
    "ws_warps": (
        None,
        "warps per partition changed (the default region first): how many warps load, multiply "
        "and store",
    ),
    "ws_registers": (
        None,
        "the registers each partition asks for (setmaxnreg) changed: MMA consumers hold the "
        "accumulator, a producer needs few; too few for a consumer and ptxas spills",
    ),
    "shared_bytes": (
        None,
        "shared memory per block bounds how many blocks fit on an SM and must stay under the "
        "architecture's limit; a change with equal buffers means extra scratch (e.g. a layout "
        "conversion while the input buffers are live: the write-up's 36 -> 40 KiB)",
    ),
    "registers": (
        "lower",
        "registers per thread bound occupancy; near the limit ptxas starts to spill",
    ),
    "spill_stores": ("lower", "register spills are local-memory traffic inside the main loop"),
    "spill_loads": ("lower", "register spills are local-memory traffic inside the main loop"),
    "stack_bytes": (
        "lower",
        "stack frame in local memory (spills, or arrays the compiler could not keep in registers)",
    ),
    "num_warps": (
        None,
        "the launch configuration changed: a different kernel, expect its facts to move",
    ),
    "num_stages": (
        None,
        "the requested pipeline depth changed: buffers and shared memory follow it",
    ),
    "constexprs": (
        None,
        "the kernel's compile-time constants (tiles, flags) changed: a different kernel",
    ),
    "signature": (
        None,
        "the JIT specialization changed (alignment hints, ints folded to constants): "
        "the kernel that runs is a different specialization",
    ),
}


# What ptxas allocates, not the pipeline: registers and the stack frame move with every ptxas
# (so an upgrade report never fails on them; a check still does, beyond the allowance).
# Every other fact and the launch config is a pipelining fact (docs/fingerprint.md).
ALLOCATION_FIELDS = frozenset({"registers", "stack_bytes"})


@dataclass(frozen=True)
class Change:
    kernel: str
    field: str
    old: Any
    new: Any
    verdict: str  # "worse", "better", "changed", "within allowance", "added", "removed", "info"
    why: str

    @property
    def fails(self) -> bool:
        return self.verdict not in ("within allowance", "info")


def is_pipelining(change: Change) -> bool:
    """A change of the kernel's pipeline (not of its register allocation, not information)."""
    return change.field not in ALLOCATION_FIELDS and change.verdict != "info"


def _direction(fld: str, old: Any, new: Any) -> str:
    better = FIELD_INFO.get(fld, (None, ""))[0]
    if better is None:
        return "changed"
    if fld.endswith("_load"):
        o, n = _LOAD_RANK.get(str(old)), _LOAD_RANK.get(str(new))
        if o is None or n is None or o == n:
            return "changed"
        return "better" if n > o else "worse"
    try:
        up = new > old
    except TypeError:
        return "changed"
    return "better" if up == (better == "higher") else "worse"


def _fmt_dict_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, str]:
    keys = sorted(set(old) | set(new), key=str)
    diff = [k for k in keys if old.get(k) != new.get(k)]
    return (
        ", ".join(f"{k}={old.get(k)}" for k in diff),
        ", ".join(f"{k}={new.get(k)}" for k in diff),
    )


def diff_ptxas(arch: str, old: str, new: str) -> list[Change]:
    """The assembler's version, if it changed: information (its effects show in the facts)."""
    if old == new:
        return []
    return [
        Change(
            f"(every {arch} kernel)",
            "ptxas",
            old,
            new,
            "info",
            "the assembler changed (Triton bundles its own ptxas; Triton 3.9 assembles sm_90 with "
            "its ptxas-blackwell): registers, spills and stack come from it",
        )
    ]


def diff(
    old: Mapping[str, Entry], new: Mapping[str, Entry], allowances: Mapping[str, int]
) -> list[Change]:
    """Every difference between two sets of fingerprints, in kernel then field order."""
    changes: list[Change] = []
    for kid in sorted(set(old) | set(new)):
        if kid not in new:
            changes.append(
                Change(
                    kid,
                    "kernel",
                    "recorded",
                    "gone",
                    "removed",
                    "a recorded kernel is no longer compiled (variant renamed or dropped, or K "
                    "now splits it); re-record if intended",
                )
            )
            continue
        if kid not in old:
            changes.append(
                Change(
                    kid,
                    "kernel",
                    "absent",
                    "compiled",
                    "added",
                    "a kernel with no recorded fingerprint: record it so later changes are caught",
                )
            )
            continue
        o, n = old[kid], new[kid]
        for k in _CONFIG_KEYS:
            ov, nv = o.config.get(k), n.config.get(k)
            if ov == nv:
                continue
            if isinstance(ov, dict) and isinstance(nv, dict):
                ov, nv = _fmt_dict_change(ov, nv)
            changes.append(Change(kid, k, ov, nv, "changed", FIELD_INFO[k][1]))
        for k in FACT_KEYS:
            ov, nv = o.facts.get(k), n.facts.get(k)
            if ov == nv:
                continue
            allow = allowances.get(k)
            if (
                allow is not None
                and isinstance(ov, int)
                and isinstance(nv, int)
                and abs(nv - ov) <= allow
            ):
                verdict = "within allowance"
            else:
                verdict = _direction(k, ov, nv)
            changes.append(Change(kid, k, ov, nv, verdict, FIELD_INFO.get(k, (None, ""))[1]))
        if o.ks != n.ks:
            changes.append(
                Change(
                    kid,
                    "ks",
                    list(o.ks),
                    list(n.ks),
                    "info",
                    "the suite's Ks that run this kernel changed (profile edited)",
                )
            )
    return changes
