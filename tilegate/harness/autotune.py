"""Autotuned kernels: what an autotuner picked for a call, its config space, one config under
the interpreter, a pinned config for a re-time, and a side's own caches.

An autotuner (Triton's, fla's `CachedAutotuner`, FlagGems' `LibTuner`) keeps the fastest of
its configs at a key's first call; two processes can pick differently for the same source, so
the pick is recorded beside the identity, never in it. Under the CPU interpreter a tuner runs
its first config, or INTERPRET_ENV's. What the judge makes of the picks: docs/measuring.md.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import inspect
import json
import os
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilegate.judge.autotune import CONFIG_FIELDS

# the interpreter's config of a tuned kernel: "index" or "kernel=index,..."
INTERPRET_ENV = "TILEGATE_AUTOTUNE_CONFIG"


class AutotuneFailed(RuntimeError):
    """Every config of an autotuner failed to compile or run (the case fails, naming it)."""


# --- configs as data ---------------------------------------------------------------------------


def plain(v: Any) -> Any:
    """A launch argument as data: a number or string as it is; a tensor by its layout, never its
    values (fla passes tensors by keyword: what they hold differs from call to call, a
    backward's atomics, and costs a copy to the host to print)."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(v, type):
        stride = getattr(v, "stride", None)
        strides = tuple(stride()) if callable(stride) else None
        return repr(("tensor", tuple(shape), str(dtype), strides))
    return repr(v)


def config_json(cfg: Any) -> dict[str, Any]:
    """A triton.Config as results data: its kwargs and launch options."""
    kwargs = {str(k): plain(v) for k, v in (getattr(cfg, "kwargs", None) or {}).items()}
    return {"kwargs": kwargs, **{k: plain(getattr(cfg, k, None)) for k in CONFIG_FIELDS}}


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# --- the tuner, its kernel, its key --------------------------------------------------------------


def _unwrapped(obj: Any) -> Any:
    """The Python function under a JITFunction / tuner (`.fn` chains), or where the chain ends."""
    while obj is not None and not inspect.isfunction(obj) and hasattr(obj, "fn"):
        obj = obj.fn
    return obj


def kernel_name(tuner: Any) -> str:
    """The tuned kernel's name (its Python function's), the same on both sides of an A/B."""
    fn = _unwrapped(getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None))
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "?")


def space(tuner: Any) -> list[dict[str, Any]]:
    """The tuner's declared configs (before any narrowing by tilegate), as data."""
    configs = getattr(tuner, "_tilegate_space", None) or getattr(tuner, "configs", None) or []
    return [config_json(c) for c in configs]


def space_digest(tuner: Any) -> str:
    return _sha(json.dumps(space(tuner), sort_keys=True))


def key_of(tuner: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The values of the tuner's key arguments and the arguments' dtypes (Triton's key)."""
    names = list(getattr(tuner, "arg_names", None) or [])
    given = {**dict(zip(names, args, strict=False)), **kwargs}
    out: dict[str, Any] = {
        k: plain(given[k]) for k in getattr(tuner, "keys", None) or [] if k in given
    }
    dtypes = [str(v.dtype) for k, v in given.items() if k in names and hasattr(v, "dtype")]
    if dtypes:
        out["dtypes"] = dtypes
    return out


def strip_docstrings(tree: ast.AST, *, decorators: bool = False) -> ast.AST:
    """`tree` without its docstrings (and, with `decorators`, its functions' decorators)."""
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
        if decorators and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.decorator_list = []
    return tree


def _pyfn(obj: Any) -> Any:
    obj = _unwrapped(obj)
    return obj if inspect.isfunction(obj) else None


def source_digest(fn: Any, _seen: set[int] | None = None) -> str:
    """A kernel's source as its AST (no docstrings, positions or decorators) with that of every
    `@jit` function it calls by a global name and the scalar globals it reads: what the compiler
    is given, wherever the file lies."""
    seen = _seen if _seen is not None else set()
    py = _pyfn(fn)
    if py is None or id(py) in seen:
        return ""
    seen.add(id(py))
    try:
        # the tuner's configs enter as the space, not as the decorator's text
        tree = strip_docstrings(ast.parse(textwrap.dedent(inspect.getsource(py))), decorators=True)
    except (OSError, TypeError, SyntaxError):
        return _sha(getattr(py, "__code__", None) and py.__code__.co_code)
    glb = getattr(py, "__globals__", {})
    deps: list[Any] = []
    for node in ast.walk(tree):
        value: Any = None
        name = ""
        if isinstance(node, ast.Name) and node.id in glb:
            name, value = node.id, glb[node.id]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            mod = glb.get(node.value.id)
            if inspect.ismodule(mod) and not mod.__name__.startswith(("triton", "torch")):
                name, value = f"{node.value.id}.{node.attr}", getattr(mod, node.attr, None)
        if not name:
            continue
        if hasattr(value, "fn") and _pyfn(value) is not None:  # a @jit callee
            deps.append((name, source_digest(value, seen)))
        elif isinstance(value, (bool, int, float, str)):
            deps.append((name, repr(value)))
        elif type(value).__name__ == "constexpr":
            deps.append((name, repr(getattr(value, "value", value))))
    return _sha(ast.dump(tree), sorted(set(deps)))


# --- watching the tuners of a call ---------------------------------------------------------------


@dataclass
class Active:
    """A tuner whose `run` is on the stack: the launches below it are its kernel's."""

    tuner: Any
    identity: str  # source + config space + the caller's constexprs and dtypes


@dataclass
class Watch:
    picks: list[dict[str, Any]] = field(default_factory=list)
    stack: list[Active] = field(default_factory=list)
    benchmarking: int = 0  # > 0: a tuner is timing its configs (launches are not the call's)

    def current(self) -> Active | None:
        return self.stack[-1] if self.stack else None


_WATCHES: list[Watch] = []  # the innermost records
_PINS: list[dict[tuple[str, str], dict[str, Any]]] = []  # (kernel, key json) -> config
_PATCHED: list[tuple[type, str, Any]] = []
_DEPTH = [0]


def _classes() -> list[type]:
    from triton.runtime.autotuner import Autotuner

    out, todo = [], [Autotuner]
    while todo:
        cls = todo.pop()
        if cls not in out:
            out.append(cls)
            todo += cls.__subclasses__()
    return out


def _interpreter_choice(tuner: Any) -> tuple[int, str]:
    """Which config the interpreter runs: INTERPRET_ENV's for this kernel, else the first."""
    name = kernel_name(tuner)
    for item in filter(None, (os.environ.get(INTERPRET_ENV) or "").split(",")):
        kernel, _, index = item.rpartition("=")
        if kernel in ("", name) and index.strip().isdigit():
            i = int(index)
            if i < len(tuner._tilegate_space):
                return i, f"interpreter: config {i} ({INTERPRET_ENV})"
    return 0, "interpreter: its first config, not tuned"


def _narrow_for_interpreter(tuner: Any) -> None:
    """Under the interpreter a tuner keeps one config for good; its space is kept aside."""
    if getattr(tuner, "_tilegate_space", None) is None:
        tuner._tilegate_space = list(tuner.configs)
    if len(tuner._tilegate_space) > 1 and getattr(tuner, "_tilegate_how", None) is None:
        i, how = _interpreter_choice(tuner)
        tuner.configs = [tuner._tilegate_space[i]]
        tuner._tilegate_how = how


def _pinned_config(tuner: Any, key: dict[str, Any]) -> Any:
    if not _PINS:
        return None
    name, key_json = kernel_name(tuner), json.dumps(key, sort_keys=True)
    want = _PINS[-1].get((name, key_json)) or _PINS[-1].get((name, ""))
    if want is None:
        return None
    configs = getattr(tuner, "_tilegate_space", None) or tuner.configs
    for cfg in configs:
        if config_json(cfg) == {**config_json(cfg), **want}:
            return cfg
    from triton import Config

    return Config(
        dict(want.get("kwargs") or {}), **{k: want[k] for k in CONFIG_FIELDS if k in want}
    )


def _caller_identity(tuner: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    constexprs = sorted((k, plain(v)) for k, v in kwargs.items() if k not in ("grid", "warmup"))
    dtypes = key_of(tuner, args, {}).get("dtypes", [])
    fixed = getattr(tuner, "_tilegate_digests", None)
    if fixed is None:  # the kernel's source and the declared space do not change in a process
        fixed = tuner._tilegate_digests = (source_digest(tuner), space_digest(tuner))
    return _sha("autotuned", *fixed, constexprs, dtypes)


def _wrap_run(orig: Any) -> Any:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        watch = _WATCHES[-1] if _WATCHES else None
        if watch is not None and watch.stack and watch.stack[-1].tuner is self:
            return orig(self, *args, **kwargs)  # a subclass's run calling its base's
        if watch is not None and watch.benchmarking:
            return orig(self, *args, **kwargs)
        if os.environ.get("TRITON_INTERPRET") == "1":
            _narrow_for_interpreter(self)
        if getattr(self, "_tilegate_space", None) is None:
            self._tilegate_space = list(self.configs)
        key = key_of(self, args, kwargs)
        pin = _pinned_config(self, key)
        kept = self.configs
        if pin is not None:
            self.configs = [pin]
        if watch is not None:
            watch.stack.append(Active(self, _caller_identity(self, args, kwargs)))
        before = len(getattr(self, "cache", None) or {})
        try:
            ret = orig(self, *args, **kwargs)
        except Exception as err:
            timings = getattr(self, "configs_timings", None) or {}
            failed = timings and all(
                not all(t < float("inf") for t in (v if isinstance(v, list) else [v]))
                for v in timings.values()
            )
            if failed:
                raise AutotuneFailed(
                    f"autotuned kernel {kernel_name(self)}: every one of its {len(timings)} "
                    f"configs failed to compile or run; the error of the one it ran: "
                    f"{type(err).__name__}: {err}"
                ) from err
            raise
        finally:
            if pin is not None:
                self.configs = kept
            if watch is not None:
                watch.stack.pop()
            tuned = len(getattr(self, "cache", None) or {}) > before
        if watch is not None and len(self._tilegate_space) > 1:
            how = (
                "pinned"
                if pin is not None
                else getattr(self, "_tilegate_how", None) or ("tuned" if tuned else "autotuned")
            )
            pick = {
                "kernel": kernel_name(self),
                "key": key,
                "config": config_json(getattr(self, "best_config", None) or self.configs[0]),
                "configs": len(self._tilegate_space),
                "space": space_digest(self),
                "how": how,
            }
            if pick not in watch.picks:
                watch.picks.append(pick)
        return ret

    return run


def _wrap_bench(orig: Any) -> Any:
    def bench(self: Any, *args: Any, **kwargs: Any) -> Any:
        watch = _WATCHES[-1] if _WATCHES else None
        if watch is None:
            return orig(self, *args, **kwargs)
        watch.benchmarking += 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            watch.benchmarking -= 1

    return bench


@contextlib.contextmanager
def _patched() -> Iterator[None]:
    """Every Autotuner class's own `run` and `_bench` wrapped (nested blocks patch once)."""
    if _DEPTH[0] == 0:
        try:
            classes = _classes()
        except ImportError:
            classes = []
        for cls in classes:
            for name, wrap in (("run", _wrap_run), ("_bench", _wrap_bench)):
                if name in vars(cls):
                    _PATCHED.append((cls, name, vars(cls)[name]))
                    setattr(cls, name, wrap(vars(cls)[name]))
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            while _PATCHED:
                cls, name, orig = _PATCHED.pop()
                setattr(cls, name, orig)


@contextlib.contextmanager
def watching() -> Iterator[Watch]:
    """Record the picks of the tuners that run inside the block (module docstring)."""
    watch = Watch()
    with _patched():
        _WATCHES.append(watch)
        try:
            yield watch
        finally:
            _WATCHES.remove(watch)


@contextlib.contextmanager
def pinned(picks: Sequence[Mapping[str, Any]]) -> Iterator[None]:
    """Inside the block, each tuner named in `picks` (as `Watch.picks` holds them) runs the
    picked config for its key (any key where the pick names none); its own picks are kept."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for p in picks:
        key = json.dumps(p["key"], sort_keys=True) if p.get("key") is not None else ""
        table[(str(p["kernel"]), key)] = dict(p["config"])
    with _patched():
        _PINS.append(table)
        try:
            yield
        finally:
            _PINS.remove(table)


# --- a side's own caches -------------------------------------------------------------------------

# variables a side's process must not inherit: they point a package at a shared config store
SIDE_UNSET = ("FLA_CONFIG_DIR", "FLAGGEMS_DB_URL")


def side_cache_env(root: Path) -> dict[str, str]:
    """The environment of a side's process whose caches live under `root`: Triton's cache (its
    autotune timings too, with TRITON_CACHE_AUTOTUNING), FlagGems' (its tuning database unless
    FLAGGEMS_DB_URL names one), a Triton home. fla reads its configs from its own package (the
    side's tree) unless FLA_CONFIG_DIR is set: a worker drops every SIDE_UNSET variable."""
    root = Path(root).resolve()
    return {
        "TRITON_CACHE_DIR": str(root / "triton"),
        "TRITON_HOME": str(root / "triton-home"),
        "FLAGGEMS_CACHE_DIR": str(root / "flaggems"),
    }
