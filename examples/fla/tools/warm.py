"""Compile (and autotune) the fla kernels of some cases once, and say how far each output is from
its torch reference: a runner's Triton cache warmed before its first gate run, and the check a
failed case needs, output by output.

    PYTHONPATH=/tmp/fla-0.6.0:examples/fla python3 examples/fla/tools/warm.py \
        [--kernels gdn-bwd gla-fwd ...] [--T 2048 4096] [--check]

Each case: the seconds of fla's first call (compile + autotune, in the Triton cache of
TRITON_CACHE_DIR) and of a second one; with --check, the relative error of every output (the
forward's, or each input's gradient) against fla_bench.ops' float32 reference, and REL_TOL.
Several of these processes may warm one cache at once (Triton writes each entry atomically); the
picks they time while sharing a GPU are not worth keeping: tools/h200.sh deletes the autotune
results (`*.autotune.json`) after warming, so that every gate run still tunes for itself.
GPU only (fla's kernels do not run under the CPU interpreter). A case fla refuses on this GPU
(fla_bench.variants.fla_refuses: gdn-bwd on Hopper with Triton < 3.7.1) is skipped and says why.
Exit 1 when a --check exceeds REL_TOL or a call raises.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import torch
from fla_bench import ops
from fla_bench.variants import KERNELS, fla_refuses, split


def _outputs(got: object) -> tuple[torch.Tensor, ...]:
    return (got,) if isinstance(got, torch.Tensor) else tuple(got)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS)
    ap.add_argument("--T", nargs="+", type=int, default=[2048, 4096])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--check", action="store_true", help="each output against its reference")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("warm.py: no CUDA device (fla's kernels need one)", file=sys.stderr)
        return 2
    bad = 0
    capability = torch.cuda.get_device_capability()
    for kernel in args.kernels:
        for t in args.T:
            params = split({"kernel": kernel, "dtype": "bf16", "T": t, "batch": args.batch})
            name = f"{kernel}-bf16-T{t}"
            refused = fla_refuses(capability, params)
            if refused:  # what the gate declares not measurable here: nothing to warm
                print(f"{name}: skipped: {refused}", flush=True)
                continue
            x = ops.inputs(params, "cuda", 0)
            try:
                t0 = time.perf_counter()
                call = ops.make("fla", params, x)
                got = call()
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                t0 = time.perf_counter()
                got = call()
                torch.cuda.synchronize()
                again = time.perf_counter() - t0
            except Exception:  # a kernel that raises: say which, and go on with the others
                print(f"{name}: RAISED\n{traceback.format_exc()}", flush=True)
                bad += 1
                continue
            line = f"{name}: first call {first:.1f} s, then {again * 1e3:.2f} ms"
            if args.check:
                ref = _outputs(ops.reference_output(params, x))
                outs = _outputs(got)
                names = ["o"] if params["pass"] == "fwd" else [
                    f"d{n}" for n in ("q", "k", "v", "g", "beta") if n in x
                ]  # fmt: skip
                errs = [ops.rel_error(o, r) for o, r in zip(outs, ref, strict=True)]
                worst = max(errs)
                bad += worst > ops.REL_TOL
                line += "; rel error " + ", ".join(
                    f"{n} {e:.4f}" for n, e in zip(names, errs, strict=True)
                )
                line += f" ({'OK' if worst <= ops.REL_TOL else 'OVER'} REL_TOL {ops.REL_TOL})"
            print(line, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
