"""What one kernel launch is, as a benchmark declares it (tilegate.declare.Variant's `plan`): one
description for the variant's call and the AOT fingerprint (no torch, no Triton).

The variant's code binds a `KernelLaunch`'s `args` to real tensors and launches `fn`;
tilegate.fingerprint turns the same object into `triton.compile(ASTSource(...))`, so the kernel
compiled in CI is the one that runs on the GPU. A repository whose variants declare a `plan`
returning these gets fingerprinted (the fingerprint takes its launches from the declaration only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TensorArg:
    """A pointer argument: which operand ("a", "b" or "c") it binds to, and its layout."""

    name: str  # kernel parameter name, e.g. "a_ptr"
    operand: str  # "a", "b" or "c"
    dtype: str  # Triton type name: "fp16", "bf16", "fp32"
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    # The kernel makes a TMA descriptor over this pointer (tl.make_tensor_descriptor), over the
    # operand or, when `strides` make its first dimension the contiguous one, over operand.T:
    # binding checks what TMA requires instead of the pointer kernels' int32 offsets.
    tma: bool = False


@dataclass(frozen=True)
class DescArg:
    """A host-side TMA tensor descriptor over an operand (triton.tools.tensor_descriptor.TensorDescriptor)."""

    name: str
    operand: str  # "a", "b" (possibly transposed view, see `transposed`) or "c"
    dtype: str
    shape: tuple[int, ...]  # the global shape the descriptor describes
    strides: tuple[int, ...]  # its strides (last one is 1)
    block_shape: tuple[int, ...]
    transposed: bool = False  # True when the descriptor covers operand.T (B stored N x K)


@dataclass(frozen=True)
class ScalarArg:
    """An integer argument (sizes, strides). Values equal to 1 are specialised by the JIT."""

    name: str
    value: int


Arg = TensorArg | DescArg | ScalarArg


@dataclass(frozen=True)
class KernelLaunch:
    """Everything needed to launch (or compile ahead of time) one kernel for one problem."""

    fn: Any  # triton.runtime.jit.JITFunction
    grid: tuple[int, ...]
    args: tuple[Arg, ...]  # the kernel's runtime parameters, in order
    constexprs: Mapping[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    # The kernel needs global scratch memory at launch (TMA descriptors made in the kernel live
    # there), which Triton takes from the allocator set with triton.set_allocator.
    scratch: bool = False
