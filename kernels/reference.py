"""The reference variant: torch.matmul (cuBLAS on a GPU)."""

from __future__ import annotations

import torch

from ._common import check_operands


def matmul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """C = A @ B with torch.matmul, under the same operand checks as the Triton variants."""
    check_operands("torch", a, b, out)
    if out is None:
        return torch.matmul(a, b)
    return torch.matmul(a, b, out=out)
