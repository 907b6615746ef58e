"""Warp-specialized persistent kernels over TMA descriptors made inside the kernel (sm_90+).

One kernel serves `tma_ws_persistent` (the tile loop as a loop of its own) and
`tma_ws_xtile_persistent` (FLATTEN, cross-tile pipelining), both in GROUP_M tile order and both
asking Triton to warp-specialize the tile loop: a producer partition issues the TMA loads while
consumer partitions run the MMAs and the epilogue, so one tile's store overlaps the next tile's
MMAs (what cuBLAS does on the H200 and a non-specialized kernel cannot; docs/tuning-sm90.md).

What Triton 3.6 needs for that to take effect, checked on TTGIR compiled ahead of time
(docs/tuning-sm90.md, "Warp specialization"); each is silently ignored or fails otherwise:

* descriptors made in the kernel (`tl.make_tensor_descriptor`): with host descriptors
  (`kernels/tma.py`) the Hopper pass fails ("PassManager::run failed", upstream issue 11587).
  They need global scratch memory, which Triton asks its allocator for at every launch
  (`kernels._host.ensure_scratch_allocator`, `KernelLaunch.scratch`);
* on sm_90: the tile loop not flattened, 4 warps (8 leave only a `tt.warp_specialize`
  attribute and no partitions), no epilogue subtiling (the pass fails);
* on sm_100 and sm_120: the tile loop flattened (otherwise the pass `NVWSInsertAref` fails;
  Triton 3.9 compiles both). Hence each variant runs only where it is warp-specialized
  (`capabilities` / `min_capability` in the registry);
* no `num_stages` on the tile loop (`TILE_STAGES` is None): harmless in Triton 3.6, but Triton
  3.9 then silently drops the warp specialization.

The fingerprint checks the result, not these premises: `warp_specialized` in its facts and the
rule `warp-specialized` (baselines/fingerprints/rules.json). TMA zero-fills out-of-bounds reads
and clips out-of-bounds writes, so no masks are needed at the M, N and K edges.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import cdiv, jit, tile_coords
from ._host import TMA_MIN_CAPABILITY, check_problem, check_tma_sizes
from ._host import host_descriptors as _host_descriptors
from .configs import Config, config_for
from .launch import DescArg, KernelLaunch, ScalarArg, TensorArg

FAMILY = "tma_ws"


@jit
def tma_ws_persistent_matmul_kernel(
    a,
    b,
    c,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_bn,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    FLATTEN: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    TILE_STAGES: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    HOST_DESCRIPTORS: tl.constexpr,
):
    """C = A @ B. a, b, c are pointers (descriptors made here) or, with HOST_DESCRIPTORS, host
    descriptors; b covers B (K x N) or, when B_TRANSPOSED, B.T (N x K, the "nt" layout)."""
    if HOST_DESCRIPTORS:
        a_desc = a
        b_desc = b
        c_desc = c
    else:
        # The last strides are 1 by construction (plan() and bind() check the operands), and
        # must be literal: Triton needs the contiguous dimension at compile time.
        a_desc = tl.make_tensor_descriptor(a, [M, K], [stride_am, 1], [BLOCK_M, BLOCK_K])
        if B_TRANSPOSED:
            b_desc = tl.make_tensor_descriptor(b, [N, K], [stride_bn, 1], [BLOCK_N, BLOCK_K])
        else:
            b_desc = tl.make_tensor_descriptor(b, [K, N], [stride_bk, 1], [BLOCK_K, BLOCK_N])
        c_desc = tl.make_tensor_descriptor(c, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N])
    num_pid_m = cdiv(M, BLOCK_M)
    num_pid_n = cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    # See persistent.py: the epilogue's own tile counter, and why FLATTEN (cross-tile). The
    # warp-specialized loop is the tile loop: its partitions each walk every tile of the program.
    tile_c = start - NUM_PROGRAMS
    for tile in tl.range(
        start,
        num_tiles,
        NUM_PROGRAMS,
        flatten=FLATTEN,
        warp_specialize=True,
        num_stages=NUM_STAGES if FLATTEN else TILE_STAGES,
    ):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M, True)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            a_tile = a_desc.load([off_m, off_k])
            b_tile = b_desc.load([off_n, off_k]).T if B_TRANSPOSED else b_desc.load([off_k, off_n])
            acc = tl.dot(a_tile, b_tile, acc)
        tile_c += NUM_PROGRAMS
        pid_m, pid_n = tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M, True)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


def plan(
    M: int,
    N: int,
    K: int,
    *,
    dtype: torch.dtype | str,
    layout: str,
    capability: tuple[int, int] | None,
    num_sms: int,
    variant: str,
    flatten: bool,
    config: Config | None = None,
    host_descriptors: bool = False,
) -> KernelLaunch:
    """The launch of a warp-specialized TMA `variant` for an M x N x K problem on `num_sms` SMs.

    `host_descriptors` passes host `TensorDescriptor`s instead of pointers (what `kernels/tma.py`
    does): not a registered variant, it exists so the fingerprint tests can show what it does.
    """
    dt = check_problem(
        variant, M, N, K, dtype, layout, capability, num_sms, min_capability=TMA_MIN_CAPABILITY
    )
    check_tma_sizes(variant, N, K, dt)
    cfg = config or config_for(FAMILY, capability)
    if cfg.epilogue_subtile:
        raise ValueError(
            f"{variant}: no epilogue subtiling in the warp-specialized kernel (Triton 3.6's "
            f"Hopper warp specialization fails to compile it)"
        )
    bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
    num_tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = min(cfg.programs_per_sm * num_sms, num_tiles)
    transposed = layout == "nt"
    b_strides = (1, K) if transposed else (N, 1)
    operands: tuple[TensorArg | DescArg, ...]
    if host_descriptors:
        operands = _host_descriptors(
            ("a", "b", "c"), dt, M, N, K, (bm, bn, bk), transposed=transposed, c_block=(bm, bn)
        )
    else:
        operands = (
            TensorArg("a", "a", dt, (M, K), (K, 1), tma=True),
            TensorArg("b", "b", dt, (K, N), b_strides, tma=True),
            TensorArg("c", "c", dt, (M, N), (N, 1), tma=True),
        )
    return KernelLaunch(
        fn=tma_ws_persistent_matmul_kernel,
        grid=(programs,),
        args=(
            *operands,
            ScalarArg("M", M),
            ScalarArg("N", N),
            ScalarArg("K", K),
            ScalarArg("stride_am", K),
            ScalarArg("stride_bk", b_strides[0]),
            ScalarArg("stride_bn", b_strides[1]),
            ScalarArg("stride_cm", N),
        ),
        constexprs={
            "BLOCK_M": bm,
            "BLOCK_N": bn,
            "BLOCK_K": bk,
            "GROUP_M": cfg.group_m,
            "NUM_PROGRAMS": programs,
            "FLATTEN": flatten,
            "NUM_STAGES": cfg.num_stages,
            "TILE_STAGES": None,
            "B_TRANSPOSED": transposed,
            "HOST_DESCRIPTORS": host_descriptors,
        },
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
        scratch=not host_descriptors,
    )
