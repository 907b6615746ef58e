"""The one correctness check: run once, compare with the declared higher-precision reference.

Shared by the perf suite, the kernel tests and the tuning tools. A benchmark's factory hands out
an output buffer filled with NaN (docs/plugin.md), so an element the kernel never writes is
caught as "unwritten" rather than passing on stale data. Outputs: a tensor, a tuple or list.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """What one checked call did: correct or not, its relative error, and what went wrong."""

    correct: bool
    rel_err: float
    error: str | None = None  # the output is unusable (not returned, wrong shape, unwritten)


def _tensors(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


# what a Benchmark.error is: (output, reference_output, params) -> the error compared with tol
ErrorMetric = Callable[[Any, Any, Any], float]


def relative_error(got: Any, ref: Any, params: Any = None) -> float:
    """||got - ref|| / ||ref|| (Frobenius), in the reference's precision; for a tuple of outputs
    the largest of the per-output errors (a small output's error is not hidden by a large one's
    norm). `params` is unused: the signature is Benchmark.error's, whose default this is."""
    import torch

    worst = 0.0
    for g, r in zip(_tensors(got), _tensors(ref), strict=True):
        diff = g.to(r.dtype) - r
        num = float(torch.linalg.vector_norm(diff))
        den = float(torch.linalg.vector_norm(r))
        err = num / max(den, 1e-30)
        if not math.isfinite(err):
            return math.inf
        worst = max(worst, err)
    return worst


def check_output(
    got: Any, ref: Any, tol: float, *, error: ErrorMetric | None = None, params: Any = None
) -> Outcome:
    """Whether `got` is right: the reference's structure and shapes, every element written,
    error(got, ref, params) <= tol (error: the benchmark's metric, by default relative_error)."""
    import torch

    gots, refs = _tensors(got), _tensors(ref)
    if len(gots) != len(refs):
        return Outcome(False, math.inf, f"returned {len(gots)} outputs, expected {len(refs)}")
    for i, (g, r) in enumerate(zip(gots, refs, strict=True)):
        what = f"output {i}" if len(refs) > 1 else "output"
        if not isinstance(g, torch.Tensor):
            return Outcome(False, math.inf, f"{what} is a {type(g).__name__}, not a tensor")
        if tuple(g.shape) != tuple(r.shape):
            return Outcome(
                False, math.inf, f"{what} has shape {tuple(g.shape)}, expected {tuple(r.shape)}"
            )
        unwritten = torch.isnan(g) & ~torch.isnan(r)
        if unwritten.any():
            where = ""
            if g.dim() == 2:
                rows, cols = torch.nonzero(unwritten, as_tuple=True)
                where = (
                    f", rows {int(rows.min())}..{int(rows.max())}, "
                    f"cols {int(cols.min())}..{int(cols.max())}"
                )
            never = f"{int(unwritten.sum())} of {g.numel()} {what} elements were never written"
            return Outcome(False, math.inf, f"{never} (unwritten: still NaN){where}")
    rel = float((error or relative_error)(got, ref, params))
    return Outcome(math.isfinite(rel) and rel <= tol, rel)


def check_call(
    call: Callable[[], Any],
    ref: Any,
    tol: float,
    *,
    error: ErrorMetric | None = None,
    params: Any = None,
) -> Outcome:
    """Run `call()` once and check what it returned against `ref` (see check_output)."""
    return check_output(call(), ref, tol, error=error, params=params)
