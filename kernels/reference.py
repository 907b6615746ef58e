"""The reference variant: torch.matmul (cuBLAS on a GPU)."""

from __future__ import annotations

import torch

from ._host import check_operands


def matmul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """C = A @ B with torch.matmul, under the same operand checks as the Triton variants."""
    check_operands("torch", a, b, out)
    if out is None:
        return torch.matmul(a, b)
    return torch.matmul(a, b, out=out)


def exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b in higher precision: float64 on the CPU, float32 on a GPU."""
    hi = torch.float64 if a.device.type == "cpu" else torch.float32
    return torch.matmul(a.to(hi), b.to(hi))
