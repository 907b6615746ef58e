"""Persistent kernels: a grid of P programs, each looping over tiles P apart.

One kernel serves three variants through constexpr switches:
`persistent` (row-major order), `swizzle_persistent` (GROUP_M order) and `xtile_persistent`
(GROUP_M order with the tile loop flattened into the K loop: cross-tile pipelining).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import cdiv, jit, pointer_tile_acc, pointer_tile_store, tile_coords
from ._host import check_problem, pointer_args
from .configs import Config, config_for
from .launch import KernelLaunch


@jit
def persistent_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    GROUPED: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    FLATTEN: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    """C = A @ B: program `pid` computes tiles pid, pid + P, pid + 2P, ... (tutorial 09)."""
    num_pid_m = cdiv(M, BLOCK_M)
    num_pid_n = cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    start = tl.program_id(0)
    # The epilogue recomputes its tile from its own counter (as tutorial 09 does) instead of
    # reusing pid_m / pid_n, so a flattened loop need not carry them from prologue to epilogue.
    tile_c = start - NUM_PROGRAMS
    # Triton software-pipelines only the innermost loop, so with nested loops the pipeline
    # drains at every tile boundary. FLATTEN fuses this tile loop with the K loop below into one
    # loop: the next tile's first K blocks load while this tile's result is stored (cross-tile
    # pipelining). Only the fused loop is innermost, so only then do stages on it mean anything.
    for tile in tl.range(
        start, num_tiles, NUM_PROGRAMS, flatten=FLATTEN, num_stages=NUM_STAGES if FLATTEN else 1
    ):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M, GROUPED)
        acc = pointer_tile_acc(
            a_ptr,
            b_ptr,
            M,
            N,
            K,
            stride_am,
            stride_ak,
            stride_bk,
            stride_bn,
            pid_m,
            pid_n,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
        )
        tile_c += NUM_PROGRAMS
        pid_m, pid_n = tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M, GROUPED)
        pointer_tile_store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N)


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
    grouped: bool,
    flatten: bool,
    config: Config | None = None,
) -> KernelLaunch:
    """The launch of a pointer persistent `variant` for an M x N x K problem on `num_sms` SMs."""
    dt = check_problem(variant, M, N, K, dtype, layout, capability, num_sms)
    cfg = config or config_for("pointer", capability)
    num_tiles = triton.cdiv(M, cfg.block_m) * triton.cdiv(N, cfg.block_n)
    programs = min(cfg.programs_per_sm * num_sms, num_tiles)
    return KernelLaunch(
        fn=persistent_matmul_kernel,
        grid=(programs,),
        args=pointer_args(M, N, K, dt, layout),
        constexprs={
            "BLOCK_M": cfg.block_m,
            "BLOCK_N": cfg.block_n,
            "BLOCK_K": cfg.block_k,
            "GROUP_M": cfg.group_m,
            "GROUPED": grouped,
            "NUM_PROGRAMS": programs,
            "FLATTEN": flatten,
            "NUM_STAGES": cfg.num_stages,
        },
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
    )
