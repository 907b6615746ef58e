"""The matmul variants: the registry (names, families, plans, renames, the cross-tile twins).

`REGISTRY` is the list of variants: each name is written once (`Variant.name`), and the list's
order is the order the perf suite measures them in, the reference first. `VARIANTS` is the same
list keyed by name; `DECLARED` is the list as tilegate declares it (pyproject.toml's
[tool.tilegate] registry). How they are measured (the grid, inputs, reference, tolerance, flops,
expectations) is the protocol's, perf_tests/test_matmul.py, not this package's (docs/plugin.md)::

    c = VARIANTS["xtile_persistent"].matmul(a, b)        # a: M x K, b: K x N (nn or nt layout)
    launch = VARIANTS["xtile_persistent"].plan(M, N, K, dtype=torch.float16, layout="nt",
                                               capability=(9, 0), num_sms=132)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any

import torch

from tilegate.declare import Variant as Declared

from . import persistent, reference, tiled, tma, tma_ws
from ._host import TMA_MIN_CAPABILITY, run_matmul
from .launch import KernelLaunch

MatmulFn = Callable[..., torch.Tensor]  # (a, b, *, out=None) -> c
PlanFn = Callable[..., KernelLaunch]  # (M, N, K, *, dtype, layout, capability, num_sms) -> launch


@dataclass(frozen=True)
class Variant:
    """One registered matmul variant."""

    name: str
    family: str  # "reference", "pointer", "tma" or "tma_ws"
    description: str
    matmul: MatmulFn  # (a, b, *, out=None) -> c; out (M x N, a's dtype) is written if given
    plan: PlanFn | None  # the launch `matmul` runs; None for the torch reference
    min_capability: tuple[int, int] | None = None
    xtile_twin_of: str | None = None  # the variant this one is the cross-tile version of
    reference: bool = False  # the row every other row is measured against (cuBLAS)
    # The only capabilities it runs on (None: any from min_capability on), and why, for
    # unsupported_reason: a variant that would compile to something else than it claims to be
    # elsewhere (a warp-specialized kernel that is not) stays off those GPUs.
    capabilities: tuple[tuple[int, int], ...] | None = None
    requirement: str = "TMA"  # what min_capability / capabilities stand for
    # the names this variant had before (a rename): the A/B gate pairs it with the base's
    # variant of that name and judges it against that name's baseline rows and expectations
    renamed_from: tuple[str, ...] = ()

    def unsupported_reason(self, capability: tuple[int, int] | None) -> str | None:
        """Why this variant cannot run on a GPU of `capability`, or None if it can.

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

    def declared(self) -> Declared:
        """This variant as the benchmark declares it (tilegate.declare.Variant)."""
        return Declared(
            name=self.name,
            make=partial(_make, self),
            reference=self.reference,
            twin_of=self.xtile_twin_of,
            renamed_from=self.renamed_from,
            family=self.family,
            description=self.description,
            unsupported=self.unsupported_reason,
            plan=self.plan,
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
    name bound, and a `matmul` that runs exactly the launch that plan makes (on a GPU it
    supports). The TMA families need sm_90 unless `min_capability` says more."""
    bound = partial(plan, variant=name, **switches)
    if min_capability is None and family in ("tma", "tma_ws"):
        min_capability = TMA_MIN_CAPABILITY
    variant = Variant(
        name=name,
        family=family,
        description=description,
        matmul=partial(run_matmul, name, bound),
        plan=bound,
        min_capability=min_capability,
        xtile_twin_of=xtile_twin_of,
        capabilities=capabilities,
        requirement=requirement,
        renamed_from=renamed_from,
    )
    # matmul refuses a GPU the variant does not run on, with the registry's reason
    refusing = partial(run_matmul, name, bound, refuse=variant.unsupported_reason)
    return dataclasses.replace(variant, matmul=refusing)


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


# The timed call of a variant (its code, so it lives here): one output buffer per (variant,
# dtype, M, N, device), shared by the groups of a run: a profile's groups are all prepared before
# the first is timed, and 16384 x 16384 fp16 is 512 MiB.
_OUTS: dict[tuple[str, str, int, int, str], torch.Tensor] = {}


def _out(name: str, params: Mapping[str, Any], like: torch.Tensor) -> torch.Tensor:
    key = (name, params["dtype"], params["M"], params["N"], str(like.device))
    if key not in _OUTS:
        _OUTS[key] = torch.empty(params["M"], params["N"], dtype=like.dtype, device=like.device)
    return _OUTS[key]


def _make(variant: Variant, params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Any:
    """The timed call of `variant`: a @ b into its output buffer, poisoned with NaN first, so
    the correctness check (the first call) sees an element the kernel never writes."""
    a, b = inputs["a"], inputs["b"]
    out = _out(variant.name, params, a).fill_(float("nan"))
    return partial(variant.matmul, a, b, out=out)


# What tilegate measures ([tool.tilegate] registry): every variant as tilegate declares it.
# The protocol (perf_tests/test_matmul.py) builds its benchmark from these.
DECLARED: tuple[Declared, ...] = tuple(v.declared() for v in REGISTRY)
