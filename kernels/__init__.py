"""Matmul kernel variants and their registry.

`REGISTRY` is the list of variants: each name is written once (`Variant.name`), and the list's
order is the order the perf suite measures them in, the reference first. `VARIANTS` is the same
list keyed by name (see docs/architecture.md)::

    c = VARIANTS["xtile_persistent"].matmul(a, b)        # a: M x K, b: K x N (nn or nt layout)
    launch = VARIANTS["xtile_persistent"].plan(M, N, K, dtype=torch.float16, layout="nt",
                                               capability=(9, 0), num_sms=132)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any

import torch

from . import persistent, reference, tiled, tma
from ._common import DTYPES, LAYOUTS, TMA_MIN_CAPABILITY, layout_of, run_matmul
from .configs import CONFIGS, Config, config_for
from .launch import Arg, DescArg, KernelLaunch, ScalarArg, TensorArg

__all__ = [
    "CONFIGS",
    "DTYPES",
    "LAYOUTS",
    "REFERENCE",
    "REGISTRY",
    "VARIANTS",
    "Arg",
    "Config",
    "DescArg",
    "KernelLaunch",
    "ScalarArg",
    "TensorArg",
    "Variant",
    "config_for",
    "layout_of",
]

MatmulFn = Callable[..., torch.Tensor]  # (a, b, *, out=None) -> c
PlanFn = Callable[..., KernelLaunch]  # (M, N, K, *, dtype, layout, capability, num_sms) -> launch


@dataclass(frozen=True)
class Variant:
    """One registered matmul variant."""

    name: str
    family: str  # "reference", "pointer" or "tma"
    description: str
    matmul: MatmulFn  # (a, b, *, out=None) -> c; out (M x N, a's dtype) is written if given
    plan: PlanFn | None  # the launch `matmul` runs; None for the torch reference
    min_capability: tuple[int, int] | None = None
    xtile_twin_of: str | None = None  # the variant this one is the cross-tile version of
    reference: bool = False  # the row every other row is measured against (cuBLAS)

    def unsupported_reason(self, capability: tuple[int, int] | None) -> str | None:
        """Why this variant cannot run on a GPU of `capability`, or None if it can.

        None stands for the CPU interpreter (TRITON_INTERPRET=1), which runs every variant,
        TMA descriptors included (Triton 3.6 emulates them).
        """
        if capability is None or self.min_capability is None:
            return None
        if tuple(capability) < self.min_capability:
            need = ".".join(map(str, self.min_capability))
            return (
                f"{self.name} needs compute capability >= {need} (TMA); "
                f"this GPU is sm_{capability[0]}{capability[1]}"
            )
        return None


def _triton(
    name: str,
    family: str,
    description: str,
    plan: Callable[..., KernelLaunch],
    *,
    xtile_twin_of: str | None = None,
    **switches: Any,
) -> Variant:
    """A Triton variant: `plan` (a family's plan function) with its switches and the variant's
    name bound, and a `matmul` that runs exactly the launch that plan makes."""
    bound = partial(plan, variant=name, **switches)
    return Variant(
        name=name,
        family=family,
        description=description,
        matmul=partial(run_matmul, name, bound),
        plan=bound,
        min_capability=TMA_MIN_CAPABILITY if family == "tma" else None,
        xtile_twin_of=xtile_twin_of,
    )


REGISTRY: tuple[Variant, ...] = (
    Variant(
        name="torch",
        family="reference",
        description="torch.matmul (cuBLAS), the reference",
        matmul=reference.matmul,
        plan=None,
        reference=True,
    ),
    _triton(
        "tiled",
        "pointer",
        "one program per tile, row-major tile order",
        tiled.plan,
        grouped=False,
    ),
    _triton(
        "grouped",
        "pointer",
        "one program per tile, GROUP_M-swizzled tile order (tutorial 03)",
        tiled.plan,
        grouped=True,
    ),
    _triton(
        "persistent",
        "pointer",
        "persistent programs looping over tiles in row-major order",
        persistent.plan,
        grouped=False,
        flatten=False,
    ),
    _triton(
        "swizzle_persistent",
        "pointer",
        "persistent programs looping over tiles in GROUP_M order",
        persistent.plan,
        grouped=True,
        flatten=False,
    ),
    _triton(
        "xtile_persistent",
        "pointer",
        "swizzle_persistent with the tile loop flattened into the K loop (cross-tile pipelining)",
        persistent.plan,
        grouped=True,
        flatten=True,
        xtile_twin_of="swizzle_persistent",
    ),
    _triton(
        "tma_swizzle_persistent",
        "tma",
        "swizzle_persistent loading and storing through TMA tensor descriptors",
        tma.plan,
        flatten=False,
    ),
    _triton(
        "tma_xtile_persistent",
        "tma",
        "tma_swizzle_persistent with cross-tile pipelining (flattened tile loop)",
        tma.plan,
        flatten=True,
        xtile_twin_of="tma_swizzle_persistent",
    ),
)

VARIANTS: Mapping[str, Variant] = MappingProxyType({v.name: v for v in REGISTRY})
REFERENCE: Variant = next(v for v in REGISTRY if v.reference)
