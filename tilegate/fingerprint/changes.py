"""Two fingerprints compared: each difference labelled worse / better / changed, with why it
matters (docs/fingerprint.md); the files themselves are tilegate.store.fingerprints'."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tilegate.store.fingerprints import CONFIG_KEYS, FACT_KEYS, Entry

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
    **{  # per operand: A's and B's
        f"{op}_{fact}": (better, why.replace("X", op.upper()))
        for op in "ab"
        for fact, better, why in (
            (
                "buffers",
                "higher",
                "stages of X in flight: fewer hide less memory latency, 1 means X's loads stop "
                "overlapping the MMA; more cost shared memory",
            ),
            (
                "load",
                "higher",
                "how X reaches shared memory: cp.async / TMA run ahead of the MMA, sync does not",
            ),
            ("multi_buffered", "higher", "X's loads overlap the MMA only when multi-buffered"),
        )
    },
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


# a kernel only one side has: (old, new, verdict, why), by whether it is compiled now
_KERNEL = {
    False: (
        "recorded",
        "gone",
        "removed",
        "a recorded kernel is no longer compiled (variant renamed or dropped, or K now splits it); "
        "re-record if intended",
    ),
    True: (
        "absent",
        "compiled",
        "added",
        "a kernel with no recorded fingerprint: record it so later changes are caught",
    ),
}


def diff(
    old: Mapping[str, Entry], new: Mapping[str, Entry], allowances: Mapping[str, int]
) -> list[Change]:
    """Every difference between two sets of fingerprints, in kernel then field order."""
    changes: list[Change] = []
    for kid in sorted(set(old) | set(new)):
        if kid not in new or kid not in old:
            changes.append(Change(kid, "kernel", *_KERNEL[kid in new]))
            continue
        o, n = old[kid], new[kid]
        for k in CONFIG_KEYS:
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
