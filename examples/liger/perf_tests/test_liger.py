"""The Liger-Kernel benchmark: how liger_bench's variants are measured (the protocol).

A pytest-benchmark suite run through tilegate's pytest plugin (`tilegate perf`, or
`pytest perf_tests --tilegate --perf-profile smoke`). The grid's axes:

    kernel   op and pass in one value ("rms_norm-fwd", "swiglu-bwd", "flce-fwd_bwd"): one axis,
             because a profile is the cross product of its axes and flce has no separate fwd /
             bwd (Liger computes its gradients inside the forward), so op x pass is not a product
    dtype    fp16 | bf16
    tokens   rows (batch x sequence), label T<n>
    hidden   the normalized width (norms) or the gate/up width (GLUs), label H<n>

and `vocab` is a fixed parameter (flce only). A case id is the variant and the labels:
``liger-rms_norm-fwd-bf16-T8192-H4096``; its group ``rms_norm-fwd-bf16-T8192-H4096`` holds
liger and its torch reference, timed round by round, so liger / torch is a paired ratio.
The ops' tensors, references, errors and bytes are liger_bench.ops'; this module declares them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from liger_bench import ops
from liger_bench.variants import KERNELS, VARIANTS, VOCAB, _wrong, split

from tilegate.cases import Case
from tilegate.declare import Axis, Benchmark, Expectation, Profile, Work
from tilegate.harness.bench import measure_case


def make_inputs(params: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    """The op's tensors (liger_bench.ops.inputs); a forward does not keep the backward's dy
    (a profile's groups are all prepared, and held, before the first is timed)."""
    p = split(params)
    got = ops.inputs(p, device, seed)
    if p["pass"] == "fwd":
        got.pop("dy", None)
    return got


def reference_output(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Any:
    return ops.reference_output(split(params), dict(inputs))


def error(output: Any, reference: Any, params: Mapping[str, Any]) -> float:
    """The largest relative Frobenius error over the pass's outputs (liger_bench.ops.rel_error)."""
    return ops.rel_error(output, reference)


def work(params: Mapping[str, Any]) -> Work:
    """The bytes a pass must move at least (GB/s: effective bandwidth, the same bytes for both
    variants, whatever torch's fp32 intermediates add); flce's flops too (three matmuls)."""
    p = split(params)
    w = ops.work(p)
    flops = float(w["flops"]) if p["op"] == "flce" else None
    return Work(bytes=float(w["bytes"]), flops=flops, dtype=params["dtype"])


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


GATED = ("rms_norm-fwd", "rms_norm-bwd", "swiglu-fwd")  # Liger's speed claims (docs/liger.md)
NO_FLCE = tuple(k for k in KERNELS if not k.startswith("flce"))

PROFILES = (
    # The pull-request check (`tilegate perf` runs `quick` unless told): the three gated kernels
    # plus the rest of rms_norm / swiglu and layer_norm (whose backward 0.8.5 changed), Llama-3-8B
    # width. 6 groups; each call moves 130-340 MB (40-300 us on an H200): the minimum time, not
    # the round count, sets the length, ~1.2 s a group.
    # hold_host: a Liger call's host work (autograd, the Python wrapper: 0.1-0.4 ms for a
    # backward) is as long as its GPU work at these sizes, so without it the H200 timed the host
    # (a layer_norm bwd 0.20-0.48 ms from run to run, tolerances needing 226 %); with it the GPU
    # waits until the call is queued (tilegate.harness.timing)
    Profile(
        "quick",
        _axes(
            (
                "rms_norm-fwd",
                "rms_norm-bwd",
                "layer_norm-fwd",
                "layer_norm-bwd",
                "swiglu-fwd",
                "swiglu-bwd",
            ),
            ("bf16",),
            (8192,),
            (4096,),
        ),
        MappingProxyType({"vocab": VOCAB}),
        rounds=100,
        min_time_s=1.0,
        passes=2,
        soak_s=2.0,
        hold_host=True,
        description="PR check: 6 groups, bf16, 8192 tokens x 4096",
    ),
    # Nightly: every norm / GLU pass at realistic widths. The largest group (16384 x 8192, a bwd)
    # holds ~3 GB between its check and its last timed pass; all 96 together ~60 GB.
    Profile(
        "default",
        _axes(NO_FLCE, ("bf16", "fp16"), (4096, 16384), (2048, 4096, 8192)),
        MappingProxyType({"vocab": VOCAB}),
        rounds=100,
        min_time_s=2.0,
        passes=4,
        soak_s=10.0,
        hold_host=True,
        description="norms and GLUs fwd/bwd x {bf16, fp16} x tokens {4k, 16k} x hidden {2k, 4k, 8k}",
    ),
    # flce: a few hundred ms a call at Llama-3's vocabulary, so it has a profile of its own (in a
    # cross product with the others' widths it would dominate their run).
    Profile(
        "flce",
        _axes(("flce-fwd_bwd",), ("bf16",), (4096, 8192), (4096,)),
        MappingProxyType({"vocab": VOCAB}),
        rounds=20,
        min_time_s=2.0,
        passes=2,
        soak_s=2.0,
        hold_host=True,
        description="fused linear cross-entropy, loss and both grads, vocab 128256",
    ),
    # The CPU pipeline proof (TRITON_INTERPRET=1): every kernel at odd sizes that exercise the
    # masks; timings mean nothing.
    Profile(
        "smoke",
        _axes(KERNELS, ("fp16",), (37,), (96,)),
        MappingProxyType({"vocab": 200}),
        # 6: a compare against a baseline of two such runs (12 samples a row) needs >= 3 samples
        # for its rank test to be able to fail at all (tilegate.judge.stats.min_samples_rank_sum)
        rounds=6,
        min_time_s=0.0,
        passes=1,
        soak_s=0.0,
        interpreter=True,
        description="CPU interpreter, tiny shapes: proves the pipeline, measures nothing",
    ),
)

# Liger faster than eager torch, where Liger claims it and fusion should win clearly: rms_norm
# fwd and bwd, swiglu fwd, at hidden >= 4096. The bound at each hidden (per setting of kernel,
# dtype, tokens) is baseline data: a rebaseline records one where liger / torch <= win_below (0.97)
# in every run, max_ratio = the worst ratio x 1.05 (capped at 0.99); the gate then fails when
# the same-run ratio exceeds it in most runs. Where liger did not win clearly, no bound is stored
# (the rebaseline diff says so) and nothing is checked there.
EXPECTATIONS = (
    Expectation(
        faster="liger",
        than="torch",
        per="hidden",
        where=MappingProxyType({"kernel": GATED, "hidden": (4096, 8192)}),
    ),
)

BENCHMARK = Benchmark(
    name="liger",
    description="Liger-Kernel's Triton ops (rms_norm, layer_norm, swiglu, geglu, flce) against "
    "eager torch",
    variants=VARIANTS,
    profiles=PROFILES,
    default_profile="quick",
    inputs=make_inputs,
    reference_output=reference_output,
    tolerance=MappingProxyType(dict(ops.REL_TOL)),
    error=error,
    work=work,
    expectations=EXPECTATIONS,
    tolerance_axes=("kernel", "dtype", "tokens", "hidden"),
    wrong=_wrong,
    # every op's peak GPU memory of one call gated exactly: what Liger sells (tilegate.judge.memory)
    memory_tolerance="0",
)


def test_liger(tilegate_case: Case, perf_run: Any, benchmark: Any) -> None:
    """One case: correctness against the reference first, then its device time per call."""
    measure_case(tilegate_case, perf_run, benchmark)
