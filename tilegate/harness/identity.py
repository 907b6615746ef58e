"""Compiled-code identity: a hash of what a variant's call actually runs on this machine.

`capture()` records every Triton launch made while a variant's `matmul` runs once (the
correctness call), by wrapping `JITFunction.run` (and, under the interpreter,
`InterpretedFunction.run`) for the duration of that call only. `identity()` hashes, in launch
order, for each launch:

* on a GPU: the SASS of the compiled cubin (`CompiledKernel.asm["sass"]`, disassembled by the
  cuobjdump Triton ships), or, where that fails, its PTX without debug lines; plus the grid and
  the launch metadata that is not in the binary (warps, CTAs, cluster, shared memory);
* under the interpreter: the kernel's source and that of every `@jit` function it calls
  (Triton's own dependency-aware `cache_key`), its constexprs and the grid.

Constexprs and block shapes enter through the code they compile to: a constexpr the kernel
ignores changes nothing that runs, and two variants whose binaries, grids and launch metadata
match run the same code. File paths and line numbers do not enter (SASS has none; PTX debug
lines are dropped), so a base commit materialised elsewhere, or a comment that shifts a kernel
down the file, is still "the same code". A variant that launches no Triton kernel (the torch
reference) is identified by torch's version: the same on both sides of an A/B run.

Relies on Triton's JIT internals (`JITFunction.run` returning the `CompiledKernel`); tested on
the CPU under the interpreter (tests/test_identity.py) and on the GPU by every A/B run.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

KINDS = ("sass", "ptx", "source", "reference")
_PTX_DEBUG = re.compile(r"^\s*(\.loc|\.file|//).*$|^\s*\.section\s+\.debug.*$", re.M)


@dataclass(frozen=True)
class Launch:
    """One Triton launch seen during a captured call."""

    code: str  # sha256 of the code itself (SASS, PTX or source)
    kind: str  # "sass", "ptx" or "source"
    grid: tuple[int, ...]
    meta: tuple[tuple[str, Any], ...]  # launch metadata not in the code (warps, shared, ...)


@dataclass
class Captured:
    launches: list[Launch] = field(default_factory=list)


@dataclass(frozen=True)
class Identity:
    """The identity of one variant's compiled code: `hash` is what two sides compare."""

    hash: str  # "sha256:<hex>"
    kind: str  # one of KINDS: how it was taken (comparable only within a kind)
    launches: int  # Triton launches per call

    def as_json(self) -> dict[str, Any]:
        return {"code_hash": self.hash, "code_hash_kind": self.kind, "launches": self.launches}

    def marked(self, what: str) -> Identity:
        """This identity with a test-only injection folded in: injected code is changed code."""
        return Identity("sha256:" + _sha(self.hash, what), f"{self.kind}+injected", self.launches)


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def _grid(grid: Any, bound_args: Any = None) -> tuple[int, ...]:
    if callable(grid):
        grid = grid(bound_args)
    return tuple(int(g) for g in grid)


def _compiled_launch(kernel: Any, grid: Any) -> Launch:
    """A GPU launch: SASS (or PTX without debug lines) plus what the binary does not hold."""
    md = kernel.metadata
    meta = tuple(
        (k, getattr(md, k))
        for k in ("num_warps", "num_ctas", "shared", "cluster_dims", "maxnreg")
        if hasattr(md, k)
    )
    try:
        code, kind = kernel.asm["sass"], "sass"
    except Exception:  # no cuobjdump: the PTX is what ptxas assembled, deterministically
        code, kind = _PTX_DEBUG.sub("", str(kernel.asm["ptx"])), "ptx"
    return Launch(_sha(kind, code), kind, _grid(grid), meta)


def _interpreted_launch(fn: Any, grid: Any, kwargs: dict[str, Any]) -> Launch:
    """An interpreter launch: the dependency-aware source hash, constexprs, grid."""
    from triton.runtime.jit import JITFunction

    source_key = JITFunction(fn.fn).cache_key  # the kernel's and its @jit callees' source
    constexprs = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    return Launch(_sha("source", source_key, constexprs), "source", _grid(grid), ())


@contextlib.contextmanager
def capture() -> Iterator[Captured]:
    """Record the Triton launches made inside the `with` block (this thread's process)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    seen = Captured()
    originals: list[tuple[Any, Callable[..., Any]]] = []

    def compiled_run(orig: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            kernel = orig(self, *args, grid=grid, warmup=warmup, **kwargs)
            if kernel is not None and not warmup:
                if hasattr(kernel, "result"):  # an async compile
                    kernel = kernel.result()
                seen.launches.append(_compiled_launch(kernel, grid))
            return kernel

        return run

    def interpreted_run(orig: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                seen.launches.append(_interpreted_launch(self, grid, kwargs))
            return orig(self, *args, grid=grid, warmup=warmup, **kwargs)

        return run

    classes: list[tuple[Any, Callable[..., Any]]] = [
        (JITFunction, compiled_run),
        (InterpretedFunction, interpreted_run),
    ]
    for cls, wrap in classes:
        originals.append((cls, cls.run))
        cls.run = wrap(cls.run)
    try:
        yield seen
    finally:
        for cls, orig in originals:
            cls.run = orig


def identity(captured: Captured) -> Identity:
    """The identity of a captured call; the torch reference (no Triton launch) by torch's version."""
    if not captured.launches:
        import torch

        return Identity("sha256:" + _sha("reference", torch.__version__), "reference", 0)
    kinds = {launch.kind for launch in captured.launches}
    kind = kinds.pop() if len(kinds) == 1 else "+".join(sorted(kinds))
    digest = _sha(*((la.code, la.grid, la.meta) for la in captured.launches))
    return Identity("sha256:" + digest, kind, len(captured.launches))
