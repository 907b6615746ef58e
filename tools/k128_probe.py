"""Why is the TMA cross-tile kernel not faster than cuBLAS at small K? Candidates side by side.

    python tools/k128_probe.py time 128     # each candidate vs cuBLAS, L2 flushed and warm
    ncu --clock-control none --cache-control all -k regex:"tma_persistent|nvjet|gemm" --csv \
        --metrics gpu__time_duration.sum,dram__bytes_write.sum,lts__t_bytes.sum,\
    dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,\
    sm__throughput.avg.pct_of_peak_sustained_elapsed python tools/k128_probe.py once 128

fp16, M = N = 16384, B `nt`. Candidates are TMA launches of kernels/tma.py with other configs or
program counts (the launch plan is edited, the kernel is the suite's own); each is checked
against torch.matmul first. `once` runs every candidate once for a profiler (never lock clocks:
keep `--clock-control none`). Results and reading: docs/tuning-sm90.md.
"""

import dataclasses
import statistics
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import triton
import tune

from kernels import tma
from kernels._host import launch_kernel
from kernels.reference import exact as reference
from perf_tests.test_matmul import REL_ERR_TOL
from tilegate.harness.correctness import check_call
from tilegate.harness.device import gpu_info
from tilegate.harness.timing import CudaTimer, TimerConfig
from tilegate.judge.stats import paired_ratio

M = N = 16384
K = int(sys.argv[2]) if len(sys.argv) > 2 else 128
info = gpu_info()
SMS = info.sm_count


def launch_for(text, programs=None, flatten=True):
    cfg = tune.parse_config(text)
    launch = tma.plan(
        M,
        N,
        K,
        dtype="fp16",
        layout="nt",
        capability=(9, 0),
        num_sms=SMS,
        variant="probe",
        flatten=flatten,
        config=cfg,
    )
    if programs is not None:
        launch = dataclasses.replace(
            launch, grid=(programs,), constexprs={**launch.constexprs, "NUM_PROGRAMS": programs}
        )
    return launch


def bal(tiles, slots):
    waves = triton.cdiv(tiles, slots)
    return triton.cdiv(tiles, waves)


cands = {
    "cur 128x128x64w4s3p2sub P264": launch_for("128x128x64w4s3p2sub"),
    "cur P256": launch_for("128x128x64w4s3p2sub", 256),
    f"cur P{bal(16384, 2 * SMS)} (balanced)": launch_for(
        "128x128x64w4s3p2sub", bal(16384, 2 * SMS)
    ),
    "cur swz twin": launch_for("128x128x64w4s3p2sub", flatten=False),
    "128x256x64w8s3p1 P132": launch_for("128x256x64w8s3p1"),
    "128x256x64w8s3p1 P128": launch_for("128x256x64w8s3p1", 128),
    "128x256x64w8s3p1sub": launch_for("128x256x64w8s3p1sub"),
    "256x128x64w8s3p1sub": launch_for("256x128x64w8s3p1sub"),
    "128x128x64w8s3p2sub P256": launch_for("128x128x64w8s3p2sub", 256),
}

gen = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(M, K, dtype=torch.float16, device="cuda", generator=gen)
b = torch.randn(N, K, dtype=torch.float16, device="cuda", generator=gen).T
ref = reference(a, b)
fns = {"torch": partial(torch.matmul, a, b, out=torch.empty(M, N, dtype=a.dtype, device="cuda"))}
for name, launch in cands.items():
    out = torch.full((M, N), float("nan"), dtype=a.dtype, device="cuda")  # unwritten: NaN
    try:
        got = check_call(partial(launch_kernel, name, launch, a, b, out), ref, REL_ERR_TOL["fp16"])
    except Exception as exc:
        print(name, "FAILED", type(exc).__name__, str(exc)[:200])
        continue
    if not got.correct:
        print(name, "WRONG", got.error or got.rel_err)
        continue
    fns[name] = partial(launch_kernel, name, launch, a, b, out)

if sys.argv[1] == "once":
    torch.cuda.synchronize()
    for name, fn in fns.items():
        torch.cuda.nvtx.range_push(name)
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    sys.exit(0)

for flush in (True, False):
    timer = CudaTimer(TimerConfig(rounds=300, l2_flush=flush), l2_bytes=info.l2_bytes)
    timer.warm(fns, 1.0)
    s = timer.time(fns)
    print(f"\nK={K} nt, 300 rounds, L2 {'flushed' if flush else 'warm'}")
    for name, x in s.items():
        print(
            f"  {name:<36} {statistics.median(x) * 1e3:8.4f} ms  /cuBLAS {paired_ratio(x, s['torch']):.3f}"
        )
