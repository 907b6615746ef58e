"""The Liger-Kernel ops as tilegate variants: the code this repository gates ([tool.tilegate]
source and registry). How they are measured (the grid, the profiles, inputs, reference, error,
work, the expectations) is the protocol, perf_tests/test_liger.py.

Two variants, `torch` (eager, the reference) and `liger` (liger_kernel.transformers.functional),
timed side by side in every group. The grid's `kernel` axis holds op and pass in one value
("rms_norm-fwd", "swiglu-bwd", "flce-fwd_bwd"): `split` gives them to liger_bench.ops. Relative
imports only: an A/B run imports the base commit's copy of this package under another name
(tilegate.harness.base).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from tilegate.declare import Variant

from . import interpreter, ops

# Under TRITON_INTERPRET=1 (the smoke profile, `tilegate perf` sets it before this import) the
# shims must be in before liger_kernel is imported; `_liger` installs them again before its first
# import, for a pytest that set the variable only after loading this module. On a GPU: nothing.
interpreter.install()

PASSES = {name: op.passes for name, op in ops.OPS.items()}
KERNELS = tuple(f"{op}-{p}" for op, passes in PASSES.items() for p in passes)
VOCAB = 128256  # Llama-3's: flce's W is vocab x hidden


def split(params: Mapping[str, Any]) -> dict[str, Any]:
    """tilegate's parameters as liger_bench.ops reads them: "kernel" -> "op" and "pass"."""
    op, sep, pass_ = str(params["kernel"]).partition("-")
    if not sep or op not in PASSES or pass_ not in PASSES[op]:
        raise ValueError(f"kernel {params['kernel']!r}: expected one of {list(KERNELS)}")
    return {**params, "op": op, "pass": pass_}


def _torch(params: Mapping[str, Any], inputs: Any) -> Callable[[], Any]:
    return ops.torch_impl(split(params), inputs)


def _liger_make(wrong: bool = False) -> Callable[[Mapping[str, Any], Any], Callable[[], Any]]:
    make = ops.liger_impl(wrong=wrong)

    def liger(params: Mapping[str, Any], inputs: Any) -> Callable[[], Any]:
        interpreter.install()  # CPU only; before liger_kernel's first import (see the top)
        return make(split(params), inputs)

    return liger


VARIANTS = (
    Variant(
        name="torch",
        make=_torch,
        reference=True,
        family="reference",
        description="eager torch: HF LlamaRMSNorm, F.layer_norm, silu(a) * b, gelu_tanh(a) * b, "
        "lm_head + F.cross_entropy",
    ),
    Variant(
        name="liger",
        make=_liger_make(),
        family="liger",
        description="liger_kernel.transformers.functional (the release first on PYTHONPATH)",
    ),
)


def _wrong(variant: Variant) -> Variant:
    """tilegate perf --inject wrong=liger: each op's plausible mistake (liger_bench.ops.Op.wrong_fn)."""
    return dataclasses.replace(
        variant, make=_liger_make(wrong=True), description=f"WRONG: {variant.name}'s mistake"
    )
