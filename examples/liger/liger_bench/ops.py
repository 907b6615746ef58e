"""The Liger-Kernel ops this repo gates, each beside its eager-torch reference.

Params are a plain dict: {"op", "pass", "dtype", "tokens", "hidden"} (+ "vocab" for flce).
`hidden` is the normalized width for the norms and the gate/up width (the MLP's intermediate
size) for swiglu / geglu. Passes: "fwd" and "bwd" (the backward alone, after one forward);
flce has only "fwd_bwd", because Liger computes its gradients inside the forward.

Every implementation is a factory `make(params, inputs) -> run`; `run()` is what is timed and
its return value is what correctness compares. Only the FIRST call of a fresh `run` is checked:
Liger's backwards write in place (rms_norm's dX into dY, swiglu's / geglu's da, db into the
saved activations), so later calls compute on overwritten buffers, as in Liger's own
benchmarks. That changes values, not the work done.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

Params = Mapping[str, Any]
Inputs = dict[str, torch.Tensor]
Output = torch.Tensor | tuple[torch.Tensor, ...]
Make = Callable[[Params, Inputs], Callable[[], Output]]

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
# Relative Frobenius error ||out - ref|| / ||ref|| allowed against the float64 (CPU) / float32
# (GPU) reference, max over the outputs of a pass. Measured on the CPU (interpreter, tokens=37,
# hidden=96): torch eager and Liger 0.8.4/0.8.5 sit <= 7e-4 (fp16) / <= 6.3e-3 (bf16); the
# wrong fixtures >= 1e-1.
REL_TOL = {"fp16": 2e-3, "bf16": 1.6e-2, "fp32": 1e-5}
EPS = 1e-6


# --- the eager formulas (torch references; in float64 they are the high-precision reference) ---


def _rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """HF LlamaRMSNorm: rstd in fp32 (or wider), the weight multiply in the input dtype."""
    h = x.to(torch.promote_types(x.dtype, torch.float32))
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)
    return w * h.to(x.dtype)


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def _swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """HF LlamaMLP's act_fn(gate) * up."""
    return F.silu(a) * b


def _geglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(a, approximate="tanh") * b


def _flce(x: torch.Tensor, w: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """HF's lm_head + loss: logits in the input dtype, upcast for the cross-entropy."""
    logits = x @ w.t()
    return F.cross_entropy(logits.to(torch.promote_types(logits.dtype, torch.float32)), target)


@dataclass(frozen=True)
class Op:
    """One gated op: its tensors, which of them get gradients, its formula, its Liger call."""

    name: str
    passes: tuple[str, ...]
    args: tuple[str, ...]  # the forward's tensor arguments, in call order
    grad_wrt: tuple[str, ...]  # differentiated inputs; bwd returns their grads in this order
    torch_fn: Callable[..., torch.Tensor]
    liger_fn: Callable[..., torch.Tensor]  # (functional module, *tensors) -> output
    wrong_fn: Callable[..., torch.Tensor]  # a plausible mistake the check must reject


OPS = {
    op.name: op
    for op in (
        Op(
            "rms_norm",
            ("fwd", "bwd"),
            ("x", "w"),
            ("x", "w"),
            _rms_norm,
            # in_place=True is Liger's default (dX written into dY).
            lambda lf, x, w: lf.liger_rms_norm(x, w, EPS, 0.0, "llama", True),
            # Gemma's (1 + w) offset where Llama's w is meant.
            lambda lf, x, w: lf.liger_rms_norm(x, w, EPS, 1.0, "llama", True),
        ),
        Op(
            "layer_norm",
            ("fwd", "bwd"),
            ("x", "w", "b"),
            ("x", "w", "b"),
            _layer_norm,
            lambda lf, x, w, b: lf.liger_layer_norm(x, w, b, EPS),
            # RMSNorm where LayerNorm is meant: no mean subtraction, no bias.
            lambda lf, x, w, b: lf.liger_rms_norm(x, w, EPS, 0.0, "llama", True),
        ),
        Op(
            "swiglu",
            ("fwd", "bwd"),
            ("a", "b"),
            ("a", "b"),
            _swiglu,
            lambda lf, a, b: lf.liger_swiglu(a, b),
            lambda lf, a, b: lf.liger_geglu(a, b),  # GELU where SiLU is meant
        ),
        Op(
            "geglu",
            ("fwd", "bwd"),
            ("a", "b"),
            ("a", "b"),
            _geglu,
            lambda lf, a, b: lf.liger_geglu(a, b),
            lambda lf, a, b: lf.liger_swiglu(a, b),  # SiLU where GELU is meant
        ),
        Op(
            "flce",
            ("fwd_bwd",),
            ("x", "w", "target"),
            ("x", "w"),
            _flce,
            lambda lf, x, w, t: lf.liger_fused_linear_cross_entropy(x, w, t),
            # label smoothing left on: a real option, a different loss
            lambda lf, x, w, t: lf.liger_fused_linear_cross_entropy(x, w, t, label_smoothing=0.1),
        ),
    )
}


def inputs(params: Params, device: str | torch.device, seed: int = 0) -> Inputs:
    """The op's tensors for these params, from a fixed seed (leaves without requires_grad).

    Weights are 1 + noise (HF initializes norm weights to ones); activations N(0, 1); `dy` is
    the fixed grad_output of the backward.
    """
    op, dtype = OPS[params["op"]], DTYPES[params["dtype"]]
    t, h = int(params["tokens"]), int(params["hidden"])
    g = torch.Generator(device="cpu").manual_seed(seed)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * scale).to(dtype=dtype, device=device)

    if op.name in ("rms_norm", "layer_norm"):
        out = {"x": randn(t, h), "w": 1 + randn(h, scale=0.1), "b": randn(h, scale=0.1)}
        out = {k: out[k] for k in op.args}
        out["dy"] = randn(t, h)
    elif op.name in ("swiglu", "geglu"):
        out = {"a": randn(t, h), "b": randn(t, h), "dy": randn(t, h)}
    else:
        v = int(params["vocab"])
        target = torch.randint(0, v, (t,), generator=g).to(device)
        out = {"x": randn(t, h), "w": randn(v, h, scale=h**-0.5), "target": target}
    return out


def _factory(fn: Callable[..., torch.Tensor], params: Params, inputs: Inputs):
    """The timed callable of one pass, for a forward `fn(*tensors)`."""
    op = OPS[params["op"]]
    pass_ = params["pass"]
    if pass_ not in op.passes:
        raise ValueError(f"{op.name} has passes {op.passes}, not {pass_!r}")
    if pass_ == "fwd":
        args = [inputs[k] for k in op.args]

        def run() -> Output:
            with torch.no_grad():
                return fn(*args)

        return run
    leaves = {k: inputs[k].detach().clone().requires_grad_() for k in op.grad_wrt}
    args = [leaves.get(k, inputs[k]) for k in op.args]
    wrt = tuple(leaves.values())
    if pass_ == "fwd_bwd":

        def run() -> Output:
            loss = fn(*args)
            return (loss.detach(), *torch.autograd.grad(loss, wrt, allow_unused=True))

        return run
    y = fn(*args)
    dy = inputs["dy"].clone()  # Liger's rms_norm backward writes dX into it

    def run() -> Output:
        return torch.autograd.grad(y, wrt, dy, retain_graph=True, allow_unused=True)

    return run


def torch_impl(params: Params, inputs: Inputs) -> Callable[[], Output]:
    """The eager-torch reference implementation."""
    return _factory(OPS[params["op"]].torch_fn, params, inputs)


def liger_impl(package: str = "liger_kernel", *, wrong: bool = False) -> Make:
    """The Liger implementation from `package` (another name: an aliased second copy, for a
    same-process A/B); `wrong=True` gives the op's negative fixture instead."""

    def make(params: Params, inputs: Inputs) -> Callable[[], Output]:
        lf = importlib.import_module(f"{package}.transformers.functional")
        op = OPS[params["op"]]
        liger = op.wrong_fn if wrong else op.liger_fn
        return _factory(lambda *xs: liger(lf, *xs), params, inputs)

    return make


liger = liger_impl()


def reference_output(params: Params, inputs: Inputs) -> Output:
    """The pass's output from the eager formula in float64 (CPU) / float32 (GPU)."""
    on_cpu = next(iter(inputs.values())).device.type == "cpu"
    hi = torch.float64 if on_cpu else torch.float32
    up = {k: v.to(hi) if v.is_floating_point() else v for k, v in inputs.items()}
    return torch_impl(params, up)()


def rel_error(out: Output, ref: Output) -> float:
    """max over the outputs of ||out - ref|| / ||ref|| (Frobenius), in the reference's dtype."""
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    if len(outs) != len(refs):
        return float("inf")
    errs = []
    for o, r in zip(outs, refs, strict=True):
        if o is None or tuple(o.shape) != tuple(r.shape):
            return float("inf")
        o, r = o.detach(), r.detach()  # Liger returns some grads as views of its leaves
        d = torch.linalg.vector_norm(o.to(r.dtype) - r)
        errs.append(float(d / torch.linalg.vector_norm(r).clamp_min(1e-30)))
    return max(errs)


def work(params: Params) -> dict[str, int]:
    """The least a pass must move (inputs read once, outputs written once) and its flops."""
    op, e = params["op"], DTYPES[params["dtype"]].itemsize
    t, h, pass_ = int(params["tokens"]), int(params["hidden"]), params["pass"]
    th = t * h
    if op == "flce":  # x, W, target in; loss, dx, dW out; logits, dx and dW are three matmuls
        v = int(params["vocab"])
        return {"bytes": 2 * (th + v * h) * e + 8 * t + 4, "flops": 6 * t * v * h}
    if op in ("rms_norm", "layer_norm"):
        vecs = 1 if op == "rms_norm" else 2  # w (+ b)
        if pass_ == "fwd":  # x, w(, b) -> y
            return {"bytes": (2 * th + vecs * h) * e, "flops": (4 if vecs == 1 else 7) * th}
        # dy, x, w -> dx, dw(, db)
        return {"bytes": (3 * th + (1 + vecs) * h) * e, "flops": (7 if vecs == 1 else 10) * th}
    if pass_ == "fwd":  # a, b -> c
        return {"bytes": 3 * th * e, "flops": 8 * th}
    return {"bytes": 5 * th * e, "flops": 16 * th}  # dc, a, b -> da, db


# Phase 1's proposal, kept for tests/test_ops.py: what tilegate gates is declared in
# perf_tests/test_liger.py (EXPECTATIONS, PROFILES there).
#
# Liger's README claims "time efficient" RMSNorm, SwiGLU, CrossEntropy and FLCE (fusion: one
# pass over memory where eager torch runs several kernels with fp32 intermediates), and memory,
# not speed, for FLCE. torch's layer_norm is already one fused ATen kernel: no claim there.
EXPECTATIONS = (
    {"faster": "liger", "than": "torch", "op": "rms_norm", "pass": "fwd", "hidden_min": 4096},
    {"faster": "liger", "than": "torch", "op": "rms_norm", "pass": "bwd", "hidden_min": 4096},
    {"faster": "liger", "than": "torch", "op": "swiglu", "pass": "fwd", "hidden_min": 4096},
)

# Shapes as data. GPU: Llama-3-8B-like widths (hidden 4096, intermediate 14336, vocab 128256).
PROFILES: dict[str, list[dict[str, Any]]] = {
    "smoke": [  # CPU interpreter: odd sizes that exercise the masks
        {"op": o, "pass": p, "dtype": "fp16", "tokens": 37, "hidden": 96, "vocab": 200}
        for o in OPS
        for p in OPS[o].passes
    ],
    "quick": [
        {"op": "rms_norm", "pass": p, "dtype": "bf16", "tokens": 8192, "hidden": 4096}
        for p in ("fwd", "bwd")
    ]
    + [
        {"op": "swiglu", "pass": p, "dtype": "bf16", "tokens": 8192, "hidden": 14336}
        for p in ("fwd", "bwd")
    ]
    + [{"op": "layer_norm", "pass": "fwd", "dtype": "bf16", "tokens": 8192, "hidden": 4096}],
    "default": [
        {"op": o, "pass": p, "dtype": d, "tokens": t, "hidden": h}
        for o in ("rms_norm", "layer_norm")
        for p in ("fwd", "bwd")
        for d in ("bf16", "fp16")
        for t in (4096, 16384)
        for h in (2048, 4096, 8192)
    ]
    + [
        {"op": o, "pass": p, "dtype": "bf16", "tokens": t, "hidden": h}
        for o in ("swiglu", "geglu")
        for p in ("fwd", "bwd")
        for t in (4096, 16384)
        for h in (8192, 14336)
    ]
    + [
        {
            "op": "flce",
            "pass": "fwd_bwd",
            "dtype": "bf16",
            "tokens": t,
            "hidden": 4096,
            "vocab": 128256,
        }
        for t in (4096, 8192)
    ],
}
