"""Cold compiles side by side: a group's Triton kernels compiled in threads before its checks.

Triton's compiler spends most of a cold compile outside the GIL (MLIR, LLVM, ptxas), so threads
compile in parallel (docs/measuring.md). Each callable is called once in a worker thread, every
launch compile-only: nothing reaches the GPU but the callables' torch ops. An autotuned kernel
stops its worker (its tuning must not share the GPU); a worker's exception is dropped (the serial
check meets it again). The warnings are the run's (Python's filters are one per process).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_WORKER = threading.local()


class AutotuneDeferred(Exception):
    """An autotuned kernel met in a worker thread: its call is left to the serial check."""


def default_threads() -> int:
    """Worker threads for cold compiles: the machine's cores, at most 16."""
    return max(1, min(16, os.cpu_count() or 1))


@contextlib.contextmanager
def compile_only() -> Iterator[None]:
    """Inside the block, a worker thread's launches only compile (a tuner's: AutotuneDeferred)."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    run, tune = JITFunction.run, Autotuner.run

    def jit_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if getattr(_WORKER, "active", False):
            warmup = True
        return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    def tuned_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_WORKER, "active", False):
            raise AutotuneDeferred(getattr(getattr(self, "fn", None), "__name__", repr(self)))
        return tune(self, *args, **kwargs)

    JITFunction.run, Autotuner.run = jit_run, tuned_run
    try:
        yield
    finally:
        JITFunction.run, Autotuner.run = run, tune


def _call(fn: Callable[[], Any]) -> str | None:
    """One worker's call: None when it ran through, else why it stopped (never raised)."""
    _WORKER.active = True
    try:
        fn()
        return None
    except AutotuneDeferred as deferred:
        return f"autotuned ({deferred}): compiled by the check"
    except Exception as err:  # the check calls it again and fails the case with this error
        return f"{type(err).__name__}: {err}"
    finally:
        _WORKER.active = False


def first_calls(
    fns: Sequence[Callable[[], Any]],
    threads: int,
    *,
    beside: Callable[[], None] | None = None,
) -> list[str | None]:
    """Call every fn once, compile-only, `threads` at a time; return per fn None or why it
    stopped. `beside` runs in this thread meanwhile (a one-time start, such as the CUDA
    profiler's, that needs no worker)."""
    if not fns:
        if beside is not None:
            beside()
        return []
    with compile_only(), ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        futures = [pool.submit(_call, fn) for fn in fns]
        if beside is not None:
            beside()
        return [f.result() for f in futures]
