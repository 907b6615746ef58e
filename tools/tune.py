"""Sweep candidate configs of a kernel family on this GPU: swizzle vs cross-tile vs cuBLAS per K.

    python tools/tune.py --family tma --ks 128,4096 --layout nt
    python tools/tune.py --family pointer --configs "128x256x64w8s3p1,128x128x64w8s3p2"
    python tools/tune.py --family tma_ws --only swz --also tma_xtile_persistent \
        --configs "128x256x64w4s3p1,256x128x64w4s3p1"

Each candidate is checked against torch.matmul first, then timed with the suite's own timer
(CUDA events, L2 flushed, variants interleaved per round). `--also` times registered variants
(as the suite runs them) in the same rounds; every row's paired ratio to the first of them is
the last column. Prints one table; the
chosen config goes into kernels/configs.py by hand, with the table in docs/tuning-<arch>.md.
For `tma_ws`, "swz" is the warp-specialized kernel with its own tile loop (`tma_ws_persistent`)
and "xtile" the flattened one, which Triton 3.6 does not warp-specialize on sm_90.

`--aot ARCH` needs no GPU: it compiles each candidate ahead of time for ARCH (a target of
baselines/fingerprints/rules.json) with the fingerprint's compiler and prints what decides
whether it is worth timing: warp-specialized or not, shared memory against the limit,
registers, spills. Run it before a GPU sweep to drop the candidates that cannot win.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import triton

from kernels import VARIANTS, configs, persistent, tma, tma_ws
from kernels._host import run_matmul
from kernels.reference import exact as reference
from perf_tests.test_matmul import REL_ERR_TOL
from tilegate.harness.correctness import check_call
from tilegate.harness.device import gpu_info
from tilegate.harness.timing import CudaTimer, TimerConfig
from tilegate.judge.stats import paired_ratio

_CFG = re.compile(r"^(\d+)x(\d+)x(\d+)w(\d+)s(\d+)p(\d+)(sub)?(?:g(\d+))?$")


def parse_config(text: str) -> configs.Config:
    m = _CFG.match(text)
    if not m:
        raise SystemExit(
            f"bad config {text!r}: expected BMxBNxBKwWARPSsSTAGESpPROGRAMS_PER_SM[sub][gGROUP_M]"
        )
    bm, bn, bk, w, s, p = (int(x) for x in m.groups()[:6])
    group_m = int(m[8]) if m[8] else 8
    return configs.Config(
        bm,
        bn,
        bk,
        group_m,
        num_warps=w,
        num_stages=s,
        programs_per_sm=p,
        epilogue_subtile=bool(m[7]),
    )


def name_of(c: configs.Config) -> str:
    return (
        f"{c.block_m}x{c.block_n}x{c.block_k}w{c.num_warps}s{c.num_stages}p{c.programs_per_sm}"
        + ("sub" if c.epilogue_subtile else "")
        + (f"g{c.group_m}" if c.group_m != 8 else "")
    )


def aot_table(family: str, arch: str, texts: list[str], layout: str, m: int, k: int) -> int:
    """Compile each candidate for `arch` without a GPU; print its fingerprint facts."""
    from tilegate.fingerprint.compile import compile_one
    from tilegate.fingerprint.rules import load_rules

    ruleset = load_rules()
    if arch not in ruleset.targets:
        raise SystemExit(f"--aot: unknown arch {arch!r}; known: {sorted(ruleset.targets)}")
    target = ruleset.targets[arch]
    # the arch's shared-memory limit is a rule's check (rules.json: smem-fits-<arch>)
    limit = next(
        (
            c.value
            for r in ruleset.rules
            if arch in r.applies_to.get("archs", ())
            for c in r.checks
            if c.field == "shared_bytes" and c.op == "<="
        ),
        None,
    )
    module = {"tma": tma, "tma_ws": tma_ws, "pointer": persistent}[family]
    extra = {"grouped": True} if family == "pointer" else {}
    print(f"{family} {layout} M=N={m} K={k}, compiled for {arch} ({target.gpu}), no GPU")
    print(
        f"{'config':<24} {'flat':>4} {'WS':>5} {'warps':>9} {'smem B':>7} {'fits':>5} {'regs':>4} {'spill B':>7}"
    )
    for text in texts:
        cfg = parse_config(text)
        for flat in (False, True):
            try:
                launch = module.plan(
                    m, m, k, dtype="fp16", layout=layout, capability=target.capability,
                    num_sms=target.num_sms, variant=text, flatten=flat, config=cfg, **extra,
                )  # fmt: skip
                f = compile_one(launch, target, cache_dir=None).facts
            except Exception as exc:  # a candidate that does not compile is reported, not fatal
                print(f"{text:<24} {flat!s:>4} FAILED {type(exc).__name__}: {str(exc)[:60]}")
                continue
            fits = "-" if limit is None else str(f["shared_bytes"] <= limit)
            warps = "/".join(map(str, f["ws_warps"])) or "-"
            spill = f["spill_stores"] + f["spill_loads"]
            print(
                f"{text:<24} {flat!s:>4} {f['warp_specialized']!s:>5} {warps:>9} "
                f"{f['shared_bytes']:>7} {fits:>5} {f['registers']:>4} {spill:>7}"
            )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=["pointer", "tma", "tma_ws"], required=True)
    ap.add_argument("--configs", required=True, help="comma-separated, e.g. 128x256x64w8s3p1sub")
    ap.add_argument("--ks", default="128,4096")
    ap.add_argument("--layout", default="nt", choices=["nt", "nn"])
    ap.add_argument("--m", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument(
        "--only",
        choices=["both", "xtile", "swz"],
        default="both",
        help="time only the cross-tile (FLATTEN) or only the swizzle kernel of each config",
    )
    ap.add_argument(
        "--also",
        default="",
        help="comma-separated registered variants to time in the same rounds, e.g. "
        "tma_xtile_persistent",
    )
    ap.add_argument(
        "--aot",
        metavar="ARCH",
        help="no GPU: compile the candidates for ARCH (e.g. sm_90) and print their facts",
    )
    args = ap.parse_args()
    if args.aot:
        k = int(args.ks.split(",")[-1])
        return aot_table(args.family, args.aot, args.configs.split(","), args.layout, args.m, k)
    also = [v for v in args.also.split(",") if v]
    unknown = [v for v in also if v not in VARIANTS or VARIANTS[v].plan is None]
    if unknown:
        known = sorted(n for n, v in VARIANTS.items() if v.plan is not None)
        raise SystemExit(f"--also: no Triton variant {unknown}; known: {known}")
    info = gpu_info()
    for name in also:
        reason = VARIANTS[name].unsupported_reason(info.capability)
        if reason:
            raise SystemExit(f"--also: {reason}")
    timer = CudaTimer(TimerConfig(rounds=args.rounds), l2_bytes=info.l2_bytes)
    module = {"tma": tma, "tma_ws": tma_ws, "pointer": persistent}[args.family]
    extra = {"grouped": True} if args.family == "pointer" else {}
    rows = []
    for k in (int(x) for x in args.ks.split(",")):
        gen = torch.Generator(device="cuda").manual_seed(k)
        a = torch.randn(args.m, k, dtype=torch.float16, device="cuda", generator=gen)
        b = torch.randn(args.m, k, dtype=torch.float16, device="cuda", generator=gen).T
        if args.layout == "nn":
            b = b.contiguous()
        ref = reference(a, b)
        fns = {
            "torch": partial(
                torch.matmul, a, b, out=torch.empty(args.m, args.m, dtype=a.dtype, device="cuda")
            )
        }
        for name in also:
            out = torch.full((args.m, args.m), float("nan"), dtype=a.dtype, device="cuda")
            VARIANTS[name].call(a, b, out=out)
            err = float((out.float() - ref).norm() / ref.norm())
            if not err < 1e-2:
                raise SystemExit(f"K={k} {name}: WRONG rel err {err:.3g}")
            fns[name] = partial(VARIANTS[name].matmul, a, b, out=out)
        for text in args.configs.split(","):
            cfg = parse_config(text)
            flats = {"both": (False, True), "xtile": (True,), "swz": (False,)}[args.only]
            for flat in flats:
                label = f"{name_of(cfg)}/{'xtile' if flat else 'swz'}"
                plan = partial(module.plan, variant=label, flatten=flat, config=cfg, **extra)
                out = torch.empty((args.m, args.m), dtype=a.dtype, device="cuda")
                matmul = partial(run_matmul, label, plan)
                try:
                    out.fill_(float("nan"))  # an element never written stays NaN: caught
                    got = check_call(partial(matmul, a, b, out=out), ref, REL_ERR_TOL["fp16"])
                except Exception as exc:  # a config that does not compile or fit is reported
                    print(
                        f"K={k} {label}: FAILED {type(exc).__name__}: {str(exc)[:200]}", flush=True
                    )
                    continue
                if not got.correct:
                    print(f"K={k} {label}: WRONG {got.error or f'rel err {got.rel_err:.3g}'}")
                    continue
                fns[label] = partial(run_matmul, label, plan, a, b, out=out)
        del ref
        timer.warm(fns, 1.0)
        samples = timer.time(fns)
        base = samples["torch"]
        first_also = samples.get(also[0]) if also else None
        for label, s in samples.items():
            twin = label.replace("/xtile", "/swz")
            rows.append(
                (
                    k,
                    label,
                    statistics.median(s) * 1e3,
                    paired_ratio(s, base),
                    paired_ratio(s, samples[twin])
                    if label.endswith("/xtile") and twin in samples
                    else None,
                    paired_ratio(s, first_also) if first_also else None,
                )
            )
        print(f"K={k} done", flush=True)
    print(
        f"\n{info.name} {args.family} {args.layout} M=N={args.m}, {args.rounds} rounds, L2 flushed,"
        f" Triton {triton.__version__}"
    )
    vs = f"/{also[0]}" if also else ""
    print(f"{'K':>5} {'config':<28} {'median ms':>10} {'/cuBLAS':>8} {'xtile/swz':>10} {vs}")
    for k, label, ms, rt, rx, ra in rows:
        print(
            f"{k:>5} {label:<28} {ms:>10.4f} {rt or 1:>8.3f} {'' if rx is None else f'{rx:.3f}':>10}"
            + ("" if ra is None else f" {ra:.3f}")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
