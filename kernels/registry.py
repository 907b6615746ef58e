"""The matmul variants: the registry (names, families, plans, renames, the cross-tile twins).

`REGISTRY` is the list of variants, each a tilegate.declare.Variant (the one Variant class):
each name is written once (`Variant.name`), and the list's order is the order the perf suite
measures them in, the reference first. `VARIANTS` is the same list keyed by name; `DECLARED`
is the list [tool.tilegate] registry names (REGISTRY itself). How they are measured (the grid, inputs, reference, tolerance, flops,
expectations) is the protocol's, perf_tests/test_matmul.py, not this package's (docs/plugin.md)::

    c = VARIANTS["xtile_persistent"].call(a, b)          # a: M x K, b: K x N (nn or nt layout)
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

from tilegate.declare import Variant

from . import persistent, reference, tiled, tma, tma_ws
from ._host import TMA_MIN_CAPABILITY, run_matmul
from .launch import KernelLaunch

MatmulFn = Callable[..., torch.Tensor]  # (a, b, *, out=None) -> c
PlanFn = Callable[..., KernelLaunch]  # (M, N, K, *, dtype, layout, capability, num_sms) -> launch


# The timed call of a variant (its code, so it lives here): one output buffer per (variant,
# dtype, M, N, device), shared by the groups of a run: a profile's groups are all prepared before
# the first is timed, and 16384 x 16384 fp16 is 512 MiB.
_OUTS: dict[tuple[str, str, int, int, str], torch.Tensor] = {}


def _out(name: str, params: Mapping[str, Any], like: torch.Tensor) -> torch.Tensor:
    key = (name, params["dtype"], params["M"], params["N"], str(like.device))
    if key not in _OUTS:
        _OUTS[key] = torch.empty(params["M"], params["N"], dtype=like.dtype, device=like.device)
    return _OUTS[key]


def _make(name: str, matmul: MatmulFn, params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Any:
    """The timed call of variant `name`: a @ b into its output buffer, poisoned with NaN first,
    so the correctness check (the first call) sees an element the kernel never writes."""
    a, b = inputs["a"], inputs["b"]
    out = _out(name, params, a).fill_(float("nan"))
    return partial(matmul, a, b, out=out)


@dataclass(frozen=True)
class Requires:
    """What a variant needs of the GPU: its `unsupported` (tilegate.declare.Variant), a fact of
    the declaration. The only capabilities it runs on (None: any from min_capability on), and
    why: a variant that would compile to something else than it claims to be elsewhere (a
    warp-specialized kernel that is not) stays off those GPUs."""

    name: str
    min_capability: tuple[int, int] | None = None
    capabilities: tuple[tuple[int, int], ...] | None = None
    requirement: str = "TMA"  # what min_capability / capabilities stand for

    def __call__(self, capability: tuple[int, int] | None) -> str | None:
        """Why the variant cannot run on a GPU of `capability`, or None if it can.

        None stands for the CPU interpreter (TRITON_INTERPRET=1), which runs every variant,
        TMA descriptors included (Triton 3.6 emulates them).
        """
        if capability is None:
            return None
        cap = (capability[0], capability[1])
        this = f"this GPU is sm_{cap[0]}{cap[1]}"
        if self.min_capability is not None and cap < self.min_capability:
            need = ".".join(map(str, self.min_capability))
            return f"{self.name} needs compute capability >= {need} ({self.requirement}); {this}"
        if self.capabilities is not None and cap not in self.capabilities:
            only = ", ".join(f"sm_{a}{b}" for a, b in self.capabilities)
            return f"{self.name} runs only on {only} ({self.requirement}); {this}"
        return None


def variant(
    name: str,
    family: str,
    description: str,
    matmul: MatmulFn,
    plan: PlanFn | None,
    *,
    reference: bool = False,
    xtile_twin_of: str | None = None,
    renamed_from: tuple[str, ...] = (),
    unsupported: Requires | None = None,
) -> Variant:
    """One matmul variant as tilegate declares it: `call` is its a @ b, `make` the timed call
    (a NaN-poisoned output buffer), `plan` the launch it runs, `twin_of` its cross-tile twin."""
    return Variant(
        name=name,
        make=partial(_make, name, matmul),
        reference=reference,
        twin_of=xtile_twin_of,
        renamed_from=renamed_from,
        family=family,
        description=description,
        unsupported=unsupported,
        plan=plan,
        call=matmul,
    )


def _triton(
    name: str,
    family: str,
    description: str,
    plan: Callable[..., KernelLaunch],
    *,
    xtile_twin_of: str | None = None,
    min_capability: tuple[int, int] | None = None,
    capabilities: tuple[tuple[int, int], ...] | None = None,
    requirement: str = "TMA",
    renamed_from: tuple[str, ...] = (),
    **switches: Any,
) -> Variant:
    """A Triton variant: `plan` (a family's plan function) with its switches and the variant's
    name bound, and a `call` that runs exactly the launch that plan makes (on a GPU it
    supports). The TMA families need sm_90 unless `min_capability` says more."""
    bound = partial(plan, variant=name, **switches)
    if min_capability is None and family in ("tma", "tma_ws"):
        min_capability = TMA_MIN_CAPABILITY
    requires = Requires(name, min_capability, capabilities, requirement)
    return variant(
        name,
        family,
        description,
        partial(run_matmul, name, bound, refuse=requires),
        bound,
        xtile_twin_of=xtile_twin_of,
        renamed_from=renamed_from,
        unsupported=requires,
    )


REGISTRY: tuple[Variant, ...] = (
    variant(
        "torch",
        "reference",
        "torch.matmul (cuBLAS), the reference",
        reference.matmul,
        None,
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
    # Warp-specialized only where Triton 3.6 really does it (the fingerprint's
    # `warp-specialized` rule checks the compiled kernels): elsewhere it would run as another
    # kernel under this name, or not compile (docs/tuning-sm90.md, "Warp specialization").
    _triton(
        "tma_ws_persistent",
        tma_ws.FAMILY,
        "warp-specialized TMA persistent kernel (descriptors made in the kernel): a TMA producer "
        "and two MMA consumers per program",
        tma_ws.plan,
        flatten=False,
        capabilities=((9, 0),),
        requirement="TMA; Triton 3.6 cannot compile the warp-specialized tile loop for sm_100 "
        "or sm_120 unless it is flattened",
    ),
    _triton(
        "tma_ws_xtile_persistent",
        tma_ws.FAMILY,
        "tma_ws_persistent with cross-tile pipelining (flattened warp-specialized tile loop)",
        tma_ws.plan,
        flatten=True,
        xtile_twin_of="tma_ws_persistent",
        min_capability=(10, 0),
        requirement="Blackwell; on sm_90 Triton 3.6 silently drops the warp specialization of "
        "a flattened loop",
    ),
)

VARIANTS: Mapping[str, Variant] = MappingProxyType({v.name: v for v in REGISTRY})
REFERENCE: Variant = next(v for v in REGISTRY if v.reference)


# What tilegate measures ([tool.tilegate] registry): the variants, as tilegate declares them
# (REGISTRY itself: one Variant class, tilegate.declare's). The protocol
# (perf_tests/test_matmul.py) builds its benchmark from these.
DECLARED: tuple[Variant, ...] = REGISTRY
