"""The one correctness check: poison the output, run once, compare with a higher-precision product.

Shared by the perf suite (before a case's timing counts), the kernel tests and the tuning tools.
The output is filled with NaN first, so an element the kernel never writes stays NaN and is
caught as "unwritten" rather than passing on stale data; the reference is computed in float64
on the CPU and float32 on a GPU (cuBLAS in fp32 is exact enough for an fp16/bf16 product).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Relative Frobenius error allowed by the perf suite against the reference. fp16/bf16 outputs
# round at ~5e-4 / ~4e-3; 1e-2 is what the calibration used and still catches a missing K block
# or tile (which costs > 1e-1).
REL_ERR_TOL = {"fp16": 1e-2, "bf16": 1e-2}


@dataclass(frozen=True)
class Outcome:
    """What one checked call did: correct or not, its relative error, and what went wrong."""

    correct: bool
    rel_err: float
    error: str | None = (
        None  # set when the output is unusable (not returned, wrong shape, unwritten)
    )


def reference(a: Any, b: Any) -> Any:
    """a @ b in higher precision: float64 on the CPU, float32 on a GPU."""
    import torch

    hi = torch.float64 if a.device.type == "cpu" else torch.float32
    return torch.matmul(a.to(hi), b.to(hi))


def relative_error(got: Any, ref: Any) -> float:
    """||got - ref|| / ||ref|| (Frobenius), in the reference's precision."""
    import torch

    diff = got.to(ref.dtype) - ref
    return float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(ref).clamp_min(1e-30))


def check_output(got: Any, a: Any, ref: Any, tol: float) -> Outcome:
    """Whether `got` (the output of a @ b into a NaN-poisoned buffer) is right: a's dtype, the
    reference's shape, every element written, relative error <= tol."""
    import torch

    if tuple(got.shape) != tuple(ref.shape) or got.dtype != a.dtype:
        return Outcome(
            False,
            math.inf,
            f"returned {tuple(got.shape)} {got.dtype}, expected {tuple(ref.shape)} {a.dtype}",
        )
    unwritten = torch.isnan(got)
    if unwritten.any():
        rows, cols = torch.nonzero(unwritten, as_tuple=True)
        return Outcome(
            False,
            math.inf,
            f"{int(unwritten.sum())} of {got.numel()} output elements were never written "
            f"(unwritten: still NaN), rows {int(rows.min())}..{int(rows.max())}, "
            f"cols {int(cols.min())}..{int(cols.max())}",
        )
    rel = relative_error(got, ref)
    return Outcome(math.isfinite(rel) and rel <= tol, rel)


def check_call(
    matmul: Callable[..., Any], a: Any, b: Any, ref: Any, out: Any, tol: float
) -> Outcome:
    """Poison `out`, run `matmul(a, b, out=out)` once, and check what it wrote."""
    out.fill_(float("nan"))
    got = matmul(a, b, out=out)
    if got is not out:
        return Outcome(False, math.inf, "matmul(a, b, out=c) did not return c")
    return check_output(got, a, ref, tol)
