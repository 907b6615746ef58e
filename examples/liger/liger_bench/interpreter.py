"""Gaps of Triton 3.6's interpreter that Liger's kernels hit, closed for CPU runs only.

1. A Python float argument reaches the kernel as a plain float (ints are wrapped as tensors),
   so Liger's `eps.to(tl.float32)` (rms_norm, 0.8.x) raises "'float' object has no attribute
   'to'". Compiled Triton specializes a float argument to an fp32 scalar; we wrap it the same way.
2. `triton.language.extra.libdevice` is a stub module under the interpreter (its functions
   return None; the CUDA one raises NotImplementedError), so `rsqrt` (rms_norm, layer_norm) and
   `tanh` (geglu, cross_entropy) give None. We route both to interpreter-supported math.
3. bf16 is held as its uint16 bits and binary arithmetic runs on the bits: bf16 * bf16 is an
   integer product (garbage; Liger's swiglu / geglu forwards do exactly that). We compute
   bf16 add / sub / mul / div / min / max in fp32 and round back to bf16 (exact for mul, as the
   GPU). Comparisons, unary math and reductions on bf16 stay wrong: none of the gated kernels
   does them in bf16 (they upcast first); the tests would show it.

4. Not Triton's gap but its use by tilegate's compiled-code identity, which hashes an
   interpreted kernel through `JITFunction(fn).cache_key`: Triton's dependency walk accepts only
   `@jit` callees it compiles (JITCallable) and raises "Unsupported function referenced" on the
   InterpretedFunction callees a plain `triton.jit` package has under the interpreter (Liger's
   `silu`, ...) and on the shims of 2. We hash an interpreted callee as the JITFunction of the
   same source, and mark the shims of 2 as the libdevice stubs they stand in for (skipped).

`install()` must run before `liger_kernel` is imported: Liger binds `rsqrt` / `tanh` by name at
import time. It does nothing unless TRITON_INTERPRET=1.
"""

from __future__ import annotations

import os


def install() -> bool:
    """Patch the interpreter (idempotent); True when patched, False when not interpreting."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    import numpy as np
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.runtime import interpreter

    if getattr(interpreter._implicit_cvt, "_liger_bench", False):
        return True
    wrap = interpreter._implicit_cvt

    def implicit_cvt(arg):  # type: ignore[no-untyped-def]
        if isinstance(arg, float):
            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return wrap(arg)

    implicit_cvt._liger_bench = True  # type: ignore[attr-defined]
    interpreter._implicit_cvt = implicit_cvt

    # Looked up at call time, when the interpreter has patched tl.math / tl.sigmoid.
    def rsqrt(x):  # type: ignore[no-untyped-def]
        return tl.math.rsqrt(x)

    def tanh(x):  # type: ignore[no-untyped-def]
        return 2.0 * tl.sigmoid(2.0 * x) - 1.0

    for shim in (rsqrt, tanh):
        shim.__module__ = libdevice.__name__  # a libdevice stub to Triton's dependency walk (4.)
        setattr(libdevice, shim.__name__, shim)

    # 4.: an interpreted @jit callee enters a kernel's source hash as its JITFunction would
    from triton.runtime import jit

    record = jit.DependenciesFinder.record_reference
    as_jit: dict[object, object] = {}

    def record_reference(self, val, var_dict=None, name=None):  # type: ignore[no-untyped-def]
        if isinstance(val, interpreter.InterpretedFunction):
            if val.fn not in as_jit:
                as_jit[val.fn] = jit.JITFunction(val.fn)
            val = as_jit[val.fn]
        return record(self, val, var_dict, name)

    jit.DependenciesFinder.record_reference = record_reference

    builder = interpreter.InterpreterBuilder
    binary_op = builder.binary_op
    arith = (np.add, np.subtract, np.multiply, np.divide, np.fmod, np.minimum, np.maximum)

    def bf16_binary_op(self, lhs, rhs, op):  # type: ignore[no-untyped-def]
        if op not in arith or lhs.dtype.scalar != tl.bfloat16 or rhs.dtype.scalar != tl.bfloat16:
            return binary_op(self, lhs, rhs, op)
        lo, hi = tl.bfloat16, tl.float32
        f32 = [
            interpreter._convert_float(x.data, lo, hi, None).view(np.float32) for x in (lhs, rhs)
        ]
        out = interpreter._convert_float(op(*f32).astype(np.float32), hi, lo, None)
        return interpreter.TensorHandle(out.view(np.uint16), lo)

    builder.binary_op = bf16_binary_op
    return True
