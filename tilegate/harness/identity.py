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

The case's identity is wider than its Triton kernels (`SCHEME`, "case1"): everything the timed
call runs enters it, conservatively, so that host-side work cannot hide behind an unchanged
kernel (a `c.zero_()` in the wrapper was "the same compiled code" before):

* every torch op the call dispatches (a `TorchDispatchMode`: op name, shapes, dtypes, strides);
* on a GPU, every kernel the call launches as the CUDA profiler sees it (torch.profiler / Kineto:
  name and grid of memsets, copies, cuBLAS and Triton kernels alike);
* the host code: a hash of the source of every module of the kernels package the call's
  kernels come from, comments and docstrings dropped (an AST dump): a comment moves nothing.

Compiled Triton code is hashed from its TTIR (locations dropped) and the compile options, not
from its SASS: on sm_90 Triton 3.6's warp-specialization pass assigns the mbarriers of
`tma_ws_persistent` in an order that changes from one process to the next (TTIR identical,
TTGIR and SASS with two barrier offsets swapped), so a fresh Triton cache (TRITON_CACHE_DIR in
nox) gave a hash the warm default cache did not. The TTIR is what the compiler is given; with
the same Triton, options and target (both sides of an A/B run: one process) it decides the rest.

Relies on Triton's JIT internals (`JITFunction.run` returning the `CompiledKernel`); tested on
the CPU under the interpreter (tests/test_identity.py) and on the GPU by every A/B run.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROFILE_ENV = "TILEGATE_IDENTITY_PROFILER"  # "0": no CUDA profiler in the identity (GPU only)

KINDS = ("ttir", "sass", "ptx", "source", "reference")
SCHEME = "case1"  # the prefix of a whole-case hash: hashes of other schemes are not compared
_PTX_DEBUG = re.compile(r"^\s*(\.loc|\.file|//).*$|^\s*\.section\s+\.debug.*$", re.M)
_LOC_DEF = re.compile(r"^#loc.*$", re.M)
# compile inputs and launch facts of a CompiledKernel's metadata (never paths or its own hash)
_META = (
    "num_warps",
    "num_ctas",
    "num_stages",
    "shared",
    "cluster_dims",
    "maxnreg",
    "launch_cooperative_grid",
    "launch_pdl",
    "global_scratch_size",
    "profile_scratch_size",
    "tmem_size",
    "enable_fp_fusion",
    "arch",
)


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
    ops: list[str] = field(default_factory=list)  # torch ops dispatched, with their operands
    kernels: list[str] = field(default_factory=list)  # GPU activity (profiler): name, grid
    packages: list[str] = field(default_factory=list)  # packages whose kernels were launched


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
        digest = _sha(self.hash, what)
        return Identity(f"{SCHEME}:sha256:{digest}", f"{self.kind}+injected", self.launches)


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


def strip_locations(ir: str) -> str:
    """MLIR text without its locations (file paths, line numbers): `loc(...)` and `#loc` lines."""
    ir = _LOC_DEF.sub("", ir)
    out, i = [], 0
    while True:
        j = ir.find(" loc(", i)
        if j < 0:
            out.append(ir[i:])
            return "".join(out)
        out.append(ir[i:j])
        depth, k = 0, j + 4
        while k < len(ir):
            depth += {"(": 1, ")": -1}.get(ir[k], 0)
            k += 1
            if depth == 0:
                break
        i = k


def _meta(md: Any) -> tuple[tuple[str, Any], ...]:
    get = md.get if isinstance(md, dict) else lambda k, d=None: getattr(md, k, d)
    # lists and tuples alike: metadata read back from the cache's JSON holds lists
    return tuple(
        (k, repr(tuple(v) if isinstance(v, list) else v))
        for k in _META
        if (v := get(k, None)) is not None
    )


def compiled_code(kernel: Any) -> tuple[str, str]:
    """(sha, kind) of a CompiledKernel: its TTIR without locations, else SASS, else PTX."""
    try:
        code, kind = strip_locations(str(kernel.asm["ttir"])), "ttir"
    except Exception:
        try:
            code, kind = kernel.asm["sass"], "sass"
        except Exception:  # no cuobjdump: the PTX is what ptxas assembled, deterministically
            code, kind = _PTX_DEBUG.sub("", str(kernel.asm["ptx"])), "ptx"
    return _sha(kind, code), kind


def _compiled_launch(kernel: Any, grid: Any) -> Launch:
    """A GPU launch: its TTIR (see the module's docstring) plus grid and launch metadata."""
    code, kind = compiled_code(kernel)
    return Launch(code, kind, _grid(grid), _meta(kernel.metadata))


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

    def package_of(fn: Any) -> None:
        module = getattr(getattr(fn, "fn", fn), "__module__", None) or ""
        top = module.split(".", 1)[0]
        if top and top not in seen.packages:
            seen.packages.append(top)

    def compiled_run(orig: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            kernel = orig(self, *args, grid=grid, warmup=warmup, **kwargs)
            package_of(self)
            if kernel is not None and not warmup:
                if hasattr(kernel, "result"):  # an async compile
                    kernel = kernel.result()
                seen.launches.append(_compiled_launch(kernel, grid))
            return kernel

        return run

    def interpreted_run(orig: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                package_of(self)
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
        with contextlib.ExitStack() as stack:
            stack.enter_context(_dispatched(seen.ops))
            profiled = stack.enter_context(_gpu_activity(seen.kernels))
            yield seen
            profiled()  # before the stack closes: it stops the profiler once, after a sync
    finally:
        for cls, orig in originals:
            cls.run = orig


def _operand(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return ("T", tuple(x.shape), str(x.dtype), tuple(x.stride()), x.device.type)
    if isinstance(x, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return str(x)
    if isinstance(x, (int, float, bool, str, type(None))):
        return x
    return type(x).__name__


@contextlib.contextmanager
def _dispatched(ops: list[str]) -> Iterator[None]:
    """Every torch op dispatched inside the block: name and operands (shapes, dtypes, strides)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            flat, _ = tree_flatten((args, kwargs or {}))
            ops.append(repr((str(func), tuple(_operand(x) for x in flat))))
            return func(*args, **(kwargs or {}))

    with Record():
        yield


def _profiling_gpu() -> bool:
    if os.environ.get("TRITON_INTERPRET") == "1" or os.environ.get(PROFILE_ENV) == "0":
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


@contextlib.contextmanager
def _gpu_activity(kernels: list[str]) -> Iterator[Callable[[], None]]:
    """The GPU's own record of the block (CUDA profiler): each kernel, memset and copy with its
    grid, in launch order. Yields the function that reads it once the block has ended."""
    if not _profiling_gpu():
        yield lambda: None
        return
    import torch
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CUDA])
    torch.cuda.synchronize()  # work launched before the block must not run inside its window
    prof.__enter__()
    stopped = False

    def read() -> None:
        nonlocal stopped
        if not stopped:
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            stopped = True
        try:
            profiler: Any = prof.profiler  # None only before the block started
            events = sorted(
                (e for e in profiler.kineto_results.events() if _on_gpu(e)),
                key=lambda e: e.start_ns(),
            )
            for e in events:
                kernels.append(repr((e.name(), _launch_shape(e))))
        except Exception as err:  # another torch's profiler API: the same marker on both sides
            kernels.append(f"gpu activity unreadable: {type(err).__name__}")

    try:
        yield read
    finally:
        if not stopped:  # the block raised: stop the profiler, read nothing
            stopped = True
            prof.__exit__(None, None, None)


def _on_gpu(event: Any) -> bool:
    return "CUDA" in str(event.device_type()) or "cuda" in str(event.device_type()).lower()


def _launch_shape(event: Any) -> Any:
    """grid and block from the event's Kineto metadata, where this torch exposes them."""
    try:
        meta = json.loads("{" + event.metadata_json() + "}")
    except Exception:
        return None
    return tuple(tuple(meta.get(k) or ()) for k in ("grid", "block"))


_SOURCE_CACHE: dict[tuple[Any, ...], str] = {}


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def package_source_hash(package: str) -> str | None:
    """The host code of a package: every module's AST (no comments, docstrings, line numbers)."""
    module = sys.modules.get(package)
    paths = list(getattr(module, "__path__", None) or [])
    if not paths:
        return None
    root = Path(paths[0])
    files = sorted(root.rglob("*.py"))
    key = (package, *((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))
    if key not in _SOURCE_CACHE:
        parts = []
        for f in files:
            try:
                tree = _strip_docstrings(ast.parse(f.read_text(encoding="utf-8")))
                parts.append((str(f.relative_to(root)), ast.dump(tree)))
            except (OSError, SyntaxError, UnicodeDecodeError) as err:
                parts.append((str(f.relative_to(root)), f"unreadable: {err}"))
        _SOURCE_CACHE[key] = _sha(*parts)
    return _SOURCE_CACHE[key]


def identity(captured: Captured) -> Identity:
    """The identity of a captured call (module docstring): its Triton launches, torch ops, GPU
    activity and host code; the torch reference (no Triton launch) by torch's version too."""
    import torch

    packages = captured.packages or (["kernels"] if "kernels" in sys.modules else [])
    # the source, not the name: the A/B base's package is the same code under another name
    host = tuple(package_source_hash(p) for p in packages)
    whole = (tuple(captured.ops), tuple(captured.kernels), host)
    if not captured.launches:
        digest = _sha("reference", torch.__version__, whole)
        return Identity(f"{SCHEME}:sha256:{digest}", "reference", 0)
    kinds = {launch.kind for launch in captured.launches}
    kind = kinds.pop() if len(kinds) == 1 else "+".join(sorted(kinds))
    digest = _sha(*((la.code, la.grid, la.meta) for la in captured.launches), whole)
    return Identity(f"{SCHEME}:sha256:{digest}", kind, len(captured.launches))


def same_scheme(a: str, b: str) -> bool:
    """Whether two code hashes were taken the same way (a hash of another scheme: not comparable)."""
    return a.rsplit("sha256:", 1)[0] == b.rsplit("sha256:", 1)[0]
