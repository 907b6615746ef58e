"""Matmul kernel variants and their registry.

`VARIANTS` maps each stable variant name to a `Variant`; see docs/architecture.md::

    c = VARIANTS["xtile_persistent"].matmul(a, b)        # a: M x K, b: K x N (nn or nt layout)
    launch = VARIANTS["xtile_persistent"].plan(M, N, K, dtype=torch.float16, layout="nt",
                                               capability=(9, 0), num_sms=132)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from . import persistent, reference, tiled, tma
from ._common import TMA_MIN_CAPABILITY, layout_of, run_matmul
from .configs import CONFIGS, Config, config_for
from .launch import Arg, DescArg, KernelLaunch, ScalarArg, TensorArg

__all__ = [
    "CONFIGS",
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


def _triton_variant(
    name: str,
    family: str,
    description: str,
    plan: PlanFn,
    xtile_twin_of: str | None = None,
) -> Variant:
    """A Triton variant whose `matmul` runs exactly the launch `plan` makes."""
    return Variant(
        name=name,
        family=family,
        description=description,
        matmul=partial(run_matmul, name, plan),
        plan=plan,
        min_capability=TMA_MIN_CAPABILITY if family == "tma" else None,
        xtile_twin_of=xtile_twin_of,
    )


VARIANTS: dict[str, Variant] = {
    "torch": Variant(
        name="torch",
        family="reference",
        description="torch.matmul (cuBLAS), the reference",
        matmul=reference.matmul,
        plan=None,
    ),
    "tiled": _triton_variant(
        "tiled",
        "pointer",
        "one program per tile, row-major tile order",
        partial(tiled.plan, variant="tiled", grouped=False),
    ),
    "grouped": _triton_variant(
        "grouped",
        "pointer",
        "one program per tile, GROUP_M-swizzled tile order (tutorial 03)",
        partial(tiled.plan, variant="grouped", grouped=True),
    ),
    "persistent": _triton_variant(
        "persistent",
        "pointer",
        "persistent programs looping over tiles in row-major order",
        partial(persistent.plan, variant="persistent", grouped=False, flatten=False),
    ),
    "swizzle_persistent": _triton_variant(
        "swizzle_persistent",
        "pointer",
        "persistent programs looping over tiles in GROUP_M order",
        partial(persistent.plan, variant="swizzle_persistent", grouped=True, flatten=False),
    ),
    "xtile_persistent": _triton_variant(
        "xtile_persistent",
        "pointer",
        "swizzle_persistent with the tile loop flattened into the K loop (cross-tile pipelining)",
        partial(persistent.plan, variant="xtile_persistent", grouped=True, flatten=True),
        xtile_twin_of="swizzle_persistent",
    ),
    "tma_swizzle_persistent": _triton_variant(
        "tma_swizzle_persistent",
        "tma",
        "swizzle_persistent loading and storing through TMA tensor descriptors",
        partial(tma.plan, variant="tma_swizzle_persistent", flatten=False),
    ),
    "tma_xtile_persistent": _triton_variant(
        "tma_xtile_persistent",
        "tma",
        "tma_swizzle_persistent with cross-tile pipelining (flattened tile loop)",
        partial(tma.plan, variant="tma_xtile_persistent", flatten=True),
        xtile_twin_of="tma_swizzle_persistent",
    ),
}
