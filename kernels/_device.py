"""Device code the kernels share (`@jit` helpers), and the decorator that makes them.

Kernels call only Triton builtins and the `jit` helpers defined here (see the comment below);
host code (checks, binding, launching) is in `kernels._host`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction


def interpreting() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    return bool(triton.knobs.runtime.interpret)


# ---------------------------------------------------------------------------------------------
# Kernels that compile for the GPU and also run in the interpreter, chosen at launch.


class Kernel(JITFunction):
    """A `@triton.jit` function whose interpreter form is chosen at launch, not at import.

    `triton.jit` returns an interpreter-only object when TRITON_INTERPRET=1 is set at import
    time, which `triton.compile` (the AOT fingerprint) cannot compile. A `Kernel` is always a
    real JITFunction; `launchable()` gives its interpreted twin when the interpreter is on.
    """

    @functools.cached_property
    def interpreted(self) -> InterpretedFunction:
        """This function as Triton's interpreter runs it."""
        return InterpretedFunction(self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Reached only as a device-function call inside an interpreted kernel (the compiler
        # inlines jit helpers from their source and never calls them).
        return self.interpreted(*args, **kwargs)


def jit(fn: Callable[..., Any]) -> Kernel:
    """Decorator: like `triton.jit`, but the interpreter is picked per launch (see `Kernel`)."""
    return Kernel(fn)


def launchable(fn: JITFunction) -> JITFunction | InterpretedFunction:
    """`fn` as it runs now: interpreted when TRITON_INTERPRET=1, compiled otherwise."""
    if interpreting() and isinstance(fn, Kernel):
        return fn.interpreted
    return fn


# ---------------------------------------------------------------------------------------------
# Device code shared by the kernels.
#
# Kernels call only Triton builtins (tl.load, tl.dot, tl.full, ...) and `jit` helpers defined
# here, never triton.language's own jit functions (tl.cdiv, tl.zeros, tl.sum, ...): those are
# fixed as compiled or interpreted when triton is imported, which would tie this package to the
# mode of the process again (tests/test_kernels.py runs both modes in one process).


@jit
def cdiv(x, y):
    """Ceiling division (our own tl.cdiv: see the comment above)."""
    return (x + y - 1) // y


@jit
def tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr, GROUPED: tl.constexpr):
    """(pid_m, pid_n) of linear tile index `tile`: row-major, or GROUP_M-swizzled when GROUPED."""
    if GROUPED:
        # Walk GROUP_M rows of tiles column by column: consecutive tiles (running at the same
        # time on neighbouring SMs) share A rows and B columns, so they hit in L2 (tutorial 03).
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = tile // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
        pid_n = (tile % num_pid_in_group) // group_size_m
    else:
        pid_m = tile // num_pid_n
        pid_n = tile % num_pid_n
    return pid_m, pid_n


@jit
def pointer_tile_acc(
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
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """fp32 accumulator of one BLOCK_M x BLOCK_N tile of A @ B, read through pointers."""
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # Rows / columns past the edge read row / column 0 instead of being masked (tutorial 09):
    # loads stay unmasked in M and N, the store drops them. The hints keep loads vectorized.
    offs_m = tl.max_contiguous(tl.multiple_of(tl.where(offs_m < M, offs_m, 0), BLOCK_M), BLOCK_M)
    offs_n = tl.max_contiguous(tl.multiple_of(tl.where(offs_n < N, offs_n, 0), BLOCK_N), BLOCK_N)
    k_range = tl.arange(0, BLOCK_K)
    acc = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
    for ki in range(cdiv(K, BLOCK_K)):
        # Pointers are rebuilt from ki rather than carried (as tutorial 09 does), so a flattened
        # tile loop has no pointer tensors to reset at tile boundaries. K is masked (zeros add
        # nothing), so any K works, including K < BLOCK_K.
        offs_k = ki * BLOCK_K + k_range
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    return acc


@jit
def pointer_tile_store(
    c_ptr,
    acc,
    M,
    N,
    stride_cm,
    stride_cn,
    pid_m,
    pid_n,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Store one tile of C in C's dtype, masked at the M and N edges."""
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)
