"""A toy Triton matmul and its wrapper for tests/test_explain.py: a repository's kernel that is
not in the matmul registry, launched through the interpreter as any repository's would be."""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction


@triton.jit
def toy_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.full((BM, BN), 0.0, dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def matmul(a: torch.Tensor, b: torch.Tensor, stages: int = 3, clone: bool = False) -> torch.Tensor:
    """C = A @ B in one launch; `clone`: the wrapper copies B first (a wrapper-side extra op)."""
    if clone:
        b = b.clone()
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=torch.float16)
    grid = (m // 64, n // 64)
    InterpretedFunction(toy_matmul_kernel.fn)[grid](
        a, b, c, m, n, k, BM=64, BN=64, BK=32, num_warps=4, num_stages=stages
    )
    return c
