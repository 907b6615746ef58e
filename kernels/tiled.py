"""One program per output tile: `tiled` (row-major tile order) and `grouped` (GROUP_M order)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._device import cdiv, jit, pointer_tile_acc, pointer_tile_store, tile_coords
from ._host import check_problem, pointer_args
from .configs import Config, config_for
from .launch import KernelLaunch


@jit
def tiled_matmul_kernel(
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
):
    """C = A @ B, one program per BLOCK_M x BLOCK_N tile of C (Triton tutorial 03)."""
    num_pid_m = cdiv(M, BLOCK_M)
    num_pid_n = cdiv(N, BLOCK_N)
    pid_m, pid_n = tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M, GROUPED)
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
    config: Config | None = None,
) -> KernelLaunch:
    """The launch of `variant` (tiled or grouped) for an M x N x K problem.

    num_sms is checked but unused: the grid has one program per tile.
    """
    dt = check_problem(variant, M, N, K, dtype, layout, capability, num_sms)
    cfg = config or config_for("pointer", capability)
    num_tiles = triton.cdiv(M, cfg.block_m) * triton.cdiv(N, cfg.block_n)
    return KernelLaunch(
        fn=tiled_matmul_kernel,
        grid=(num_tiles,),
        args=pointer_args(M, N, K, dt, layout),
        constexprs={
            "BLOCK_M": cfg.block_m,
            "BLOCK_N": cfg.block_n,
            "BLOCK_K": cfg.block_k,
            "GROUP_M": cfg.group_m,
            "GROUPED": grouped,
        },
        num_warps=cfg.num_warps,
        num_stages=cfg.num_stages,
    )
