"""The ops, their inputs, torch references and the correctness metric (no tilegate here).

Two fla-core ops, each forward (`fwd`) or backward (`bwd`, the gradients of every input from a
retained forward graph):

    gdn   fla.ops.gated_delta_rule.chunk_gated_delta_rule(q, k, v, g, beta): q, k L2-normalised
          [B, T, H, K], v [B, T, H, V], g = logsigmoid (the log decay) [B, T, H], beta sigmoid
    gla   fla.ops.gla.chunk_gla(q, k, v, g): g = logsigmoid / 16 per key channel [B, T, H, K]

The references are eager torch in float32, chunked so that a call is a few hundred launches,
not one per token: gdn is fla's own `naive_chunk_gated_delta_rule`, gla the chunked form of
`naive_recurrent_gla` below (tests/test_ops.py checks it against fla's recurrent reference).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F

OPS = ("gdn", "gla")
PASSES = ("fwd", "bwd")
REL_TOL = 0.05  # bf16 chunked kernels against float32 references (fla's tests: 0.005-0.02 each)
HEADS, HEAD_DIM = 16, 128


def inputs(params: Mapping[str, Any], device: str, seed: int) -> dict[str, torch.Tensor]:
    """The op's tensors at (batch, T, HEADS, HEAD_DIM) in the case's dtype; `do` for a bwd."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[params["dtype"]]
    b, t, h, d = (
        int(params["batch"]),
        int(params["T"]),
        int(params.get("heads", HEADS)),
        int(params.get("dim", HEAD_DIM)),
    )

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    q, k, v = rand(b, t, h, d), rand(b, t, h, d), rand(b, t, h, d)
    if params["op"] == "gdn":
        q, k = F.normalize(q, p=2, dim=-1), F.normalize(k, p=2, dim=-1)
        got = {
            "q": q,
            "k": k,
            "v": v,
            "g": F.logsigmoid(rand(b, t, h)),
            "beta": rand(b, t, h).sigmoid(),
        }
    else:
        got = {"q": q, "k": k, "v": v, "g": F.logsigmoid(rand(b, t, h, d)) / 16}
    if params["pass"] == "bwd":
        got["do"] = rand(b, t, h, d)
    out = {}
    for name, x in got.items():
        x = x.to(device=device, dtype=dtype if name != "g" else torch.float32)
        out[name] = x.requires_grad_(params["pass"] == "bwd" and name != "do")
    return out


def torch_chunk_gla(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, chunk: int = 64
) -> torch.Tensor:
    """GLA in float32, chunk by chunk: o_t = (q_t * scale) h_t, h_t = h_{t-1} * exp(g_t) + k_t v_t^T."""
    dtype = v.dtype
    b, t, h, dk = q.shape
    pad = (-t) % chunk
    q, k, v, g = (F.pad(x.float(), (0, 0, 0, 0, 0, pad)).transpose(1, 2) for x in (q, k, v, g))
    n = (t + pad) // chunk
    q, k, v, g = (x.reshape(b, h, n, chunk, -1) for x in (q, k, v, g))
    gc = g.cumsum(-2)  # the decay from each chunk's start, inclusive
    qg, kg = q * dk**-0.5 * gc.exp(), k * (-gc).exp()
    intra = ((qg @ kg.transpose(-1, -2)).tril()) @ v
    state = q.new_zeros(b, h, dk, v.shape[-1])
    outs = []
    for i in range(n):
        outs.append(intra[:, :, i] + qg[:, :, i] @ state)
        last = gc[:, :, i, -1:]
        state = (
            state * last.transpose(-1, -2).exp()
            + (k[:, :, i] * (last - gc[:, :, i]).exp()).transpose(-1, -2) @ v[:, :, i]
        )
    o = torch.stack(outs, 2).reshape(b, h, n * chunk, -1)[:, :, :t]
    return o.transpose(1, 2).to(dtype)


def _torch_gdn(x: Mapping[str, torch.Tensor]) -> torch.Tensor:
    from fla.ops.gated_delta_rule import naive_chunk_gated_delta_rule

    o, _ = naive_chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"])
    return o.to(x["v"].dtype)


def _fla_gdn(x: Mapping[str, torch.Tensor]) -> torch.Tensor:
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    o, _ = chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"])
    return o


def _fla_gla(x: Mapping[str, torch.Tensor]) -> torch.Tensor:
    from fla.ops.gla import chunk_gla

    o, _ = chunk_gla(x["q"], x["k"], x["v"], x["g"])
    return o


FORWARD: dict[str, dict[str, Callable[[Mapping[str, torch.Tensor]], torch.Tensor]]] = {
    "torch": {"gdn": _torch_gdn, "gla": lambda x: torch_chunk_gla(x["q"], x["k"], x["v"], x["g"])},
    "fla": {"gdn": _fla_gdn, "gla": _fla_gla},
}


def make(impl: str, params: Mapping[str, Any], x: Mapping[str, torch.Tensor]) -> Callable[[], Any]:
    """The timed call of `impl` ("torch" or "fla"): the forward, or the backward of a forward
    run once here (its graph retained: every call computes the same gradients again)."""
    forward = FORWARD[impl][params["op"]]
    leaves = [x[n] for n in ("q", "k", "v", "g", "beta") if n in x]
    if params["pass"] == "fwd":
        return lambda: forward(x)
    o = forward(x)

    def backward() -> tuple[torch.Tensor, ...]:
        return torch.autograd.grad(o, leaves, x["do"], retain_graph=True)

    return backward


def reference_output(params: Mapping[str, Any], x: Mapping[str, torch.Tensor]) -> Any:
    """The torch reference in float32 (its inputs copied to float32)."""
    x32 = {n: t.detach().float().requires_grad_(t.requires_grad) for n, t in x.items()}
    got = make("torch", params, x32)()
    return got.detach() if isinstance(got, torch.Tensor) else tuple(t.detach() for t in got)


def rel_error(output: Any, reference: Any) -> float:
    """The largest relative Frobenius error over the outputs (one tensor, or the gradients)."""
    outs = (output,) if isinstance(output, torch.Tensor) else tuple(output)
    refs = (reference,) if isinstance(reference, torch.Tensor) else tuple(reference)
    if len(outs) != len(refs):
        return float("inf")
    worst = 0.0
    for o, r in zip(outs, refs, strict=True):
        if o.shape != r.shape:
            return float("inf")
        o, r = o.detach().double(), r.detach().double()
        worst = max(worst, float((o - r).norm() / r.norm().clamp_min(1e-12)))
    return worst if worst == worst else float("inf")  # NaN: an element never written


def work_bytes(params: Mapping[str, Any]) -> float:
    """The bytes a call must move at least: its inputs and outputs (2 bytes each in bf16)."""
    b, t = int(params["batch"]), int(params["T"])
    h, d = int(params.get("heads", HEADS)), int(params.get("dim", HEAD_DIM))
    tensors = 4 if params["pass"] == "fwd" else 8  # q k v (g) + o; bwd: + do and four grads
    return float(tensors * b * t * h * d * 2)
