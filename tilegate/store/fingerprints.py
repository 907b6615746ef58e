"""Stored fingerprints (`baselines/fingerprints/triton-<version>/<arch>.json`): read and written.

The store's interface (tilegate.store): location `fingerprint_path`, query `other_versions`,
load `load_fingerprints`, save `write_fingerprints`.

One file per (Triton version, architecture): a Triton upgrade is a new directory, recorded on
purpose, never a silent pass. Schema (validated on load; a bad file is an InputError, exit 2)::

    {"schema": "tilegate.fingerprint/1", "triton": "3.6.0", "arch": "sm_90", "ptxas": "12.8.93",
     "target": {"capability": [9, 0], "num_sms": 132, "gpu": "..."},
     "profile": {"name": "default", "m": 16384, "n": 16384, "ks": [...], ...},
     "kernels": {"xtile_persistent-fp16-nn-sm90": {
         "variant": ..., "dtype": ..., "layout": ..., "ks": [128, ..., 4096],
         "config": {"num_warps": 8, "num_stages": 3, "constexprs": {...}, "signature": "..."},
         "facts": {"fused": true, "a_buffers": 3, ..., "registers": 214, "spill_stores": 0}}}}

Their comparison: tilegate.fingerprint.changes (docs/fingerprint.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, read_json

SCHEMA = "tilegate.fingerprint/1"
DEFAULT_DIR = Path("baselines") / "fingerprints"


def record_hint(triton: str) -> str:
    """The command that records the fingerprints of Triton `triton` (any version: the session
    builds a virtualenv with it), and the one for an environment that already has it."""
    return (
        f"`nox -s fingerprint_rebaseline -- --triton {triton}` (or, where Triton {triton} is "
        f"installed: `tilegate fingerprint --record`)"
    )


FACT_KEYS = (
    "fused",
    "loops",
    "mma_loop_depth",
    "mma",
    "acc_select",
    *(f"{op}_{fact}" for op in "ab" for fact in ("buffers", "load", "multi_buffered")),
    "wgmma_wait",
    "ws_requested",
    "warp_specialized",
    "ws_partitions",
    "ws_warps",
    "ws_registers",
    "shared_bytes",
    "registers",
    "spill_stores",
    "spill_loads",
    "stack_bytes",
)
CONFIG_KEYS = ("num_warps", "num_stages", "constexprs", "signature")


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
        if not isinstance(config, dict) or any(k not in config for k in CONFIG_KEYS):
            raise _bad(path, where, f"'config' must hold {list(CONFIG_KEYS)}")
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
