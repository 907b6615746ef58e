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


def fla_refuses(capability: tuple[int, int] | None, params: Mapping[str, Any]) -> str | None:
    """Why fla-core will not run this case on a GPU of `capability`, or None: its gated
    `chunk_bwd_dqkwg` (the backward of chunk_gated_delta_rule) raises on Hopper with
    3.4.0 <= Triton < 3.7.1, whose code it computes wrong there (fla#640; fla.ops.common.chunk_o,
    0.5.2 and 0.6.0 alike), unless tilelang is installed. Both variants skip such a case: its
    reference alone would be timed for nothing."""
    if params.get("kernel") != "gdn-bwd" or capability is None or capability[0] != 9:
        return None
    import importlib.util
    import re

    import triton

    if importlib.util.find_spec("tilelang") is not None:
        return None
    version = tuple(int(n) for n in re.findall(r"\d+", triton.__version__)[:3])
    if not (3, 4, 0) <= version < (3, 7, 1):
        return None
    return (
        f"fla-core refuses chunk_gated_delta_rule's backward on Hopper with Triton "
        f"{triton.__version__} (incorrect results there, fla#640): Triton >= 3.7.1 or tilelang "
        "runs it"
    )


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
        unsupported=fla_refuses,
        description="eager torch, float32, chunked: fla's naive_chunk_gated_delta_rule and a "
        "chunked naive_recurrent_gla",
    ),
    Variant(
        name="fla",
        make=_impl("fla"),
        family="fla",
        unsupported=fla_refuses,
        description="fla.ops chunk_gated_delta_rule / chunk_gla (the release first on PYTHONPATH)",
    ),
)
