"""fla-core's chunked ops as tilegate variants: the code this repository gates ([tool.tilegate]
source and registry). How they are measured is the protocol, perf_tests/test_fla.py.

Two variants timed side by side in every group: `torch` (the reference: eager float32 chunked
references, fla_bench.ops) and `fla` (the fla-core release first on PYTHONPATH, imported by its
own name as any user does). The grid's `kernel` axis holds op and pass in one value ("gdn-fwd",
"gla-bwd"): `split` gives them to fla_bench.ops.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tilegate.declare import Variant

from . import ops

KERNELS = tuple(f"{op}-{p}" for op in ops.OPS for p in ops.PASSES)


def split(params: Mapping[str, Any]) -> dict[str, Any]:
    """tilegate's parameters as fla_bench.ops reads them: "kernel" -> "op" and "pass"."""
    op, sep, pass_ = str(params["kernel"]).partition("-")
    if not sep or op not in ops.OPS or pass_ not in ops.PASSES:
        raise ValueError(f"kernel {params['kernel']!r}: expected one of {list(KERNELS)}")
    return {**params, "op": op, "pass": pass_}


def _impl(name: str) -> Callable[[Mapping[str, Any], Any], Callable[[], Any]]:
    def make(params: Mapping[str, Any], inputs: Any) -> Callable[[], Any]:
        return ops.make(name, split(params), inputs)

    return make


VARIANTS = (
    Variant(
        name="torch",
        make=_impl("torch"),
        reference=True,
        family="reference",
        description="eager torch, float32, chunked: fla's naive_chunk_gated_delta_rule and a "
        "chunked naive_recurrent_gla",
    ),
    Variant(
        name="fla",
        make=_impl("fla"),
        family="fla",
        description="fla.ops chunk_gated_delta_rule / chunk_gla (the release first on PYTHONPATH)",
    ),
)
