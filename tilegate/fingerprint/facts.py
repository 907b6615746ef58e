"""Facts of one compiled Triton kernel, read from what its compile left: TTGIR, PTX, metadata.

Plain data, no I/O: `kernel_facts` turns (metadata, TTGIR text, PTX text) into a small flat
dict that a results row can carry (counts and flags, never the IR itself), and `occupancy`
says how many programs of a kernel fit on one SM of a known architecture. Anything that cannot
be read (a Triton without the field, TTGIR the fingerprint's parser does not know) is left out
of the dict, never raised: an explanation shows the facts both sides have.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from tilegate.fingerprint import extract

# PTX instruction classes counted for the instruction-mix line: name -> opcode regex (at the
# start of an instruction, after an optional predicate)
_MIX = {
    "wgmma": r"wgmma\.mma_async",
    "mma": r"mma\.sync",
    "ld.global": r"ld\.global",
    "st.global": r"st\.global",
    "cp.async": r"cp\.async\.(?:ca|cg)",
    "tma": r"cp\.async\.bulk",
    "barrier": r"(?:bar\.sync|barrier\.sync|mbarrier\.(?:try_wait|arrive))",
    "ld.shared": r"ld\.shared|ldmatrix",
    "st.shared": r"st\.shared|stmatrix",
}
_MIX_RE = {k: re.compile(r"^\s*(?:@!?%\w+\s+)?(?:" + v + r")\b", re.M) for k, v in _MIX.items()}
# per-SM limits by capability (major*10+minor): max warps, registers, shared memory a program
# may use (bytes), shared memory per SM, max programs (CTAs), shared memory the driver reserves
# per program. From the CUDA occupancy tables (CUDA C Programming Guide, compute capabilities).
_SM = {
    80: (64, 65536, 166912, 167936, 32, 1024),
    86: (48, 65536, 101376, 102400, 16, 1024),
    89: (48, 65536, 101376, 102400, 24, 1024),
    90: (64, 65536, 232448, 233472, 32, 1024),
    100: (64, 65536, 232448, 233472, 32, 1024),
    120: (48, 65536, 101376, 102400, 24, 1024),
}


def ir_hash(text: str) -> str:
    """A short hash of an IR text without its locations (file paths, lines): the A/B base's
    copy of a kernel lies in another directory, and a comment moves lines."""
    return hashlib.sha256(extract.strip_locations(text).encode()).hexdigest()[:16]


def ptx_mix(ptx: str) -> dict[str, int]:
    """Static counts of the instruction classes of `_MIX` in a PTX text (zero counts left out)."""
    out = {k: len(rx.findall(ptx)) for k, rx in _MIX_RE.items()}
    return {k: v for k, v in out.items() if v}


def ttgir_summary(ttgir: str) -> dict[str, Any]:
    """The fingerprint's TTGIR facts that explain a kernel (tilegate.fingerprint.extract);
    {} where its parser does not understand this TTGIR (not a matmul, another Triton)."""
    try:
        t = extract.ttgir_facts(ttgir)
    except Exception:
        return {}
    out: dict[str, Any] = {"loops": t.get("loops"), "mma": t.get("mma")}
    if t.get("mma"):
        ops = t.get("operands") or {}
        depths = [int(o.get("buffers") or 0) for o in ops.values() if isinstance(o, dict)]
        out["buffers"] = max(depths, default=0)
        out["fused"] = bool(t.get("fused"))
        if t.get("wgmma_wait") is not None:
            out["wgmma_wait"] = t["wgmma_wait"]
    out["warp_specialized"] = bool(t.get("warp_specialized"))
    if t.get("ws_partitions"):
        out["ws_partitions"] = t["ws_partitions"]
    return {k: v for k, v in out.items() if v is not None}


def occupancy(cc: int | None, num_warps: Any, registers: Any, shared: Any) -> int | None:
    """Programs (CTAs) of one kernel that fit on one SM of capability `cc`, or None when a
    fact is missing or the architecture is not in the table."""
    limits = _SM.get(cc or 0)
    if limits is None or not all(isinstance(x, int) for x in (num_warps, registers, shared)):
        return None
    max_warps, regs_sm, shared_max, shared_sm, max_ctas, reserved = limits
    if num_warps <= 0 or shared > shared_max:
        return 0
    by_warps = max_warps // num_warps
    per_warp = -(-max(registers, 1) * 32 // 256) * 256  # allocated per warp, 256 at a time
    by_regs = regs_sm // (per_warp * num_warps) if registers else max_ctas
    need = -(-(shared + reserved) // 128) * 128
    by_shared = shared_sm // need if shared else max_ctas
    return max(0, min(by_warps, by_regs, by_shared, max_ctas))


def kernel_facts(
    meta: Any,
    ttgir: str | None = None,
    ptx: str | None = None,
    *,
    registers: Any = None,
    spills: Any = None,
    cc: int | None = None,
) -> dict[str, Any]:
    """The flat facts of one compiled kernel (`meta`: its CompiledKernel's metadata): num_warps,
    num_stages, shared (bytes), registers (per thread), spills (bytes), programs_per_sm, the TTGIR
    summary, `mix` (PTX counts) and `ir` (a hash of the TTGIR, which names its side file)."""
    out: dict[str, Any] = {}
    for key in ("num_warps", "num_stages", "shared"):
        v = getattr(meta, key, None)
        if isinstance(v, int) and not isinstance(v, bool):
            out[key] = v
    if isinstance(registers, int) and registers > 0:
        out["registers"] = registers
    if isinstance(spills, int):
        out["spills"] = spills
    if ttgir:
        out.update(ttgir_summary(ttgir))
        out["ir"] = ir_hash(ttgir)
    if ptx:
        out["mix"] = ptx_mix(ptx)
    if cc is not None:
        out["cc"] = cc
        occ = occupancy(cc, out.get("num_warps"), out.get("registers"), out.get("shared"))
        if occ is not None:
            out["programs_per_sm"] = occ
    return out
