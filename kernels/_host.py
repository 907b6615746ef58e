"""Host code every Triton variant shares: operand checks, layouts, SM counts, binding and launching a plan.

The `@jit` device helpers are in `kernels._device`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from ._device import interpreting, launchable
from .configs import INTERPRETER_NUM_SMS
from .launch import DescArg, KernelLaunch, ScalarArg, TensorArg

# The dtypes every variant supports, by the short name that case ids and launch arguments use.
DTYPES: dict[str, torch.dtype] = {"fp16": torch.float16, "bf16": torch.bfloat16}
_NAMES: dict[torch.dtype, str] = {dt: name for name, dt in DTYPES.items()}
LAYOUTS = ("nn", "nt")
TMA_MIN_CAPABILITY = (9, 0)
TMA_ALIGN_BYTES = 16  # TMA needs 16-byte aligned base pointers and leading strides
_INT32_LIMIT = 2**31  # pointer kernels index with int32 offsets

# A plan function: plan(M, N, K, *, dtype, layout, capability, num_sms) -> KernelLaunch.
PlanFn = Callable[..., KernelLaunch]


# ---------------------------------------------------------------------------------------------
# Host side: names, layouts, checks.


def dtype_name(dtype: torch.dtype | str) -> str:
    """Triton's short name ("fp16", "bf16") of a supported torch dtype or short name."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    if dtype in _NAMES:
        return _NAMES[dtype]
    raise TypeError(f"unsupported dtype {dtype}: use torch.float16 or torch.bfloat16")


def layout_of(b: torch.Tensor) -> str:
    """Layout of b (K x N): "nn" when N-contiguous, "nt" when K-contiguous (b = bt.T).

    Reads strides only; nothing is copied. A dimension of size 1 has no meaningful stride, so it never decides: "nn" wins whenever
    b.stride(1) == 1 or N == 1, then "nt" when b.stride(0) == 1 or K == 1.
    """
    if b.dim() != 2:
        raise ValueError(f"b must be 2-D (K x N), got shape {tuple(b.shape)}")
    K, N = b.shape
    if b.stride(1) == 1 or N == 1:
        return "nn"
    if b.stride(0) == 1 or K == 1:
        return "nt"
    raise ValueError(
        f"b (K x N = {K} x {N}) has strides {tuple(b.stride())}: neither N-contiguous "
        f"(stride(1) == 1, layout nn) nor K-contiguous (stride(0) == 1, layout nt)"
    )


def check_problem(
    variant: str,
    M: int,
    N: int,
    K: int,
    dtype: torch.dtype | str,
    layout: str,
    capability: tuple[int, int] | None,
    num_sms: int,
    min_capability: tuple[int, int] | None = None,
) -> str:
    """Validate plan() arguments; return the dtype's short name. Errors name the variant."""
    for dim, value in (("M", M), ("N", N), ("K", K)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{variant}: {dim} must be a positive int, got {value!r}")
    try:
        name = dtype_name(dtype)
    except TypeError as e:
        raise TypeError(f"{variant}: {e}") from None
    if layout not in LAYOUTS:
        raise ValueError(f"{variant}: layout must be one of {LAYOUTS}, got {layout!r}")
    if not isinstance(num_sms, int) or num_sms < 1:
        raise ValueError(f"{variant}: num_sms must be a positive int, got {num_sms!r}")
    if capability is not None and min_capability is not None and tuple(capability) < min_capability:
        raise ValueError(
            f"{variant}: needs compute capability >= {min_capability[0]}.{min_capability[1]}"
            f" (TMA), this GPU is sm_{capability[0]}{capability[1]}"
        )
    return name


def check_operands(
    variant: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None
) -> None:
    """Shapes, dtypes and devices of `matmul(a, b, out=out)`; errors name the variant."""
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{variant}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{variant}: {name} must be 2-D, got shape {tuple(t.shape)}")
    if a.dtype not in _NAMES:
        raise TypeError(
            f"{variant}: unsupported dtype {a.dtype}: use torch.float16 or torch.bfloat16"
        )
    if b.dtype != a.dtype:
        raise TypeError(f"{variant}: a and b dtypes differ ({a.dtype} vs {b.dtype})")
    if b.device != a.device:
        raise ValueError(f"{variant}: a and b are on different devices ({a.device} vs {b.device})")
    (M, K), (K_b, N) = a.shape, b.shape
    if K_b != K:
        raise ValueError(f"{variant}: inner dimensions differ: a is {M} x {K}, b is {K_b} x {N}")
    if min(M, N, K) < 1:
        raise ValueError(f"{variant}: empty problem M x N x K = {M} x {N} x {K}")
    if out is not None:
        if tuple(out.shape) != (M, N):
            raise ValueError(f"{variant}: out has shape {tuple(out.shape)}, expected ({M}, {N})")
        if out.dtype != a.dtype:
            raise TypeError(f"{variant}: out is {out.dtype}, expected {a.dtype}")
        if out.device != a.device:
            raise ValueError(f"{variant}: out is on {out.device}, operands on {a.device}")


@functools.cache
def _cuda_facts(index: int) -> tuple[tuple[int, int], int]:
    props = torch.cuda.get_device_properties(index)
    return (props.major, props.minor), props.multi_processor_count


def device_facts(variant: str, device: torch.device) -> tuple[tuple[int, int] | None, int]:
    """(capability, SM count) to plan for on `device`; (None, INTERPRETER_NUM_SMS) when interpreting."""
    if interpreting():
        return None, INTERPRETER_NUM_SMS
    if device.type != "cuda":
        raise ValueError(
            f"{variant}: operands are on {device}; Triton kernels need a CUDA device "
            f"(or TRITON_INTERPRET=1 to run them in Triton's CPU interpreter)"
        )
    index = device.index if device.index is not None else torch.cuda.current_device()
    return _cuda_facts(index)


# ---------------------------------------------------------------------------------------------
# Binding a plan to real tensors and launching it.


def _scalar_values(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> dict[str, int]:
    (M, K), N = a.shape, b.shape[1]
    return {
        "M": M,
        "N": N,
        "K": K,
        "stride_am": a.stride(0),
        "stride_ak": a.stride(1),
        "stride_bk": b.stride(0),
        "stride_bn": b.stride(1),
        "stride_cm": c.stride(0),
        "stride_cn": c.stride(1),
    }


def check_tma_sizes(variant: str, N: int, K: int, dt: str) -> None:
    """Contiguous A (M x K), B (K x N, or B.T N x K) and C (M x N) have leading strides K and N:
    TMA needs them to be multiples of 16 bytes."""
    elems = TMA_ALIGN_BYTES // DTYPES[dt].itemsize
    for dim, value in (("K", K), ("N", N)):
        if value % elems:
            raise ValueError(
                f"{variant}: TMA needs {dim} to be a multiple of {elems} for {dt} (16-byte "
                f"aligned row strides), got {dim} = {value}"
            )


def host_descriptors(
    names: tuple[str, str, str],
    dt: str,
    M: int,
    N: int,
    K: int,
    blocks: tuple[int, int, int],
    *,
    transposed: bool,
    c_block: tuple[int, int],
) -> tuple[DescArg, DescArg, DescArg]:
    """Host TMA descriptors over contiguous A (M x K), B (K x N; with `transposed`, B.T N x K)
    and C (M x N), bound to the kernel parameters `names`, with (BLOCK_M, BLOCK_N, BLOCK_K)
    boxes and C's box `c_block`."""
    bm, bn, bk = blocks
    a, b, c = names
    b_desc = (
        DescArg(b, "b", dt, (N, K), (K, 1), (bn, bk), transposed=True)
        if transposed
        else DescArg(b, "b", dt, (K, N), (N, 1), (bk, bn))
    )
    return (
        DescArg(a, "a", dt, (M, K), (K, 1), (bm, bk)),
        b_desc,
        DescArg(c, "c", dt, (M, N), (N, 1), c_block),
    )


def _tma_base(variant: str, operand: str, t: torch.Tensor, transposed: bool) -> torch.Tensor:
    """`t` (or t.T) as a TMA descriptor sees it, after checking what TMA requires."""
    base = t.T if transposed else t
    what = f"{operand}.T" if transposed else operand
    size = base.element_size()
    if base.stride(-1) != 1:
        raise ValueError(
            f"{variant}: TMA needs {what} contiguous in its last dimension, got strides "
            f"{tuple(base.stride())}"
        )
    if any(s * size % TMA_ALIGN_BYTES for s in base.stride()[:-1]):
        raise ValueError(
            f"{variant}: TMA needs {what}'s leading strides to be multiples of 16 bytes, got "
            f"strides {tuple(base.stride())} of {size}-byte elements (shape {tuple(base.shape)})"
        )
    if base.data_ptr() % TMA_ALIGN_BYTES:
        raise ValueError(f"{variant}: TMA needs {what}'s data pointer 16-byte aligned")
    return base


def _descriptor(variant: str, arg: DescArg, t: torch.Tensor) -> TensorDescriptor:
    """A host TMA descriptor over `t` (or t.T), after checking what TMA requires."""
    base = _tma_base(variant, arg.operand, t, arg.transposed)
    return TensorDescriptor(base, list(base.shape), list(base.stride()), list(arg.block_shape))


def _check_int32_offsets(variant: str, name: str, t: torch.Tensor) -> None:
    """Pointer kernels compute element offsets in int32: refuse what would overflow."""
    span = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True))
    if span >= _INT32_LIMIT:
        raise ValueError(f"{variant}: {name} spans {span} elements, beyond int32 offsets")


def bind(
    variant: str, launch: KernelLaunch, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> list[Any]:
    """The kernel's positional arguments: `launch.args` bound to a, b and c.

    Sizes and strides are read from the tensors themselves (they equal the plan's for the
    layout's canonical tensors; a padded leading dimension, say, still runs correctly).
    """
    operands = {"a": a, "b": b, "c": c}
    scalars = _scalar_values(a, b, c)
    values: list[Any] = []
    for arg in launch.args:
        if isinstance(arg, TensorArg):
            t = operands[arg.operand]
            if arg.tma:  # the kernel makes a descriptor over t: TMA's rules, 64-bit strides
                _tma_base(variant, arg.operand, t, transposed=arg.strides[-1] != 1)
            else:
                _check_int32_offsets(variant, arg.operand, t)
            values.append(t)
        elif isinstance(arg, DescArg):
            values.append(_descriptor(variant, arg, operands[arg.operand]))
        elif isinstance(arg, ScalarArg):
            values.append(scalars.get(arg.name, arg.value))
        else:  # pragma: no cover - launch.py defines exactly three kinds
            raise TypeError(f"{variant}: unknown launch argument {arg!r}")
    return values


# Whether this context has handed Triton `_scratch` (see ensure_scratch_allocator).
_SCRATCH_ALLOCATOR_SET: ContextVar[bool] = ContextVar("kernels_scratch_allocator", default=False)


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    """Global scratch for one launch, on the current CUDA device (torch's caching allocator
    returns blocks aligned to 512 bytes, more than the 128 Triton asks for descriptors)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def ensure_scratch_allocator() -> None:
    """Give Triton an allocator for kernels that need global scratch, once per context.

    Triton calls the allocator at every launch of such a kernel (TMA descriptors made in the
    kernel) and keeps it in a ContextVar: set in one thread, it is unset in another (and a
    process-wide "done" flag would be wrong there). So it is set here, at the first launch that
    needs it in each context, never on import. The interpreter makes descriptors in NumPy and
    never calls it.
    """
    if not _SCRATCH_ALLOCATOR_SET.get():
        triton.set_allocator(_scratch)
        _SCRATCH_ALLOCATOR_SET.set(True)


def launch_kernel(
    variant: str, launch: KernelLaunch, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
) -> torch.Tensor:
    """Bind `launch` to a, b, c and run it; returns c."""
    values = bind(variant, launch, a, b, c)
    if launch.scratch and not interpreting():
        ensure_scratch_allocator()
    kernel = launchable(launch.fn)[launch.grid]
    options = {"num_warps": launch.num_warps, "num_stages": launch.num_stages}
    if a.device.type == "cuda":
        with torch.cuda.device(a.device):
            kernel(*values, **launch.constexprs, **options)
    else:
        kernel(*values, **launch.constexprs, **options)
    return c


def run_matmul(
    variant: str,
    plan: PlanFn,
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    refuse: Callable[[tuple[int, int] | None], str | None] | None = None,
) -> torch.Tensor:
    """C = A @ B with the launch `plan` makes for these operands, written into `out` if given.

    `refuse(capability)` (the variant's unsupported_reason) says why not to run on this GPU:
    then nothing is planned or compiled, and the reason is the error.
    """
    check_operands(variant, a, b, out)
    capability, num_sms = device_facts(variant, a.device)
    reason = refuse(capability) if refuse is not None else None
    if reason:
        raise ValueError(reason)
    (M, K), N = a.shape, b.shape[1]
    try:
        layout = layout_of(b)
    except ValueError as e:
        raise ValueError(f"{variant}: {e}") from None
    launch = plan(M, N, K, dtype=a.dtype, layout=layout, capability=capability, num_sms=num_sms)
    c = torch.empty((M, N), dtype=a.dtype, device=a.device) if out is None else out
    return launch_kernel(variant, launch, a, b, c)


def canonical_strides(M: int, N: int, K: int, layout: str) -> Mapping[str, tuple[int, int]]:
    """Strides of contiguous a (M x K), b in `layout` and contiguous c (M x N)."""
    b_strides = (N, 1) if layout == "nn" else (1, K)
    return {"a": (K, 1), "b": b_strides, "c": (N, 1)}


def pointer_args(
    M: int, N: int, K: int, dtype: str, layout: str
) -> tuple[TensorArg | ScalarArg, ...]:
    """The pointer kernels' runtime parameters, in order, for canonical tensors of `layout`."""
    strides = canonical_strides(M, N, K, layout)
    return (
        TensorArg("a_ptr", "a", dtype, (M, K), strides["a"]),
        TensorArg("b_ptr", "b", dtype, (K, N), strides["b"]),
        TensorArg("c_ptr", "c", dtype, (M, N), strides["c"]),
        ScalarArg("M", M),
        ScalarArg("N", N),
        ScalarArg("K", K),
        ScalarArg("stride_am", strides["a"][0]),
        ScalarArg("stride_ak", strides["a"][1]),
        ScalarArg("stride_bk", strides["b"][0]),
        ScalarArg("stride_bn", strides["b"][1]),
        ScalarArg("stride_cm", strides["c"][0]),
        ScalarArg("stride_cn", strides["c"][1]),
    )
