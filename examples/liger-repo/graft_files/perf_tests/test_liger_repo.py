"""Liger-Kernel's performance gate (tilegate): how `src/liger_kernel`'s Triton ops are measured.

A pytest-benchmark suite run through tilegate's pytest plugin:

    tilegate perf                                  # the `quick` profile, against baselines/
    tilegate perf --ab HEAD^1                      # the pull request's kernels beside its base's
    TRITON_INTERPRET=1 pytest perf_tests --tilegate --perf-profile smoke    # CPU, no GPU

Two variants in every group: `torch` (eager PyTorch, the reference every ratio is measured
against) and `liger` (the autograd Functions of `liger_kernel.ops`, imported by the package's
own name: in an A/B run each side imports its own checkout's liger_kernel). The grid's axes:

    kernel   op and pass in one value ("layer_norm-bwd", "cross_entropy-fwd_bwd"): one axis,
             because a profile is the cross product of its axes and cross_entropy has no
             separate backward (Liger computes the logits' gradient inside the forward)
    dtype    bf16 | fp16 | fp32
    tokens   rows (batch x sequence), label T<n>
    hidden   the normalized width (norms) or the gate/up width (swiglu), label H<n>; the
             cross-entropy's logits are tokens x vocab (`vocab`, a fixed parameter of the profile)

A case id is the variant and the labels (``liger-layer_norm-bwd-bf16-T8192-H4096``); its group
(``layer_norm-bwd-bf16-T8192-H4096``) holds liger and torch, timed round by round.

Only the first call of a fresh timed callable is checked against the reference: Liger's
backwards write in place (rms_norm's dX into dY, cross_entropy's gradient into the logits), so
later calls compute on overwritten buffers, as Liger's own benchmarks do. The work is the same.

The calls are those every Liger release since 0.6 accepts (checked at the commits of #945 and
#1266, and 0.8.5): LigerLayerNormFunction(X, W, B, eps), LigerRMSNormFunction(X, W, eps, offset,
casting_mode, in_place), LigerSiLUMulFunction(a, b), LigerCrossEntropyFunction(logits, target,
weight) -> (loss, ...).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch
import torch.nn.functional as F

from tilegate.cases import Case
from tilegate.declare import Axis, Benchmark, Profile, Variant, Work
from tilegate.harness.bench import measure_case

# --- where liger_kernel comes from --------------------------------------------------------------
# The package is imported by its own name. An installed one (pip install -e .), or one the runner
# put first on sys.path (an A/B side's checkout), wins; otherwise this repository's src/.
_SRC = Path(__file__).resolve().parents[1] / "src"
if importlib.util.find_spec("liger_kernel") is None and (_SRC / "liger_kernel").is_dir():
    sys.path.insert(0, str(_SRC))


# --- Triton's CPU interpreter (the smoke profile, TRITON_INTERPRET=1): three gaps closed --------
def _interpreter_shims() -> None:
    """Close the gaps of Triton 3.6's interpreter that Liger's kernels hit; CPU runs only.

    1. A Python float argument reaches the kernel as a plain float (Liger's `eps.to(tl.float32)`
       then raises); compiled Triton makes it an fp32 scalar, and so do we.
    2. `triton.language.extra.libdevice` is a stub under the interpreter: `rsqrt` (the norms) and
       `tanh` (cross_entropy's softcap) go to interpreter-supported math. Liger binds them at
       import, so this runs before liger_kernel is imported.
    3. tilegate's compiled-code identity hashes an interpreted kernel through Triton's
       dependency walk, which accepts only compiled @jit callees: an interpreted callee (Liger's
       `silu`) is hashed as the JITFunction of the same source, the shims of 2 as the stubs.
    bf16 arithmetic is wrong under the interpreter: the smoke profile measures fp32.
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    import numpy as np
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.runtime import interpreter, jit

    if getattr(interpreter._implicit_cvt, "_liger_repo", False):
        return
    wrap = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):
            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return wrap(arg)

    implicit_cvt._liger_repo = True  # type: ignore[attr-defined]
    interpreter._implicit_cvt = implicit_cvt

    def rsqrt(x: Any) -> Any:
        return tl.math.rsqrt(x)

    def tanh(x: Any) -> Any:
        return 2.0 * tl.sigmoid(2.0 * x) - 1.0

    for shim in (rsqrt, tanh):
        shim.__module__ = libdevice.__name__
        setattr(libdevice, shim.__name__, shim)

    record = jit.DependenciesFinder.record_reference
    as_jit: dict[Any, Any] = {}

    def record_reference(self: Any, val: Any, var_dict: Any = None, name: Any = None) -> Any:
        if isinstance(val, interpreter.InterpretedFunction):
            if val.fn not in as_jit:
                as_jit[val.fn] = jit.JITFunction(val.fn)
            val = as_jit[val.fn]
        return record(self, val, var_dict, name)

    jit.DependenciesFinder.record_reference = record_reference


_interpreter_shims()

# Liger's rms_norm and swiglu (since mid 2026) test `isinstance(X, torch.distributed.tensor.DTensor)`,
# a submodule `import torch` does not load (Liger's unit tests get it through transformers)
if torch.distributed.is_available():
    import torch.distributed.tensor

from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction  # noqa: E402
from liger_kernel.ops.layer_norm import LigerLayerNormFunction  # noqa: E402
from liger_kernel.ops.rms_norm import LigerRMSNormFunction  # noqa: E402
from liger_kernel.ops.swiglu import LigerSiLUMulFunction  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
# relative Frobenius error allowed against the float64 (CPU) / float32 (GPU) reference, the
# largest over a pass's outputs
TOLERANCE = {"fp16": 2e-3, "bf16": 1.6e-2, "fp32": 1e-4}
EPS = 1e-6
VOCAB = 128256  # Llama-3's: the cross-entropy's logits are tokens x VOCAB


# --- the ops: eager torch (the reference's formula too) and Liger ------------------------------
def _torch_rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """HF LlamaRMSNorm: rstd in fp32 (or wider), the weight multiply in the input dtype."""
    h = x.to(torch.promote_types(x.dtype, torch.float32))
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)
    return w * h.to(x.dtype)


def _torch_cross_entropy(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """HF's loss: the logits upcast to fp32 (or wider), mean over the tokens."""
    return F.cross_entropy(x.to(torch.promote_types(x.dtype, torch.float32)), target)


# op -> (passes, forward's tensor arguments, differentiated ones, torch formula, Liger call)
OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], Callable, Callable]] = {
    "layer_norm": (
        ("fwd", "bwd"),
        ("x", "w", "b"),
        ("x", "w", "b"),
        lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS),
        lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, EPS),
    ),
    "rms_norm": (
        ("fwd", "bwd"),
        ("x", "w"),
        ("x", "w"),
        _torch_rms_norm,
        # offset 0, Llama's casting, dX written into dY (Liger's defaults)
        lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama", True),
    ),
    "swiglu": (
        ("fwd", "bwd"),
        ("a", "b"),
        ("a", "b"),
        lambda a, b: F.silu(a) * b,
        lambda a, b: LigerSiLUMulFunction.apply(a, b),
    ),
    "cross_entropy": (
        ("fwd", "fwd_bwd"),
        ("x", "target"),
        ("x",),
        _torch_cross_entropy,
        lambda x, t: LigerCrossEntropyFunction.apply(x, t, None)[0],
    ),
}
KERNELS = tuple(f"{op}-{p}" for op, spec in OPS.items() for p in spec[0])


def split(params: Mapping[str, Any]) -> tuple[str, str]:
    """("layer_norm", "bwd") of params["kernel"]; ValueError naming the known ones."""
    op, _, pass_ = str(params["kernel"]).partition("-")
    if op not in OPS or pass_ not in OPS[op][0]:
        raise ValueError(f"kernel {params['kernel']!r}: expected one of {list(KERNELS)}")
    return op, pass_


def make_inputs(params: Mapping[str, Any], device: str, seed: int) -> dict[str, torch.Tensor]:
    """The op's tensors from a fixed seed: activations N(0, 1), norm weights 1 + noise (HF
    initializes them to ones), `dy` the backward's fixed output gradient (a backward only).
    Drawn on the device: the logits are 1G elements at 8192 x 128256 (seconds on a CPU)."""
    op, pass_ = split(params)
    dtype = DTYPES[params["dtype"]]
    t, h = int(params["tokens"]), int(params["hidden"])
    g = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        x = torch.randn(*shape, generator=g, device=device, dtype=torch.float32)
        return (x * scale if scale != 1.0 else x).to(dtype)

    if op == "cross_entropy":
        v = int(params["vocab"])
        target = torch.randint(0, v, (t,), generator=g, device=device)
        return {"x": randn(t, v), "target": target}
    if op == "swiglu":
        out = {"a": randn(t, h), "b": randn(t, h)}
    else:
        out = {"x": randn(t, h), "w": 1 + randn(h, scale=0.1), "b": randn(h, scale=0.1)}
        out = {k: out[k] for k in OPS[op][1]}
    if pass_ == "bwd":
        out["dy"] = randn(t, h)
    return out


def _timed(fn: Callable, params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Callable:
    """The zero-argument call timed for one pass of the forward `fn(*tensors)`."""
    op, pass_ = split(params)
    _, args_of, grad_wrt, _, _ = OPS[op]
    if pass_ == "fwd":
        args = [inputs[k] for k in args_of]

        def forward() -> Any:
            with torch.no_grad():
                return fn(*args)

        return forward
    # own leaves: Liger's cross_entropy writes its gradient into them, rms_norm's dX into dy
    leaves = {k: inputs[k].detach().clone().requires_grad_() for k in grad_wrt}
    args = [leaves.get(k, inputs[k]) for k in args_of]
    wrt = tuple(leaves.values())
    if pass_ == "fwd_bwd":

        def forward_backward() -> Any:
            loss = fn(*args)
            return (loss.detach(), *torch.autograd.grad(loss, wrt))

        return forward_backward
    y = fn(*args)
    dy = inputs["dy"].clone()

    def backward() -> Any:
        return torch.autograd.grad(y, wrt, dy, retain_graph=True)

    return backward


def _torch(params: Mapping[str, Any], inputs: Any) -> Callable:
    return _timed(OPS[split(params)[0]][3], params, inputs)


def _liger(params: Mapping[str, Any], inputs: Any) -> Callable:
    return _timed(OPS[split(params)[0]][4], params, inputs)


def reference_output(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Any:
    """The pass's output from the eager formula in float64 (CPU) / float32 (GPU)."""
    on_cpu = next(iter(inputs.values())).device.type == "cpu"
    hi = torch.float64 if on_cpu else torch.float32
    up = {k: v.to(hi) if v.is_floating_point() else v for k, v in inputs.items()}
    return _torch(params, up)()


def error(output: Any, reference: Any, params: Mapping[str, Any]) -> float:
    """The largest relative Frobenius error ||out - ref|| / ||ref|| over the pass's outputs."""
    outs = output if isinstance(output, tuple) else (output,)
    refs = reference if isinstance(reference, tuple) else (reference,)
    if len(outs) != len(refs):
        return float("inf")
    worst = 0.0
    for o, r in zip(outs, refs, strict=True):
        if o is None or tuple(o.shape) != tuple(r.shape):
            return float("inf")
        o, r = o.detach(), r.detach()
        d = torch.linalg.vector_norm(o.to(r.dtype) - r)
        worst = max(worst, float(d / torch.linalg.vector_norm(r).clamp_min(1e-30)))
    return worst


def work(params: Mapping[str, Any]) -> Work:
    """The bytes a pass must move at least (inputs read once, outputs written once): GB/s is the
    effective bandwidth, the same bytes for both variants."""
    op, pass_ = split(params)
    e = DTYPES[params["dtype"]].itemsize
    t, h = int(params["tokens"]), int(params["hidden"])
    th = t * h
    if op == "cross_entropy":  # logits (+ their gradient written back) and the targets
        tv = t * int(params["vocab"])
        return Work(bytes=float((tv if pass_ == "fwd" else 2 * tv) * e + 8 * t))
    if op == "swiglu":  # a, b -> c; dc, a, b -> da, db
        return Work(bytes=float((3 if pass_ == "fwd" else 5) * th * e))
    vecs = 2 if op == "layer_norm" else 1  # w (+ b)
    if pass_ == "fwd":  # x, w(, b) -> y
        return Work(bytes=float((2 * th + vecs * h) * e))
    return Work(bytes=float((3 * th + (1 + vecs) * h) * e))  # dy, x, w -> dx, dw(, db)


VARIANTS = (
    Variant(
        "torch",
        _torch,
        reference=True,
        family="reference",
        description="eager torch: F.layer_norm, HF LlamaRMSNorm, silu(a) * b, F.cross_entropy "
        "on fp32 logits",
    ),
    Variant(
        "liger",
        _liger,
        family="liger",
        description="liger_kernel.ops' autograd Functions (this checkout's src/liger_kernel)",
    ),
)


def _axes(
    kernels: tuple[str, ...],
    dtypes: tuple[str, ...],
    tokens: tuple[int, ...],
    hidden: tuple[int, ...],
) -> tuple[Axis, ...]:
    return (
        Axis("kernel", kernels),
        Axis("dtype", dtypes),
        Axis("tokens", tokens, label="T{}"),
        Axis("hidden", hidden, label="H{}"),
    )


NORMS = ("layer_norm-fwd", "layer_norm-bwd", "rms_norm-fwd", "rms_norm-bwd")
CROSS_ENTROPY = ("cross_entropy-fwd", "cross_entropy-fwd_bwd")

PROFILES = (
    # The pull-request check (`tilegate perf` runs it unless told): the norms and the
    # cross-entropy at Llama-3-8B's sizes (8192 tokens, hidden 4096, vocab 128256), bf16.
    # hold_host: a Liger call's host work (autograd, the Python wrapper: 0.1-0.4 ms for a
    # backward) is as long as a norm's GPU work here; the GPU waits until each call is queued.
    Profile(
        "quick",
        _axes((*NORMS, *CROSS_ENTROPY), ("bf16",), (8192,), (4096,)),
        MappingProxyType({"vocab": VOCAB}),
        rounds=100,
        min_time_s=1.0,
        passes=2,
        soak_s=2.0,
        hold_host=True,
        description="PR check: layer_norm, rms_norm fwd/bwd and cross_entropy fwd/fwd_bwd, bf16, "
        "8192 tokens x 4096 (vocab 128256)",
    ),
    # Nightly: the norms and swiglu at more widths and both half precisions.
    Profile(
        "default",
        _axes(
            (*NORMS, "swiglu-fwd", "swiglu-bwd"),
            ("bf16", "fp16"),
            (4096, 16384),
            (2048, 4096, 8192),
        ),
        MappingProxyType({"vocab": VOCAB}),
        rounds=100,
        min_time_s=2.0,
        passes=4,
        soak_s=10.0,
        hold_host=True,
        description="norms and swiglu fwd/bwd x {bf16, fp16} x tokens {4k, 16k} x hidden {2k, 4k, 8k}",
    ),
    # The cross-entropy alone at two lengths and in fp32 too (#1266 measured both dtypes).
    Profile(
        "cross_entropy",
        _axes(CROSS_ENTROPY, ("bf16", "fp32"), (4096, 8192), (4096,)),
        MappingProxyType({"vocab": VOCAB}),
        rounds=50,
        min_time_s=2.0,
        passes=2,
        soak_s=2.0,
        hold_host=True,
        description="cross_entropy fwd/fwd_bwd x {bf16, fp32} x tokens {4k, 8k}, vocab 128256",
    ),
    # The CPU pipeline proof (TRITON_INTERPRET=1): every kernel at odd sizes that exercise the
    # masks, fp32 (bf16 arithmetic is wrong under the interpreter); timings mean nothing.
    Profile(
        "smoke",
        _axes(KERNELS, ("fp32",), (9,), (96,)),
        MappingProxyType({"vocab": 200}),
        rounds=6,
        min_time_s=0.0,
        passes=1,
        soak_s=0.0,
        interpreter=True,
        description="CPU interpreter, tiny shapes: proves the pipeline, measures nothing",
    ),
)

BENCHMARK = Benchmark(
    name="liger_repo",
    description="Liger-Kernel's Triton ops (layer_norm, rms_norm, swiglu, cross_entropy) "
    "against eager torch",
    variants=VARIANTS,
    profiles=PROFILES,
    default_profile="quick",
    inputs=make_inputs,
    reference_output=reference_output,
    tolerance=MappingProxyType(TOLERANCE),
    error=error,
    work=work,
    tolerance_axes=("kernel", "dtype", "tokens", "hidden"),
    # every op's peak GPU memory of one call gated exactly (tilegate.judge.memory): a pull
    # request that drops an in-place write (RMSNorm's dX into the grad buffer) is MORE MEMORY
    memory_tolerance="0",
)


def test_liger_repo(tilegate_case: Case, perf_run: Any, benchmark: Any) -> None:
    """One case: correctness against the reference first, then its device time per call."""
    measure_case(tilegate_case, perf_run, benchmark)
