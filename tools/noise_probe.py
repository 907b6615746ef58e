"""Does where a group's buffers land in GPU memory change its time? A diagnostic for run-to-run noise.

    python tools/noise_probe.py --ks 1024,4096 --layout nn --sets 4

The perf suite's medians move by up to ~1.5 % between processes while the ratios between the
variants of a group do not; two causes fit: the GPU's power/thermal state, and the placement of
the group's inputs and outputs in memory (physical pages, HBM channels), which differs from
process to process. This probe separates them inside one process: it allocates `--sets` copies
of each group's inputs and outputs (same values, different places, with spacer allocations in
between), times every (variant, copy) interleaved round by round with the suite's timer, and
prints each variant's median per copy. A spread across copies well above the within-copy noise
means placement matters.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from kernels import VARIANTS
from tilegate.harness.device import gpu_info
from tilegate.harness.timing import CudaTimer, TimerConfig


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ks", default="1024,4096")
    ap.add_argument("--layout", default="nn", choices=["nt", "nn"])
    ap.add_argument("--variants", default="torch,grouped,swizzle_persistent,tma_swizzle_persistent")
    ap.add_argument("--sets", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--m", type=int, default=16384)
    args = ap.parse_args()
    info = gpu_info()
    timer = CudaTimer(TimerConfig(rounds=args.rounds), l2_bytes=info.l2_bytes)
    names = [v.strip() for v in args.variants.split(",")]
    gen = torch.Generator(device="cuda").manual_seed(1234)
    spacers = []
    print(f"{info.name}: {args.layout} M=N={args.m}, {args.sets} placements, {args.rounds} rounds")
    print(
        f"{'K':>5} {'variant':<24} "
        + " ".join(f"{'copy' + str(s):>9}" for s in range(args.sets))
        + "   spread  in-copy"
    )
    for k in (int(x) for x in args.ks.split(",")):
        a0 = torch.randn(args.m, k, dtype=torch.float16, device="cuda", generator=gen)
        if args.layout == "nn":
            b0 = torch.randn(k, args.m, dtype=torch.float16, device="cuda", generator=gen)
        else:
            b0 = torch.randn(args.m, k, dtype=torch.float16, device="cuda", generator=gen).T
        fns = {}
        for s in range(args.sets):
            # A spacer of a different size before each copy moves it to other pages.
            spacers.append(torch.empty((s * 37 + 11) * 2**20, dtype=torch.uint8, device="cuda"))
            a = a0.clone()
            b = b0.clone() if args.layout == "nn" else b0.T.clone().T
            for name in names:
                out = torch.empty(args.m, args.m, dtype=torch.float16, device="cuda")
                VARIANTS[name].call(a, b, out=out)
                fns[f"{name}@{s}"] = partial(VARIANTS[name].matmul, a, b, out=out)
        timer.warm(fns, 1.0)
        samples = timer.time(fns)
        for name in names:
            meds = [statistics.median(samples[f"{name}@{s}"]) for s in range(args.sets)]
            # Within-copy noise: the spread of the medians of the two halves of each copy's rounds.
            halves = []
            for s in range(args.sets):
                x = samples[f"{name}@{s}"]
                h = len(x) // 2
                halves.append(abs(statistics.median(x[:h]) - statistics.median(x[h:])))
            mid = statistics.median(meds)
            print(
                f"{k:>5} {name:<24} "
                + " ".join(f"{m * 1e3:9.4f}" for m in meds)
                + f"  {(max(meds) - min(meds)) / mid:6.2%}  {max(halves) / mid:6.2%}",
                flush=True,
            )
        del fns
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
