"""Compile a `KernelLaunch` ahead of time for sm_90 / sm_120, exactly as the JIT would, with no GPU:
Triton's own binder and `_pack_args` on stand-ins, then `triton.compile`, the ptxas report
captured through `dump_ptxas_log`; cached under `.perf/fingerprint-cache/` by Triton's compile
cache key plus this package's extractor source (docs/fingerprint.md: "The JIT's specialization
by the JIT's code", "Cache").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tilegate import warnlog
from tilegate.errors import InputError
from tilegate.fileio import atomic_write_json, atomic_write_text
from tilegate.store.fingerprints import FACT_KEYS
from tilegate.warnlog import Warned

from . import extract

DEFAULT_CACHE_DIR = Path(".perf") / "fingerprint-cache"
CACHE_SCHEMA = "tilegate.fingerprint-cache/2"

# Triton's short dtype names (TensorArg.dtype) -> torch dtype attribute names.
_TORCH_DTYPES = {
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "i8": "int8",
    "i32": "int32",
}


@dataclass(frozen=True)
class Target:
    """One architecture the fingerprint compiles for, and the GPU its plans are made for."""

    arch: str  # "sm_90"
    capability: tuple[int, int]  # (9, 0): what `plan` is told
    num_sms: int  # SMs of the reference GPU (plans size persistent grids by it)
    gpu: str  # the reference GPU, for the report

    @property
    def cc(self) -> int:
        """Triton's integer capability (90, 120): the `cuda:<cc>` target."""
        return self.capability[0] * 10 + self.capability[1]

    @property
    def short(self) -> str:
        """ "sm90": the suffix of kernel ids."""
        return self.arch.replace("_", "")


@dataclass(frozen=True)
class Specialization:
    """What the JIT would hand `triton.compile` for one launch on one target."""

    signature: dict[str, Any]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], Any]
    options: dict[str, Any]
    key: str  # our cache key (hex): Triton's key + extractor source + target
    triton_key: str = ""  # Triton's own compile cache key (its sha256 is CompiledKernel.hash)
    declared: frozenset[str] = frozenset()  # parameters declared tl.constexpr in the kernel
    warned: tuple[Warned, ...] = ()  # what Triton/torch warned while specializing

    def signature_text(self) -> str:
        """A one-line signature, e.g. "*fp16:16, *fp16:16, i32:16, 1, ...", for the report."""
        parts = []
        for i, (name, ty) in enumerate(self.signature.items()):
            if ty == "constexpr":  # shown where it is a runtime int the JIT folded
                if name not in self.declared and (i,) in self.constexprs:
                    parts.append(f"{name}={self.constexprs[(i,)]}")
                continue
            div = any(a[0] == "tt.divisibility" for a in self.attrs.get((i,), []))
            parts.append(f"{name}:{ty}{':16' if div else ''}")
        return ", ".join(parts)


def triton_version() -> str:
    import triton

    return str(triton.__version__)


def _triton_internals() -> Any:
    """The parts of Triton's JIT and compiler this module calls, by name; a clear InputError on a
    Triton without them."""
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import ASTSource, make_backend
        from triton.runtime.cache import get_cache_key
        from triton.runtime.jit import JITFunction, MockTensor, create_function_from_signature
    except ImportError as err:  # pragma: no cover - depends on the installed Triton
        raise InputError(
            f"Triton {triton_version()} lacks the JIT internals the fingerprint uses ({err}); "
            f"adapt tilegate/fingerprint/compile.py to this Triton"
        ) from err
    return SimpleNamespace(
        GPUTarget=GPUTarget,
        ASTSource=ASTSource,
        make_backend=make_backend,
        get_cache_key=get_cache_key,
        JITFunction=JITFunction,
        MockTensor=MockTensor,
        create_function_from_signature=create_function_from_signature,
    )


@functools.lru_cache(maxsize=1)
def _extractor_hash() -> str:
    """Hash of the fact extractor's source: changing how facts are read invalidates the cache."""
    h = hashlib.sha256()
    for name in ("extract.py", "compile.py"):
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


def _stand_ins(launch: Any) -> list[Any]:
    """Objects the JIT's binder treats exactly like the real arguments of `launch.args`."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from tilegate.launch import DescArg, ScalarArg, TensorArg

    mock_tensor = _triton_internals().MockTensor
    out: list[Any] = []
    for arg in launch.args:
        if isinstance(arg, (TensorArg, DescArg)):
            if arg.dtype not in _TORCH_DTYPES:
                raise InputError(f"argument {arg.name}: unknown dtype {arg.dtype!r}")
            base = mock_tensor(getattr(torch, _TORCH_DTYPES[arg.dtype]), list(arg.shape))
            if isinstance(arg, DescArg):
                out.append(
                    TensorDescriptor(
                        base, list(arg.shape), list(arg.strides), list(arg.block_shape)
                    )
                )
            else:
                out.append(base)
        elif isinstance(arg, ScalarArg):
            out.append(int(arg.value))
        else:
            raise InputError(f"unknown launch argument {arg!r}")
    return out


def bind(fn: Any, args: Sequence[Any], kwargs: dict[str, Any], cc: int) -> tuple[Any, ...]:
    """What `JITFunction.run` hands `triton.compile` for `fn(*args, **kwargs)` on capability `cc`,
    by Triton's own binder and `_pack_args`: (its ASTSource, the options, Triton's compile cache
    key, (signature, constexprs, attrs))."""
    tri = _triton_internals()
    from triton import knobs
    from triton._C.libtriton import get_cache_invalidating_env_vars

    backend = tri.make_backend(tri.GPUTarget("cuda", cc, 32))
    binder = tri.create_function_from_signature(fn.signature, fn.params, backend)
    # as JITFunction.run does before binding
    kwargs = {**kwargs, "debug": kwargs.get("debug", fn.debug) or knobs.runtime.debug}
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    bound, spec, opts = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, spec, opts)
    src = tri.ASTSource(fn, signature, constexprs, attrs)
    key = tri.get_cache_key(src, backend, options, get_cache_invalidating_env_vars())
    return src, options, key, (signature, constexprs, attrs)


def specialize(launch: Any, target: Target) -> Specialization:
    """The signature, constexprs, attributes and options the JIT would compile `launch` with."""
    fn = launch.fn
    if not isinstance(fn, _triton_internals().JITFunction):
        raise InputError(
            f"{fn!r} is not a JITFunction (TRITON_INTERPRET=1 at import?): the fingerprint compiles "
            f"for the GPU; run it without TRITON_INTERPRET"
        )
    kwargs = {**launch.constexprs, "num_warps": launch.num_warps, "num_stages": launch.num_stages}
    # Triton 3.9 warns here (its options parser: TRITON_DEFAULT_FP_FUSION unset): record, go on
    with warnlog.recording() as warned:
        _, options, triton_key, parts = bind(fn, _stand_ins(launch), kwargs, target.cc)
    key = hashlib.sha256(f"{triton_key}|{_extractor_hash()}|{target}".encode()).hexdigest()
    declared = frozenset(p.name for p in fn.params if p.is_constexpr)
    sig, constexprs, attrs, opts = (dict(x) for x in (*parts, options.__dict__))
    return Specialization(sig, constexprs, attrs, opts, key, triton_key, declared, tuple(warned))


@contextlib.contextmanager
def ptxas_scope(prefix: str) -> Iterator[io.StringIO]:
    """A compile that always runs ptxas and logs its report, in a scratch Triton cache (keeps
    ~/.triton clean; our own cache is the one that counts). Yields the captured stdout, where
    Triton prints the ptxas log; Triton's knobs are restored on exit."""
    from triton import knobs

    log = io.StringIO()
    with (
        tempfile.TemporaryDirectory(prefix=prefix) as tmp,
        knobs.cache.scope(),
        knobs.compilation.scope(),
        knobs.nvidia.scope(),
        contextlib.redirect_stdout(log),
    ):
        knobs.cache.dir = tmp
        knobs.compilation.always_compile = True  # so ptxas runs and reports every time
        knobs.nvidia.dump_ptxas_log = True
        yield log


def _compile(
    launch: Any, target: Target, spec: Specialization
) -> tuple[str, str, dict[str, Any], list[Warned]]:
    """Run Triton's compiler; return (TTGIR, ptxas report, metadata facts, its warnings)."""
    import triton

    tri = _triton_internals()
    src = tri.ASTSource(launch.fn, spec.signature, spec.constexprs, spec.attrs)
    with ptxas_scope("tilegate-triton-") as log, warnlog.recording() as warned:
        kernel = triton.compile(
            src, target=tri.GPUTarget("cuda", target.cc, 32), options=spec.options
        )
        ttgir = kernel.asm["ttgir"]
        shared = int(kernel.metadata.shared)
    return ttgir, log.getvalue(), {"shared_bytes": shared}, warned


def facts_for(ttgir: str, ptxas_log: str, meta: dict[str, Any]) -> dict[str, Any]:
    """All fingerprint facts of one compiled kernel, flat (one key per reviewable fact)."""
    t = extract.ttgir_facts(ttgir)
    facts = {**t, **{f"{op}_{k}": v for op, o in t["operands"].items() for k, v in o.items()}}
    facts.update(shared_bytes=meta["shared_bytes"], **extract.ptxas_facts(ptxas_log))
    return {k: facts[k] for k in FACT_KEYS}


@dataclass(frozen=True)
class KernelResult:
    """What compiling one kernel gave: its facts and what Triton warned while compiling it."""

    facts: dict[str, Any]
    compile_warned: tuple[Warned, ...] = ()  # from triton.compile (kept in the cache entry)


def _read_cache(cache_dir: Path | None, key: str) -> KernelResult | None:
    """A cached result, or None (a missing or damaged cache entry is simply recompiled)."""
    if cache_dir is None:
        return None
    try:
        data = json.loads((cache_dir / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != CACHE_SCHEMA or data.get("key") != key:
        return None
    facts, warned = data.get("facts"), data.get("warnings")
    if not isinstance(facts, dict) or not isinstance(warned, list):
        return None
    parsed = [Warned.from_json(w) for w in warned]
    if any(w is None for w in parsed):
        return None
    return KernelResult(facts, tuple(w for w in parsed if w is not None))


def compile_one(
    launch: Any, target: Target, cache_dir: Path | None, spec: Specialization | None = None
) -> KernelResult:
    """Facts of `launch` on `target` (from the cache when they are there)."""
    spec = spec or specialize(launch, target)
    cached = _read_cache(cache_dir, spec.key)
    if cached is not None:
        return cached
    ttgir, log, meta, warned = _compile(launch, target, spec)
    try:
        facts = facts_for(ttgir, log, meta)
    except ValueError as err:
        raise InputError(
            f"cannot read the compiled kernel {launch.fn!r} for {target.arch}: {err}"
        ) from err
    if cache_dir is not None:
        atomic_write_text(cache_dir / f"{spec.key}.ttgir", ttgir)
        atomic_write_text(cache_dir / f"{spec.key}.ptxas.log", log)
        atomic_write_json(
            cache_dir / f"{spec.key}.json",
            {
                "schema": CACHE_SCHEMA,
                "key": spec.key,
                "facts": facts,
                "warnings": [w.to_json() for w in warned],
            },
        )
    return KernelResult(facts, tuple(warned))


# --- compiling many kernels, possibly in worker processes ------------------------------------

# A spawned worker pays ~2.5 s to import torch, Triton and the kernels; one compile takes ~0.5 s.
# Below this many cache misses, compiling in this process is faster.
POOL_MIN_COMPILES = 12


@dataclass(frozen=True)
class Job:
    """A picklable description of one compile: where the kernel lives and the launch's data."""

    fn_module: str
    fn_name: str
    args: tuple[Any, ...]
    constexprs: tuple[tuple[str, Any], ...]
    num_warps: int
    num_stages: int
    target: Target

    @staticmethod
    def of(launch: Any, target: Target) -> Job:
        fn = launch.fn
        return Job(
            fn.fn.__module__,
            fn.fn.__qualname__,
            tuple(launch.args),
            tuple(sorted(launch.constexprs.items())),
            launch.num_warps,
            launch.num_stages,
            target,
        )

    def launch(self) -> Any:
        from tilegate.launch import KernelLaunch

        fn = importlib.import_module(self.fn_module)
        for part in self.fn_name.split("."):
            fn = getattr(fn, part)
        return KernelLaunch(
            fn=fn,
            grid=(1,),
            args=self.args,
            constexprs=dict(self.constexprs),
            num_warps=self.num_warps,
            num_stages=self.num_stages,
        )


def _run_job(job: Job, cache_dir: str | None) -> KernelResult:
    return compile_one(job.launch(), job.target, Path(cache_dir) if cache_dir else None)


def compile_many(
    work: Sequence[tuple[Any, Target, Specialization]],
    cache_dir: Path | None,
    jobs: int,
    labels: Sequence[str],
) -> tuple[list[KernelResult], int]:
    """Results for every (launch, target, specialization), and the number compiled.

    Cache hits are answered here; misses are compiled in this process (jobs = 1, or fewer than
    POOL_MIN_COMPILES of them) or in a pool of `jobs` fresh ("spawn") processes, each
    re-importing the kernel by module and name.
    """
    results: list[KernelResult | None] = [_read_cache(cache_dir, spec.key) for _, _, spec in work]
    misses = [i for i, r in enumerate(results) if r is None]
    # one compile per distinct key, even if two ids share it
    first_of: dict[str, int] = {}
    for i in misses:
        first_of.setdefault(work[i][2].key, i)
    todo = list(first_of.values())
    done: dict[int, KernelResult] = {}

    def failed(i: int, err: Exception) -> InputError:
        return InputError(f"{labels[i]} does not compile: {type(err).__name__}: {err}")

    with contextlib.ExitStack() as stack:
        calls: dict[int, Callable[[], KernelResult]] = {
            i: functools.partial(compile_one, work[i][0], work[i][1], cache_dir, work[i][2])
            for i in todo
        }
        if jobs > 1 and len(todo) >= POOL_MIN_COMPILES:
            import multiprocessing

            # spawn, not fork: forking a process that has imported torch and Triton (threads) can hang
            ctx = multiprocessing.get_context("spawn")
            pool = stack.enter_context(
                ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx)
            )
            where = str(cache_dir) if cache_dir else None
            calls = {i: pool.submit(_run_job, Job.of(*work[i][:2]), where).result for i in todo}
        for i, call in calls.items():
            try:
                done[i] = call()
            except InputError:
                raise
            except Exception as err:
                raise failed(i, err) from err
    by_key = {work[i][2].key: result for i, result in done.items()}
    out = [r if r is not None else by_key[work[i][2].key] for i, r in enumerate(results)]
    return out, len(todo)


def default_jobs() -> int:
    """Worker processes for cold compiles: the machine's cores, at most 2 (the CI budget's machine)."""
    return max(1, min(2, os.cpu_count() or 1))
