"""The fla benchmark: how fla_bench's variants are measured (the protocol).

A pytest-benchmark suite run through tilegate's pytest plugin (`tilegate perf`). The grid:

    kernel   op and pass in one value: gdn-fwd, gdn-bwd (chunk_gated_delta_rule), gla-fwd,
             gla-bwd (chunk_gla)
    dtype    bf16
    T        the sequence length, label T<n>

with batch 4, 16 heads of 128 fixed. A case id: ``fla-gdn-bwd-bf16-T4096``; its group holds fla
and its torch reference, timed round by round. Every fla kernel here is autotuned
(`fla_cache_autotune`, Triton's autotuner): the pick of each case and side is in the results
(extra_info.tilegate.autotune) and in the report where two sides picked differently.

GPU only: fla-core 0.6.0 does not run under Triton 3.6's CPU interpreter (chunk_fwd_h:
"'int' object has no attribute 'to'"), so there is no smoke profile; tests/ checks the
references and the protocol on the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from fla_bench import ops
from fla_bench.variants import KERNELS, VARIANTS, split

from tilegate.cases import Case
from tilegate.declare import Axis, Benchmark, Profile, Work
from tilegate.harness.bench import measure_case


def make_inputs(params: Mapping[str, Any], device: str, seed: int) -> dict[str, Any]:
    return ops.inputs(split(params), device, seed)


def reference_output(params: Mapping[str, Any], inputs: Mapping[str, Any]) -> Any:
    return ops.reference_output(split(params), inputs)


def error(output: Any, reference: Any, params: Mapping[str, Any]) -> float:
    return ops.rel_error(output, reference)


def work(params: Mapping[str, Any]) -> Work:
    return Work(bytes=ops.work_bytes(split(params)))


def _axes(ts: tuple[int, ...]) -> tuple[Axis, ...]:
    return (Axis("kernel", KERNELS), Axis("dtype", ("bf16",)), Axis("T", ts, label="T{}"))


FIXED = MappingProxyType({"batch": 4, "heads": ops.HEADS, "dim": ops.HEAD_DIM})

PROFILES = (
    # The pull-request check: both ops, both passes, at two sequence lengths (8 groups). A chunked
    # call at batch 4 x 16 heads x 128 is 0.3-3 ms on an H200; the eager references 5-40 ms.
    Profile(
        "quick",
        _axes((2048, 4096)),
        FIXED,
        rounds=40,
        min_time_s=1.0,
        passes=2,
        soak_s=2.0,
        description="PR check: gdn and gla fwd / bwd, bf16, T 2048 and 4096",
    ),
    Profile(
        "default",
        _axes((1024, 4096, 8192)),
        FIXED,
        rounds=40,
        min_time_s=2.0,
        passes=3,
        soak_s=5.0,
        description="gdn and gla fwd / bwd, bf16, T 1024, 4096, 8192",
    ),
)

BENCHMARK = Benchmark(
    name="fla",
    description="flash-linear-attention's chunk_gated_delta_rule and chunk_gla (fla-core) "
    "against eager torch references",
    variants=VARIANTS,
    profiles=PROFILES,
    default_profile="quick",
    inputs=make_inputs,
    reference_output=reference_output,
    tolerance=lambda params: ops.REL_TOL,
    error=error,
    work=work,
    tolerance_axes=("kernel", "dtype", "T"),
    # each case's peak GPU memory of one call recorded and reported, not gated (yet)
    memory_tolerance=None,
)


def test_fla(tilegate_case: Case, perf_run: Any, benchmark: Any) -> None:
    """One case: correctness against the reference first, then its device time per call."""
    measure_case(tilegate_case, perf_run, benchmark)
