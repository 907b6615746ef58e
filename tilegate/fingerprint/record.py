"""What a case's identity records for its explanation (extra_info["tilegate"]["explain"]; its
fields and where they come from: docs/gate.md, "Where the facts come from").

Called from tilegate.harness.identity's capture, per Triton launch and once per captured
call; every function here is best-effort: a field this Triton or torch does not expose is left
out, and an exception is swallowed into an `error` entry (recording must never fail a case).
The TTGIR goes to a side file named by its hash, never into the record. Under the interpreter
the compile facts come from an ahead-of-time compile for `cc`, done only for cases whose code
changed (`SideMeasurer.explain`).
"""

from __future__ import annotations

import functools
import math
import os
import time
import types
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tilegate.fingerprint import facts as kfacts

SCHEMA = 1
DIR_ENV = "TILEGATE_EXPLAIN_DIR"  # where IR side files go (default .perf/explain)
CC_ENV = "TILEGATE_EXPLAIN_CC"  # the capability the interpreter's launches are compiled for
AOT_ENV = "TILEGATE_EXPLAIN_AOT"  # "0": no ahead-of-time compile under the interpreter
DEFAULT_CC = 90

_GPU_FACTS: dict[str, dict[str, Any]] = {}  # CompiledKernel hash -> its facts (once per process)
_AOT_FACTS: dict[str, dict[str, Any]] = {}  # Triton cache key -> AOT facts


def explain_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path(".perf") / "explain")


def _scalar(v: Any) -> bool:
    """A value a results row can hold as it is (JSON without NaN or infinities)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, (int, bool, str)) or v is None


_NOT_CONSTEXPRS = {"debug", "instrumentation_mode", "grid", "warmup", "num_warps", "num_stages"}


def _launch(fn: Any, grid: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """A launch's name, grid and constexprs (its scalar keyword arguments)."""
    return {
        "name": _name(fn),
        "grid": _grid(grid, kwargs),
        "constexprs": {
            k: v for k, v in sorted(kwargs.items()) if k not in _NOT_CONSTEXPRS and _scalar(v)
        },
    }


def _name(fn: Any) -> str:
    inner = getattr(fn, "fn", fn)
    return str(getattr(inner, "__name__", None) or type(fn).__name__)


def _grid(grid: Any, kwargs: dict[str, Any]) -> list[int]:
    try:
        if callable(grid):
            grid = grid(kwargs)
        return [int(g) for g in grid]
    except Exception:
        return []


def save_ir(ttgir: str, digest: str) -> None:
    """The TTGIR beside the results (explain_dir()/ir/<hash>.ttgir), written once."""
    try:
        path = explain_dir() / "ir" / f"{digest}.ttgir"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            tmp.write_text(ttgir, encoding="utf-8")
            tmp.replace(path)
    except OSError:
        pass


def _asm(kernel: Any, key: str) -> str | None:
    try:
        text = kernel.asm[key]
    except Exception:
        return None
    return text if isinstance(text, str) else None


def _cc(meta: Any) -> int | None:
    arch = getattr(getattr(meta, "target", None), "arch", None)
    return arch if isinstance(arch, int) else None


# seconds this process spent recording what explains a case (gpu_launch, compile_launches): the
# measurer reports it, so the explanation's share of a run's wall time is measured, not guessed
SPENT_S = [0.0]


def spent_s() -> float:
    return SPENT_S[0]


def _timed(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT_S[0] += time.perf_counter() - t0

    return wrapper


@_timed
def gpu_launch(fn: Any, kernel: Any, grid: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """One compiled launch on a GPU: name, grid, constexprs and the CompiledKernel's facts."""
    out = _launch(fn, grid, kwargs)
    try:
        # constexprs passed by position: the compiled kernel's source knows them by index
        names = list(getattr(fn, "arg_names", None) or [])
        constants = getattr(getattr(kernel, "src", None), "constants", None) or {}
        for k, v in constants.items():
            i = k[0] if isinstance(k, tuple) and len(k) == 1 else k
            if isinstance(i, int) and 0 <= i < len(names) and _scalar(v):
                out["constexprs"].setdefault(names[i], v)
        out["constexprs"] = dict(sorted(out["constexprs"].items()))
        out["src"] = str(getattr(fn, "cache_key", ""))[:16]
        digest = str(getattr(kernel, "hash", "") or "")
        got = _GPU_FACTS.get(digest) if digest else None
        if got is None:
            ttgir = _asm(kernel, "ttgir")
            got = kfacts.kernel_facts(
                kernel.metadata,
                ttgir,
                _asm(kernel, "ptx"),
                registers=getattr(kernel, "n_regs", None),
                spills=getattr(kernel, "n_spills", None),
                cc=_cc(kernel.metadata),
            )
            if ttgir and "ir" in got:
                save_ir(ttgir, got["ir"])
            if digest:
                _GPU_FACTS[digest] = got
        out.update(got)
    except Exception as err:  # another Triton: the launch without its compile facts
        out["error"] = f"{type(err).__name__}: {err}"[:200]
    return out


class _Stand:
    """A stand-in for a tensor argument, as the JIT's binder reads it (dtype, alignment)."""

    def __init__(self, dtype: Any, shape: list[int], strides: list[int], ptr: int) -> None:
        self.dtype, self.shape, self._strides, self._ptr = dtype, shape, strides, ptr

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self, dim: int | None = None) -> Any:
        return tuple(self._strides) if dim is None else self._strides[dim]

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim: int | None = None) -> Any:
        return tuple(self.shape) if dim is None else self.shape[dim]

    def numel(self) -> int:
        return math.prod(self.shape)

    def element_size(self) -> int:
        return int(getattr(self.dtype, "itemsize", 0) or 0)


def _stand_in(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        ptr = 0 if x.data_ptr() % 16 == 0 else 8
        return _Stand(x.dtype, list(x.shape), list(x.stride()), ptr)
    base = getattr(x, "base", None)
    if isinstance(base, torch.Tensor) and hasattr(x, "block_shape"):  # a TensorDescriptor
        import copy

        desc = copy.copy(x)
        desc.base = _stand_in(base)
        return desc
    return x


@_timed
def interpreted_launch(
    fn: Any, args: tuple[Any, ...], grid: Any, kwargs: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """One interpreter launch: name, grid, constexprs, source hash; and what an AOT compile of
    it needs (the kernel's function, stand-ins for its arguments, its keyword arguments)."""
    out = _launch(fn, grid, kwargs)
    for k in ("num_warps", "num_stages"):
        if isinstance(kwargs.get(k), int):
            out[k] = kwargs[k]
    try:
        handle = (getattr(fn, "fn", fn), [_stand_in(a) for a in args], dict(kwargs))
    except Exception:
        handle = None
    return out, handle


@_timed
def gpu_activity(events: Iterable[Any]) -> tuple[list[dict[str, Any]], float]:
    """Per GPU activity name (profiler events): count, grid, summed microseconds; the total."""
    rows: dict[str, dict[str, Any]] = {}
    total = 0.0
    for e in events:
        name = str(e.name())
        try:
            us = float(e.duration_ns()) / 1000.0
        except Exception:
            us = None
        row = rows.setdefault(name, {"name": name, "count": 0})
        row["count"] += 1
        if us is not None:
            row["us"] = round(row.get("us", 0.0) + us, 2)
            total += us
    return list(rows.values()), round(total, 2)


def op_name(op: str) -> str:
    """The op's name from identity's record of it: "('aten.mm.default', (...))"."""
    parts = op.split("'")
    return parts[1] if len(parts) > 2 else op[:60]


@_timed
def summarize(
    launches: list[dict[str, Any]], ops: list[str], gpu: list[dict[str, Any]], gpu_us: float | None
) -> dict[str, Any]:
    """The compact record of one captured call (module docstring)."""
    merged: list[dict[str, Any]] = []
    for la in launches:
        if merged and {k: v for k, v in merged[-1].items() if k != "count"} == la:
            merged[-1]["count"] += 1
        else:
            merged.append({**la, "count": 1})
    out: dict[str, Any] = {"v": SCHEMA, "triton": merged}
    out["ops"] = dict(sorted(Counter(op_name(o) for o in ops).items()))
    if gpu:
        out["gpu"] = gpu
        if gpu_us is not None:
            out["gpu_us"] = gpu_us
    return out


# --- ahead-of-time compile of interpreter launches ----------------------------------------------


def _compilable(pyfn: Any, memo: dict[int, Any] | None = None) -> Any:
    """A JITFunction of `pyfn` whose @jit callees are JITFunctions too: under TRITON_INTERPRET=1
    at import they are InterpretedFunctions, which Triton's code generator cannot call."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    memo = {} if memo is None else memo
    if id(pyfn) in memo:
        return memo[id(pyfn)]
    g = pyfn.__globals__
    names = set(pyfn.__code__.co_names)
    swap = {n: g[n] for n in names if n in g and isinstance(g[n], InterpretedFunction)}
    fn = pyfn
    if swap:
        new_g = dict(g)
        fn = types.FunctionType(
            pyfn.__code__, new_g, pyfn.__name__, pyfn.__defaults__, pyfn.__closure__
        )
        fn.__module__, fn.__qualname__ = pyfn.__module__, pyfn.__qualname__
        fn.__kwdefaults__ = pyfn.__kwdefaults__
        for n, callee in swap.items():
            new_g[n] = _compilable(callee.fn, memo)
    jit = JITFunction(fn)
    memo[id(pyfn)] = jit
    return jit


def aot_facts(handle: Any, cc: int) -> dict[str, Any]:
    """Compile one recorded interpreter launch for capability `cc` (no GPU), as the JIT would
    (tilegate.fingerprint.compile does the same for the registry's plans), and read its facts.
    Also returns the TTGIR under "_ttgir" (not stored in results)."""
    import triton

    from tilegate.fingerprint import extract
    from tilegate.fingerprint.compile import _triton_internals, bind, ptxas_scope

    pyfn, stand_ins, kwargs = handle
    kw = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
    src, options, key, _ = bind(_compilable(pyfn), stand_ins, kw, cc)
    key += f"|{cc}"
    if key in _AOT_FACTS:
        return _AOT_FACTS[key]
    with ptxas_scope("tilegate-explain-") as log:
        target = _triton_internals().GPUTarget("cuda", cc, 32)
        kernel = triton.compile(src, target=target, options=options.__dict__)
        ttgir, ptx = kernel.asm.get("ttgir"), kernel.asm.get("ptx")
    try:
        ptxas = extract.ptxas_facts(log.getvalue())
    except ValueError:
        ptxas = {}
    spills = int(ptxas["spill_stores"]) + int(ptxas["spill_loads"]) if ptxas else None
    got = kfacts.kernel_facts(
        kernel.metadata,
        ttgir if isinstance(ttgir, str) else None,
        ptx if isinstance(ptx, str) else None,
        registers=ptxas.get("registers"),
        spills=spills,
        cc=cc,
    )
    got["aot"] = f"sm_{cc}"
    if isinstance(ttgir, str) and "ir" in got:
        save_ir(ttgir, got["ir"])
    _AOT_FACTS[key] = got
    return got


@_timed
def compile_launches(record: dict[str, Any] | None, handles: list[Any]) -> None:
    """Fill the interpreter launches of `record` with their AOT compile facts (in place);
    a launch that does not compile gets `error` instead."""
    if not record or os.environ.get(AOT_ENV) == "0":
        return
    try:
        cc = int(os.environ.get(CC_ENV) or DEFAULT_CC)
    except ValueError:
        cc = DEFAULT_CC
    i = 0
    for entry in record.get("triton", []):
        handle = handles[i] if i < len(handles) else None
        i += int(entry.get("count", 1))
        if handle is None or "ir" in entry or "error" in entry:
            continue
        try:
            entry.update(aot_facts(handle, cc))
        except Exception as err:
            entry["error"] = f"AOT compile for sm_{cc}: {type(err).__name__}: {err}"[:240]
