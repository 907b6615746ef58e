"""Persistent kernels that load and store through TMA host tensor descriptors (sm_90+).

One kernel serves `tma_swizzle_persistent` and `tma_xtile_persistent` (FLATTEN, cross-tile
pipelining), both in GROUP_M tile order. TMA zero-fills out-of-bounds reads and clips
out-of-bounds writes, so no masks are needed at the M, N and K edges.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import cdiv, jit, tile_coords
from ._host import TMA_MIN_CAPABILITY, check_problem, check_tma_sizes, host_descriptors
from .configs import Config, config_for
from .launch import KernelLaunch, ScalarArg


@jit
def tma_persistent_matmul_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    GROUPED: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    FLATTEN: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    B_TRANSPOSED: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
):
    """C = A @ B with descriptors: a_desc over A (M x K), c_desc over C (M x N), b_desc over
    B (K x N) or, when B_TRANSPOSED, over B.T (N x K, the "nt" layout)."""
    num_pid_m = cdiv(M, BLOCK_M)
    num_pid_n = cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    # See persistent.py: the epilogue's own tile counter, and why FLATTEN (cross-tile).
    tile_c = start - NUM_PROGRAMS
    for tile in tl.range(
        start, num_tiles, NUM_PROGRAMS, flatten=FLATTEN, num_stages=NUM_STAGES if FLATTEN else 1
    ):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M, GROUPED)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            a = a_desc.load([off_m, off_k])
            b = b_desc.load([off_n, off_k]).T if B_TRANSPOSED else b_desc.load([off_k, off_n])
            acc = tl.dot(a, b, acc)
        tile_c += NUM_PROGRAMS
        pid_m, pid_n = tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M, GROUPED)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        if EPILOGUE_SUBTILE:
            # Convert and store C in two BLOCK_N / 2 halves: half the registers and shared
            # memory for the epilogue, which can then overlap more with the next tile (tutorial 09).
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            c0, c1 = tl.split(halves)
            c_desc.store([off_m, off_n], c0.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], c1.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


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
) -> KernelLaunch:
    """The launch of a TMA persistent `variant` for an M x N x K problem on `num_sms` SMs."""
    dt = check_problem(
        variant, M, N, K, dtype, layout, capability, num_sms, min_capability=TMA_MIN_CAPABILITY
    )
    check_tma_sizes(variant, N, K, dt)
    cfg = config or config_for("tma", capability)
    bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
    num_tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = min(cfg.programs_per_sm * num_sms, num_tiles)
    transposed = layout == "nt"
    c_block = (bm, bn // 2) if cfg.epilogue_subtile else (bm, bn)
    descriptors = host_descriptors(
        ("a_desc", "b_desc", "c_desc"),
        dt,
        M,
        N,
        K,
        (bm, bn, bk),
        transposed=transposed,
        c_block=c_block,
    )
    return KernelLaunch(
        fn=tma_persistent_matmul_kernel,
        grid=(programs,),
        args=(
            *descriptors,
            ScalarArg("M", M),
            ScalarArg("N", N),
            ScalarArg("K", K),
        ),
        constexprs={
            "BLOCK_M": bm,
            "BLOCK_N": bn,
            "BLOCK_K": bk,
            "GROUP_M": cfg.group_m,
            "GROUPED": True,
            "NUM_PROGRAMS": programs,
            "FLATTEN": flatten,
            "NUM_STAGES": cfg.num_stages,
            "B_TRANSPOSED": transposed,
            "EPILOGUE_SUBTILE": cfg.epilogue_subtile,
        },
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
    )
