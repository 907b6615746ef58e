"""Compiled-code identity: a hash of what a variant's call actually runs on this machine.

`capture()` records, while the call runs, every Triton launch (wrapping `JITFunction.run`, or
`InterpretedFunction.run` under the interpreter), every torch op it dispatches, on a GPU every
kernel the CUDA profiler sees, and the project's host functions it runs; `identity()` hashes
them per part. What each part holds and why: docs/gate.md, "The identity is the whole case".
Relies on Triton's JIT internals (`JITFunction.run` returning the `CompiledKernel`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tilegate.fingerprint import record
from tilegate.fingerprint.extract import strip_locations
from tilegate.harness.autotune import strip_docstrings

PROFILE_ENV = "TILEGATE_IDENTITY_PROFILER"  # "0": no CUDA profiler in the identity (GPU only)

SCHEME = "case2"  # the prefix of a whole-case hash: hashes of other schemes are not compared
# the profiler could not be read: the identity is unknown (no hash: never "unchanged", judged
# on its time as a changed case is), its kind UNKNOWN so the report says why
UNREADABLE, UNKNOWN = "gpu activity unreadable", "unknown"
_PTX_DEBUG = re.compile(r"^\s*(\.loc|\.file|//).*$|^\s*\.section\s+\.debug.*$", re.M)
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
    """What `capture` saw of one call."""

    launches: list[Launch] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)  # torch ops dispatched, with their operands
    kernels: list[str] = field(default_factory=list)  # GPU activity (profiler): name, grid
    packages: list[str] = field(default_factory=list)  # packages whose kernels were launched
    code: list[Any] = field(default_factory=list)  # the project's Python code objects that ran
    roots: list[str] = field(default_factory=list)  # package dirs whose code is the host code
    # never hashed: what explains the call (tilegate.fingerprint.record), the autotuners' picks
    explain: list[dict[str, Any]] = field(default_factory=list)
    handles: list[Any] = field(default_factory=list)
    activity: list[dict[str, Any]] = field(default_factory=list)
    activity_us: float | None = None
    autotune: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Identity:
    """The identity of one variant's compiled code: `hash` is what two sides compare."""

    hash: str  # "sha256:<hex>"
    kind: str  # ttir, sass, ptx, source, reference: how it was taken (compared within a kind)
    launches: int  # Triton launches per call
    # each part's short digest (which differs when two sides' hashes do): "triton",
    # "torch_ops", "gpu_activity", "host_code"
    parts: tuple[tuple[str, str], ...] = ()
    # not hashed: tilegate.fingerprint.record's record of the call, the handles an AOT compile
    # of its interpreter launches needs (never written), each autotuner pick the call used
    explain: dict[str, Any] | None = field(default=None, compare=False)
    handles: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    autotune: tuple[dict[str, Any], ...] = field(default=(), compare=False)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code_hash": self.hash or None,
            "code_hash_kind": self.kind,
            "launches": self.launches,
        }
        if self.parts:
            out["code_parts"] = dict(self.parts)
        if self.explain:
            out["explain"] = self.explain
        if self.autotune:
            out["autotune"] = [dict(p) for p in self.autotune]
        return out

    def marked(self, what: str) -> Identity:
        """This identity with a test-only injection folded in: injected code is changed code."""
        digest = _sha(self.hash, what)
        return replace(self, hash=f"{SCHEME}:sha256:{digest}", kind=f"{self.kind}+injected")


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def _grid(grid: Any) -> tuple[int, ...]:
    return tuple(int(g) for g in (grid(None) if callable(grid) else grid))


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
    """A GPU launch: its TTIR, grid and launch metadata."""
    code, kind = compiled_code(kernel)
    return Launch(code, kind, _grid(grid), _meta(kernel.metadata))


def _autotuned_launch(active: Any, kind: str) -> Launch:
    """A launch under an autotuner: its source and config space (the pick is recorded apart)."""
    return Launch(_sha("autotuned", active.identity), kind, (), ())


def _interpreted_launch(fn: Any, grid: Any, kwargs: dict[str, Any]) -> Launch:
    """An interpreter launch: the dependency-aware source hash, constexprs, grid."""
    from triton.runtime.jit import JITFunction

    from tilegate.harness.autotune import plain

    source_key = JITFunction(fn.fn).cache_key  # the kernel's and its @jit callees' source
    constexprs = tuple(sorted((k, repr(plain(v))) for k, v in kwargs.items()))
    return Launch(_sha("source", source_key, constexprs), "source", _grid(grid), ())


@contextlib.contextmanager
def capture(*owners: Any, host_only: bool = False) -> Iterator[Captured]:
    """Record what the call inside the `with` block runs. `owners` (the variants' `make`s): their
    packages are the host-code part (none: those whose kernels were launched). `host_only`:
    without the torch ops and the CUDA profiler (a first call)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from tilegate.harness import autotune

    seen = Captured(roots=source_roots(owners))
    watch = autotune.Watch()
    jit_run, interpreter_run = JITFunction.run, InterpretedFunction.run

    def package_of(fn: Any) -> None:
        module = getattr(getattr(fn, "fn", fn), "__module__", None) or ""
        top = module.split(".", 1)[0]
        if top and top not in seen.packages:
            seen.packages.append(top)

    def compiled_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = jit_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        if watch.benchmarking:  # an autotuner timing its configs: not the call's work
            return kernel
        package_of(self)
        if kernel is not None and not warmup:
            if hasattr(kernel, "result"):  # an async compile
                kernel = kernel.result()
            tuned = watch.current()
            seen.launches.append(
                _compiled_launch(kernel, grid)
                if tuned is None
                else _autotuned_launch(tuned, compiled_code(kernel)[1])
            )
            seen.explain.append(record.gpu_launch(self, kernel, grid, kwargs))
        return kernel

    def interpreted_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        if not warmup and not watch.benchmarking:
            package_of(self)
            tuned = watch.current()
            seen.launches.append(
                _interpreted_launch(self, grid, kwargs)
                if tuned is None
                else _autotuned_launch(tuned, "source")
            )
            entry, handle = record.interpreted_launch(self, args, grid, kwargs)
            seen.explain.append(entry)
            seen.handles.append(handle)
        with _device_code():
            return interpreter_run(self, *args, grid=grid, warmup=warmup, **kwargs)

    JITFunction.run, InterpretedFunction.run = compiled_run, interpreted_run
    try:
        with contextlib.ExitStack() as stack:
            watch = stack.enter_context(autotune.watching())
            seen.autotune = watch.picks
            stack.enter_context(_host_code(seen.code))
            if host_only:
                yield seen
                return
            stack.enter_context(_dispatched(seen.ops))
            profiled = stack.enter_context(_gpu_activity(seen))
            yield seen
            profiled()  # before the stack closes: it stops the profiler once, after a sync
    finally:
        JITFunction.run, InterpretedFunction.run = jit_run, interpreter_run


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
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch wraps a mode's __torch_dispatch__ in dynamo.disable, which imports
            # torch._dynamo (2-3 s of CPU a process); where nothing has imported it, nothing
            # compiled can run in the block (a variant compiles in its first call, outside it)
            return "torch._dynamo" in sys.modules

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            flat, _ = tree_flatten((args, kwargs or {}))
            ops.append(repr((str(func), tuple(_operand(x) for x in flat))))
            return func(*args, **(kwargs or {}))

    with Record():
        yield


@functools.cache
def start_profiler() -> None:
    """Start and stop the CUDA profiler once per process, where the identity uses it: its first
    start takes seconds (4.5-6.3 s on the H200, docs/results-h200.md), spent beside the compiles
    (tilegate.harness.precompile) instead of in the first check."""
    if not _profiling_gpu():
        return
    from torch.profiler import ProfilerActivity, profile

    with contextlib.suppress(Exception), profile(activities=[ProfilerActivity.CUDA]):
        pass


def _profiling_gpu() -> bool:
    if os.environ.get("TRITON_INTERPRET") == "1" or os.environ.get(PROFILE_ENV) == "0":
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


@contextlib.contextmanager
def _gpu_activity(seen: Captured) -> Iterator[Callable[[], None]]:
    """The CUDA profiler's kernels, memsets, copies of the block; yields what reads them after."""
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
            seen.kernels += [repr((e.name(), _launch_shape(e))) for e in events]
            # without the profiler's times where this torch's events lack them
            with contextlib.suppress(Exception):
                seen.activity, seen.activity_us = record.gpu_activity(events)
        except Exception as err:  # another torch's profiler API: the identity is unknown
            seen.kernels.append(f"{UNREADABLE}: {type(err).__name__}")

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


# --- the host code the call runs ---------------------------------------------------------------

# top-level packages that are not the project's code: their functions never enter the identity
# (the tools and libraries under the kernels; a version change of one is an environment change,
# judged by the stored check and the Triton / library upgrade A/B, not a code change)
FOREIGN = (
    "tilegate",
    "torch",
    "triton",
    "numpy",
    "scipy",
    "pytest",
    "_pytest",
    "pluggy",
    "pytest_benchmark",
    "sympy",
    "networkx",
    "jinja2",
    "filelock",
    "fsspec",
    "typing_extensions",
    "packaging",
)
_TOOL_IDS = (3, 4)  # sys.monitoring tool ids tried (0-2 and 5 are the debugger, coverage, ...)


@functools.cache
def _foreign_dirs() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(FOREIGN packages' dirs, the standard library's dirs, the site-packages dirs): code
    under the first, or under the second and not the third, is never the project's."""
    import importlib.util
    import site
    import sysconfig

    def norm(path: str) -> str:
        return str(Path(path).resolve()) + os.sep

    packages = []
    for name in FOREIGN:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec else []:
            packages.append(norm(loc))
    paths = sysconfig.get_paths()
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    sites += [paths.get(k, "") for k in ("purelib", "platlib")]
    stdlib = [paths.get(k, "") for k in ("stdlib", "platstdlib")]
    return (
        tuple(dict.fromkeys(packages)),
        tuple(dict.fromkeys(norm(x) for x in stdlib if x)),
        tuple(dict.fromkeys(norm(x) for x in sites if x)),
    )


@functools.cache
def _is_project(filename: str) -> bool:
    """Whether code of this file can be the project's (a .py file outside FOREIGN and stdlib)."""
    packages, stdlib, sites = _foreign_dirs()
    real = str(Path(filename).resolve()) if filename.endswith(".py") else ""
    return (
        bool(real)
        and not real.startswith(packages)
        and not (real.startswith(stdlib) and not real.startswith(sites))
        and Path(real).is_file()
    )


_MONITOR: list[int] = []  # the sys.monitoring tool id this process holds (acquired once)
_SINK: list[list[Any]] = []  # where the running capture collects code objects
_COLLECTOR: list[Callable[..., None]] = []  # the profile functions the captures have set


def _on_start(code: Any, offset: int) -> Any:
    if not _is_project(code.co_filename):
        return sys.monitoring.DISABLE  # type: ignore[attr-defined]  # never again for this code
    if _SINK:
        _SINK[-1].append(code)
    return None


@contextlib.contextmanager
def _host_code(sink: list[Any]) -> Iterator[None]:
    """Collect the project's code objects that start running inside the block (sys.monitoring on
    Python >= 3.12: one look per code object outside the project; else a profile function)."""
    mon = getattr(sys, "monitoring", None)
    if mon is not None and not _MONITOR:
        for tool in _TOOL_IDS:
            try:
                mon.use_tool_id(tool, "tilegate-identity")
            except ValueError:  # taken by another tool
                continue
            mon.register_callback(tool, mon.events.PY_START, _on_start)
            _MONITOR.append(tool)
            break
    _SINK.append(sink)
    try:
        if _MONITOR and mon is not None:
            mon.set_events(_MONITOR[0], mon.events.PY_START)
            try:
                yield
            finally:
                mon.set_events(_MONITOR[0], 0)
            return
        previous = sys.getprofile()

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "call" and _is_project(frame.f_code.co_filename):
                sink.append(frame.f_code)

        _COLLECTOR.append(profile)
        sys.setprofile(profile)
        try:
            yield
        finally:
            sys.setprofile(previous)
            _COLLECTOR.pop()
    finally:
        _SINK.pop()


@contextlib.contextmanager
def _device_code() -> Iterator[None]:
    """Pause the host-code collection inside an interpreter launch: its @jit functions run as
    Python, device code the launch's source hash covers. With a profile function (Python <
    3.12, the interpreter's slow tracing path) the launch also runs in a third of the time."""
    mon = getattr(sys, "monitoring", None)
    if _MONITOR and mon is not None and _SINK:
        events = mon.get_events(_MONITOR[0])
        mon.set_events(_MONITOR[0], 0)
        try:
            yield
        finally:
            mon.set_events(_MONITOR[0], events)
        return
    if not _COLLECTOR or sys.getprofile() is not _COLLECTOR[-1]:
        yield
        return
    sys.setprofile(None)
    try:
        yield
    finally:
        sys.setprofile(_COLLECTOR[-1])


_DEFS_CACHE: dict[tuple[str, int, int], dict[tuple[int, str], str]] = {}


def _defs(filename: str) -> dict[tuple[int, str], str]:
    """(first line, name) -> AST dump (no docstrings, no positions) of every def and lambda of a
    file; a decorated def is found at the line of its first decorator (co_firstlineno)."""
    st = Path(filename).stat()
    key = (filename, st.st_mtime_ns, st.st_size)
    if key not in _DEFS_CACHE:
        out: dict[tuple[int, str], str] = {}
        try:
            tree = strip_docstrings(ast.parse(Path(filename).read_text(encoding="utf-8")))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as err:
            tree, out[(0, "")] = ast.Module(body=[], type_ignores=[]), f"unreadable: {err}"
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out[(first, node.name)] = ast.dump(node)
            elif isinstance(node, ast.Lambda):
                k = (node.lineno, "<lambda>")
                out[k] = out.get(k, "") + ast.dump(node)
        _DEFS_CACHE[key] = out
    return _DEFS_CACHE[key]


_SCALARS = (int, float, bool, str, bytes, type(None))


def _scalar(value: Any) -> bool:
    if isinstance(value, _SCALARS):
        return True
    return isinstance(value, (tuple, frozenset)) and all(isinstance(v, _SCALARS) for v in value)


_GLOBALS: dict[str, dict[str, Any]] = {}  # resolved .py file -> its module's globals
_GLOBALS_FROM = 0  # len(sys.modules) when _GLOBALS was last filled


@functools.cache
def _real(filename: str) -> str:
    return str(Path(filename).resolve())


def _module_globals(real: str) -> dict[str, Any]:
    """The globals of the module loaded from `real` ({} for none), sys.modules scanned lazily."""
    global _GLOBALS_FROM
    if real not in _GLOBALS and len(sys.modules) != _GLOBALS_FROM:
        _GLOBALS_FROM = len(sys.modules)
        for module in list(sys.modules.values()):
            f = getattr(module, "__file__", None)
            if f and f.endswith(".py"):
                _GLOBALS[_real(f)] = vars(module)
    return _GLOBALS.get(real, {})


def package_root(owner: Any) -> str | None:
    """The directory of the top-level package `owner` (a function, partial, object or module
    name) comes from, with a trailing separator; None for a top-level module or a builtin."""
    while hasattr(owner, "func"):  # functools.partial
        owner = owner.func
    name = owner if isinstance(owner, str) else getattr(owner, "__module__", None)
    if name is None and hasattr(owner, "__name__") and hasattr(owner, "__path__"):
        name = owner.__name__
    if not isinstance(name, str):
        name = getattr(type(owner), "__module__", None)
    top = sys.modules.get(name.split(".", 1)[0]) if isinstance(name, str) else None
    paths = list(getattr(top, "__path__", None) or [])
    return str(Path(paths[0]).resolve()) + os.sep if paths else None


def source_roots(owners: Any) -> list[str]:
    """The package directories of `owners`, each once: every side's copy of the code under test
    (a hook one copy installed counts for every side alike)."""
    return list(dict.fromkeys(r for o in owners if (r := package_root(o))))


_CO_OPTIMIZED = 0x1  # a function's code (not a module's or a class body's: import-time work)


def host_code_hash(codes: list[Any], roots: list[str] | tuple[str, ...]) -> str:
    """The host code a call ran: per distinct function under `roots` (the code under test), its
    place in its package, its def's AST and the module-level scalars it reads; sorted."""
    parts = set()
    roots = tuple(sorted(roots, key=len, reverse=True))  # the innermost root first
    for code in dict.fromkeys(codes):
        if code.co_name.startswith("<") and code.co_name != "<lambda>":
            continue  # a comprehension or genexpr: part of the def it lies in
        if not code.co_flags & _CO_OPTIMIZED:
            continue  # a module or class body running: an import, not the call's work
        real = _real(code.co_filename)
        root = next((r for r in roots if real.startswith(r)), None)
        if root is None:
            continue
        rel, module_globals = real[len(root) :], _module_globals(real)  # its path in its package
        try:
            body = _defs(real).get((code.co_firstlineno, code.co_name))
        except OSError:
            body = None
        if body is None:  # no source for it: its bytecode and constants
            body = repr((code.co_code, [c for c in code.co_consts if not hasattr(c, "co_code")]))
        names = set(code.co_names)
        stack = [c for c in code.co_consts if hasattr(c, "co_names")]
        while stack:  # names read by its nested comprehensions too
            c = stack.pop()
            names |= set(c.co_names)
            stack += [x for x in c.co_consts if hasattr(x, "co_names")]
        scalars = tuple(
            (n, repr(module_globals[n]))
            for n in sorted(names)
            if n in module_globals and not n.startswith("__") and _scalar(module_globals[n])
        )
        parts.add(
            (rel, code.co_qualname if hasattr(code, "co_qualname") else code.co_name, body, scalars)
        )
    return _sha(*sorted(parts))


def _roots(captured: Captured) -> tuple[str, ...]:
    """The code under test: the owners' packages, else those whose kernels were launched. A
    library both sides share (liger_kernel under a user's wrappers) is left out: it is one code
    object on both sides, and what it runs first in a process (a cache filled) is no change."""
    got: list[str | None] = [*captured.roots] or [package_root(p) for p in captured.packages]
    return tuple(dict.fromkeys(r for r in got if r))


def identity(captured: Captured) -> Identity:
    """The identity of a captured call (the torch reference's by torch's version too)."""
    import torch
    import triton

    # the compiler is part of the code: one TTIR lowers to other machine code under another
    # Triton (an upgrade's two sides, tilegate upgrade-ab)
    triton_part = _sha(
        triton.__version__, *((la.code, la.grid, la.meta) for la in captured.launches)
    )
    parts = (
        ("triton", triton_part[:16] if captured.launches else _sha()[:16]),
        ("torch_ops", _sha(*captured.ops)[:16]),
        ("gpu_activity", _sha(*captured.kernels)[:16]),
        ("host_code", host_code_hash(captured.code, _roots(captured))[:16]),
    )
    whole = tuple(v for _, v in parts)
    kinds = sorted({launch.kind for launch in captured.launches})
    digest = _sha(whole) if kinds else _sha("reference", torch.__version__, whole)
    hashed, kind = f"{SCHEME}:sha256:{digest}", "+".join(kinds) or "reference"
    if any(k.startswith(UNREADABLE) for k in captured.kernels):
        hashed, kind = "", UNKNOWN
    launches, handles, picks = len(captured.launches), tuple(captured.handles), captured.autotune
    return Identity(hashed, kind, launches, parts, _explained(captured), handles, tuple(picks))


def _explained(captured: Captured) -> dict[str, Any] | None:
    """The call's compact record (None where it cannot be made: recording never fails a case)."""
    try:
        return record.summarize(
            captured.explain, captured.ops, captured.activity, captured.activity_us
        )
    except Exception:
        return None
