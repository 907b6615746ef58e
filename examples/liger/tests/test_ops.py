"""Every op x pass against the float64 reference, and the check rejecting a wrong Liger call."""

import pytest
import torch
from liger_bench import ops

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# bf16 only where no tl.dot is involved: none of these ops use one (flce's matmuls are torch's).
CASES = [
    {"op": o, "pass": p, "dtype": d, "tokens": 37, "hidden": 96, "vocab": 200}
    for o in ops.OPS
    for p in ops.OPS[o].passes
    for d in ("fp16", "bf16")
]


def _id(c):
    return f"{c['op']}-{c['pass']}-{c['dtype']}"


def _err(make, params):
    x = ops.inputs(params, DEVICE, seed=1)
    return ops.rel_error(make(params, x)(), ops.reference_output(params, x))


@pytest.mark.parametrize("params", CASES, ids=_id)
@pytest.mark.parametrize("impl", ["liger", "torch"])
def test_correct(params, impl):
    make = ops.liger if impl == "liger" else ops.torch_impl
    err = _err(make, params)
    assert err <= ops.REL_TOL[params["dtype"]], f"rel err {err:.2e}"


@pytest.mark.parametrize("params", [c for c in CASES if c["dtype"] == "fp16"], ids=_id)
def test_wrong_rejected(params):
    err = _err(ops.liger_impl(wrong=True), params)
    assert err > 10 * ops.REL_TOL[params["dtype"]], f"rel err {err:.2e}"


def test_output_dtype_and_shape():
    p = {"op": "rms_norm", "pass": "fwd", "dtype": "fp16", "tokens": 5, "hidden": 64}
    y = ops.liger(p, ops.inputs(p, DEVICE))()
    assert (y.dtype, tuple(y.shape)) == (torch.float16, (5, 64))


@pytest.mark.parametrize("params", ops.PROFILES["default"][:1] + ops.PROFILES["quick"], ids=_id)
def test_work(params):
    w = ops.work(params)
    e = ops.DTYPES[params["dtype"]].itemsize
    assert w["bytes"] >= 2 * params["tokens"] * params["hidden"] * e and w["flops"] > 0


@pytest.mark.skipif(DEVICE == "cuda", reason="counts interpreter launches")
@pytest.mark.parametrize("params", [c for c in CASES if c["dtype"] == "fp16"], ids=_id)
def test_liger_launches_triton(params, monkeypatch):
    """The Liger side really runs Triton kernels (not a torch fallback for the CPU)."""
    from triton.runtime import interpreter

    timed = ops.liger(params, ops.inputs(params, DEVICE))  # a bwd's forward runs here
    launched = []
    run = interpreter.InterpretedFunction.run
    monkeypatch.setattr(
        interpreter.InterpretedFunction,
        "run",
        lambda self, *a, **k: launched.append(self.fn.__name__) or run(self, *a, **k),
    )
    timed()
    assert launched, "no Triton kernel ran"
