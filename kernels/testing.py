"""Negative fixtures for the harness's own tests: variants that are wrong on purpose.

Never registered in `kernels.VARIANTS`; tests build a registry with `with_variants(...)` and
check that the gates catch them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial

import torch

from ._host import check_operands, device_facts, layout_of
from .registry import VARIANTS, Variant, _make

_FALLBACK_BLOCK_K = 64  # the "K block" of a variant without a plan (torch)


def _block_k(variant: Variant, a: torch.Tensor, b: torch.Tensor) -> int:
    """BLOCK_K of the launch `variant` would run for a @ b (64 for the torch reference)."""
    if variant.plan is None:
        return _FALLBACK_BLOCK_K
    capability, num_sms = device_facts(variant.name, a.device)
    (M, K), N = a.shape, b.shape[1]
    launch = variant.plan(
        M, N, K, dtype=a.dtype, layout=layout_of(b), capability=capability, num_sms=num_sms
    )
    return launch.constexprs["BLOCK_K"]


def wrong_variant(name: str) -> Variant:
    """`VARIANTS[name]` with an off-by-one K loop: it skips the last K block of every tile.

    Realistic and hard to see: the output is fully written, finite, right shape and dtype, and
    off by the contribution of up to BLOCK_K columns of A (all of it when K <= BLOCK_K).
    """
    base = VARIANTS[name]

    def matmul(
        a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_operands(name, a, b, out)
        K = a.shape[-1]
        block_k = _block_k(base, a, b)
        k_kept = (K - 1) // block_k * block_k  # range(cdiv(K, BK) - 1) blocks
        if k_kept == 0:
            c = (
                out
                if out is not None
                else torch.empty(a.shape[0], b.shape[-1], dtype=a.dtype, device=a.device)
            )
            return c.zero_()
        assert base.call is not None
        return base.call(a[:, :k_kept], b[:k_kept], out=out)

    return dataclasses.replace(
        base,
        call=matmul,
        make=partial(_make, name, matmul),
        description=f"WRONG: {base.description}, last K block skipped",
    )


def impostor_variant(name: str, of: str) -> Variant:
    """A variant registered as `name` that actually runs (and plans) variant `of`.

    E.g. `impostor_variant("xtile_persistent", of="swizzle_persistent")`: right numbers, but no
    cross-tile pipelining, so only the fingerprint and the ratio to its twin can catch it.
    """
    real, impostor = VARIANTS[name], VARIANTS[of]
    return dataclasses.replace(
        impostor,
        name=name,
        twin_of=real.twin_of,
        description=f"IMPOSTOR: runs {of} under the name {name}",
    )


def with_variants(overrides: Mapping[str, Variant]) -> dict[str, Variant]:
    """A new registry: `VARIANTS` with `overrides` replacing (or adding) entries by name."""
    for key, variant in overrides.items():
        if variant.name != key:
            raise ValueError(f"override under {key!r} is named {variant.name!r}")
    return {**VARIANTS, **overrides}
