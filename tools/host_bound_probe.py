"""Which GPU time of a host-bound call is its kernels' time (issue 39, run on a GPU):

    python tools/host_bound_probe.py [--rows 8192] [--cols 1024] [--rounds 300] [--extra-us 0]

A Triton row softmax over rows x cols fp16 (8192 x 1024: a ~14 us kernel whose Python launch
takes about as long) behind a wrapper, timed five ways, each median per call with the L2 flush
before every call (as the suite times it):

* events, back to back (CudaTimer without any hold: what a host-bound call measured before);
* events with the GPU held before each call (CudaTimer's `held` path: tilegate's choice);
* the CUDA profiler's kernel durations (torch.profiler, the sum of the call's kernels);
* a CUDA graph of the call (captured after warm-up), each replay between event pairs;
* the host time per call (perf_counter around the call with nothing queued ahead, as
  `CudaTimer.host_probe_s`; and in a held call's rounds, as `host_samples`).

The hold is exact when its time agrees with the profiler's kernel time and the graph replay
within the A/A noise (about 1 %), and the back-to-back events are the host's time (about the
host column). `--extra-us N` adds N microseconds of busy Python to the wrapper: the held and
profiler times must not move, the host time must.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any


def softmax_call(rows: int, cols: int, extra_us: float) -> Any:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(y_ptr + row * stride + offs, (e / tl.sum(e, axis=0)).to(tl.float16), mask=mask)

    x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)

    def call() -> Any:
        if extra_us:
            end = time.perf_counter() + extra_us * 1e-6
            while time.perf_counter() < end:
                pass
        assert x.is_contiguous() and x.dtype == torch.float16  # a wrapper's checks
        softmax_kernel[(rows,)](x, y, x.stride(0), cols, BLOCK=block, num_warps=8)
        return y

    return call


def main() -> int:
    import torch

    from tilegate.harness.timing import CudaTimer, TimerConfig

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--extra-us", type=float, default=0.0)
    args = ap.parse_args()
    call = softmax_call(args.rows, args.cols, args.extra_us)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    out: dict[str, float] = {}

    plain = CudaTimer(TimerConfig(rounds=args.rounds, hold_host_bound=False), l2)
    plain.warm({"c": call}, 1.0)
    out["events, back to back"] = statistics.median(plain.time({"c": call})["c"])
    out["host per call"] = plain.host_probe_s["c"]  # nothing queued ahead (timing.py)

    held = CudaTimer(TimerConfig(rounds=args.rounds), l2)
    held.warm({"c": call}, 1.0)
    out["events, held (tilegate)"] = statistics.median(held.time({"c": call})["c"])
    out["held?"] = float(held.is_held(call))
    if "c" in held.host_samples:  # a held call's rounds: its own host time, round by round
        out["host per call, held rounds"] = statistics.median(held.host_samples["c"])

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(50):
            plain._flush()
            call()
        torch.cuda.synchronize()

    def device_us(e: Any) -> float:  # the name of the field moved between torch releases
        return float(getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0))

    kernels = [device_us(e) for e in prof.events() if "softmax_kernel" in e.name and device_us(e)]
    out["profiler kernel time"] = statistics.median(kernels) / 1e6 if kernels else float("nan")

    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        samples = []
        for _ in range(args.rounds):
            plain._flush()
            b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record()
            graph.replay()
            e.record()
            samples.append((b, e))
        torch.cuda.synchronize()
        out["cuda graph replay"] = statistics.median(b.elapsed_time(e) / 1e3 for b, e in samples)
    except Exception as err:  # a call a graph cannot capture: say so, go on
        print(f"cuda graph: cannot capture ({type(err).__name__}: {err})")

    for name, value in out.items():
        shown = f"{value:g}" if name == "held?" else f"{value * 1e6:9.2f} us"
        print(f"{name:28} {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
