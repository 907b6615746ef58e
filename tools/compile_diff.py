"""Compile one variant at one shape under the current Triton, with no GPU; dump every stage.

    python tools/compile_diff.py persistent --k 128 --out /tmp/cd/3.6/persistent-K128
    .venv39/bin/python tools/compile_diff.py persistent --k 128 --out /tmp/cd/3.9/persistent-K128
    python tools/compile_diff.py swizzle_persistent --config 128x256x64w8s4p1 --out /tmp/cd/s4
    python tools/compile_diff.py --diff /tmp/cd/3.6/persistent-K128 /tmp/cd/3.9/persistent-K128

The kernel is planned by the registry (`VARIANTS[name].plan`, as the suite launches it; with
`--config` the variant's plan gets that config instead of kernels/configs.py's, in tools/tune.py's
notation), specialized by the fingerprint's `specialize` (the JIT's own binder) and compiled by
`triton.compile` for the target of baselines/fingerprints/rules.json, as the fingerprint does.
Written to `--out`: every stage Triton keeps (`kernel.ttir`, `.ttgir`, `.llir`, `.ptx`, `.cubin`),
`kernel.sass` (the bundled cuobjdump), `ptxas.log` (the `-v` report of Triton's own ptxas run) and
`facts.json`: the fingerprint's facts (`facts_for`) plus what this tool counts, printed as well:

* `ptx`: instructions that decide the pipeline, counted in the whole PTX (cp.async, TMA,
  wgmma and its waits, barriers, global stores);
* `sass_loops`: each SASS loop (a backward branch and its target), innermost first, with its
  instruction count and its HGMMA / LDGSTS / UTMALDG / STG / BAR / WARPGROUP counts;
* `sass_instructions`: all SASS instructions of the kernel;
* `ptxas_wgmma_serialized`: ptxas warned C7515, wgmma serialized (the fingerprint does not read it).

`--diff A B` prints the facts of two such directories side by side (what differs marked).
Use it to read why the fingerprint of a kernel moved under another Triton (docs/fingerprint.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Triton 3.9 warns once per process when this is unset; the default it warns about is 1.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from tilegate.fingerprint.compile import facts_for, ptxas_scope, specialize, triton_version
from tilegate.fingerprint.rules import load_rules

# PTX instructions that show the pipeline's shape (counted over the whole kernel).
_PTX_COUNTS = {
    "cp.async (cp.async.cg/ca)": r"^\s*(?:@%p\d+\s+)?cp\.async\.c[ag]\.",
    "cp.async.commit_group": r"cp\.async\.commit_group",
    "cp.async.wait_group": r"cp\.async\.wait_group",
    "cp.async.bulk.tensor (TMA)": r"cp\.async\.bulk\.tensor",
    "mbarrier": r"\bmbarrier\.",
    "fence.proxy.async": r"fence\.proxy\.async",
    "wgmma.mma_async": r"wgmma\.mma_async",
    "wgmma.fence": r"wgmma\.fence",
    "wgmma.commit_group": r"wgmma\.commit_group",
    "wgmma.wait_group": r"wgmma\.wait_group",
    "bar.sync / barrier.sync": r"\b(?:bar|barrier)\.sync\b",
    "st.global": r"\bst\.global\b",
    "st.shared / stmatrix": r"\b(?:st\.shared|stmatrix)\b",
    "ld.shared / ldmatrix": r"\b(?:ld\.shared|ldmatrix)\b",
    "setmaxnreg": r"setmaxnreg",
}
_WGMMA_WAIT = re.compile(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)")
_CP_WAIT = re.compile(r"cp\.async\.wait_group\s+(\d+)")
_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_SASS_BRA = re.compile(r"\bBRA\b.*?(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))")
_SASS_KINDS = (
    *("HGMMA", "LDGSTS", "UTMALDG", "STG", "BAR", "WARPGROUP", "DEPBAR", "SYNCS", "MEMBAR"),
    "FENCE",
)


def _arch_bin(name: str) -> Path:
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name


def compile_all(launch: Any, target: Any, override_dir: Path | None = None) -> tuple[Any, str, Any]:
    """(compiled kernel, ptxas report, specialization): the fingerprint's specialization and
    compile, keeping every stage of the kernel instead of only its TTGIR. With `override_dir`,
    Triton's TRITON_KERNEL_OVERRIDE mechanism reads stages from there (see `write_override`)."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    spec = specialize(launch, target)
    src = ASTSource(launch.fn, spec.signature, spec.constexprs, spec.attrs)
    with ptxas_scope("tilegate-compile-diff-") as log:
        if override_dir is not None:
            knobs.compilation.override = True
            knobs.cache.override_dir = str(override_dir)
        kernel = triton.compile(src, target=GPUTarget("cuda", target.cc, 32), options=spec.options)
    return kernel, log.getvalue(), spec


def write_override(kernel: Any, launch: Any, spec: Any, override_dir: Path) -> Path:
    """Write this kernel's PTX without its `fence.proxy.async` lines where Triton's
    TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR=override_dir picks it up (keyed by the
    source hash, as triton.compile looks it up). A timing experiment only: the fence is what
    the PTX ISA requires between cp.async's writes and wgmma's reads of shared memory."""
    from triton import knobs
    from triton.compiler.compiler import ASTSource
    from triton.runtime.cache import get_override_manager

    src = ASTSource(launch.fn, spec.signature, spec.constexprs, spec.attrs)
    ptx = "\n".join(
        line for line in kernel.asm["ptx"].split("\n") if "fence.proxy.async" not in line
    )
    with knobs.cache.scope():
        knobs.cache.override_dir = str(override_dir)
        where = Path(get_override_manager(src.hash()).cache_dir)  # Triton's own path for it
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{kernel.metadata.name}.ptx"
    path.write_text(ptx, encoding="utf-8")
    return path


def ptx_counts(ptx: str) -> dict[str, Any]:
    out: dict[str, Any] = {k: len(re.findall(p, ptx, re.MULTILINE)) for k, p in _PTX_COUNTS.items()}
    out["wgmma.wait_group pendings"] = sorted({int(m) for m in _WGMMA_WAIT.findall(ptx)})
    out["cp.async.wait_group pendings"] = sorted({int(m) for m in _CP_WAIT.findall(ptx)})
    out["lines"] = ptx.count("\n")
    return out


def sass_loops(sass: str) -> tuple[int, list[dict[str, Any]]]:
    """(instruction count, loops): each backward branch's range, smallest first."""
    insts: list[tuple[int, str]] = [
        (int(m.group(1), 16), m.group(2)) for m in _SASS_LINE.finditer(sass)
    ]
    insts = [(a, t) for a, t in insts if not t.startswith("NOP")]
    loops = []
    for addr, text in insts:
        m = _SASS_BRA.search(text)
        if not m or not m.group(1):
            continue
        dest = int(m.group(1), 16)
        if dest >= addr:  # forward, or the `BRA` to itself after EXIT
            continue
        body = [t for a, t in insts if dest <= a <= addr]
        row: dict[str, Any] = {
            "from": f"0x{dest:04x}",
            "to": f"0x{addr:04x}",
            "instructions": len(body),
        }
        for kind in _SASS_KINDS:
            row[kind] = sum(1 for t in body if re.search(rf"\b{kind}\b", t))
        loops.append(row)
    loops.sort(key=lambda r: r["instructions"])
    return len(insts), loops


def dump(kernel: Any, log: str, spec: Any, launch: Any, out: Path, label: str) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    for stage, text in kernel.asm.items():
        path = out / f"kernel.{stage}"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    (out / "ptxas.log").write_text(log, encoding="utf-8")
    sass = subprocess.run(
        [str(_arch_bin("cuobjdump")), "-sass", str(out / "kernel.cubin")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (out / "kernel.sass").write_text(sass, encoding="utf-8")
    n_sass, loops = sass_loops(sass)
    facts = facts_for(kernel.asm["ttgir"], log, {"shared_bytes": int(kernel.metadata.shared)})
    result = {
        "label": label,
        "triton": triton_version(),
        "ptxas": next((ln for ln in log.splitlines() if ln.startswith("ptxas")), ""),
        "hash": kernel.hash,  # Triton's cache hash: equal hashes, the same compiled kernel
        "config": {
            "num_warps": launch.num_warps,
            "num_stages": launch.num_stages,
            "constexprs": {k: getattr(v, "value", v) for k, v in sorted(launch.constexprs.items())},
            "signature": spec.signature_text(),
        },
        "facts": facts,
        # ptxas's C7515: "wgmma.mma_async instructions are serialized due to ..." (each wgmma
        # waits for the one before it, whatever the TTGIR's pendings say)
        "ptxas_wgmma_serialized": "C7515" in log,
        "ptx": ptx_counts(kernel.asm["ptx"]),
        "sass_instructions": n_sass,
        "sass_loops": loops,
    }
    (out / "facts.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def _flat(d: dict[str, Any]) -> dict[str, Any]:
    rows: dict[str, Any] = {"triton": d["triton"], "hash": d["hash"][:16]}
    rows.update({f"config.{k}": v for k, v in d["config"].items() if k != "constexprs"})
    rows.update({f"config.{k}": v for k, v in d["config"]["constexprs"].items()})
    rows.update(d["facts"])
    rows["ptxas_wgmma_serialized"] = d["ptxas_wgmma_serialized"]
    rows.update({f"ptx.{k}": v for k, v in d["ptx"].items()})
    rows["sass.instructions"] = d["sass_instructions"]
    for i, loop in enumerate(d["sass_loops"]):
        for k, v in loop.items():
            if k not in ("from", "to"):
                rows[f"sass.loop{i}.{k}"] = v
    return rows


def show(d: dict[str, Any]) -> None:
    print(f"{d['label']}  Triton {d['triton']}  {d['ptxas']}")
    for k, v in _flat(d).items():
        print(f"  {k:<40} {v}")


def diff(a: Path, b: Path) -> int:
    da, db = (json.loads((p / "facts.json").read_text(encoding="utf-8")) for p in (a, b))
    fa, fb = _flat(da), _flat(db)
    print(f"{'':<42} {a!s:<28} {b}")
    for k in dict.fromkeys([*fa, *fb]):
        va, vb = fa.get(k, "-"), fb.get(k, "-")
        print(f"{'*' if va != vb else ' '} {k:<40} {va!s:<28} {vb}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variant", nargs="?", help="a registered Triton variant, e.g. persistent")
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--m", type=int, default=16384, help="M = N")
    ap.add_argument("--layout", default="nt", choices=["nt", "nn"])
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument(
        "--config", help="BMxBNxBKwWsSpP[sub][gG] (tools/tune.py), instead of configs.py's"
    )
    ap.add_argument("--out", type=Path, help="directory for the stages and facts.json")
    ap.add_argument("--diff", nargs=2, type=Path, metavar=("DIR_A", "DIR_B"))
    ap.add_argument(
        "--override-without-fence",
        type=Path,
        metavar="DIR",
        help="also write the PTX minus fence.proxy.async as a TRITON_OVERRIDE_DIR tree, and "
        "compile it again through the override into --out/override (a timing experiment)",
    )
    args = ap.parse_args()
    if args.diff:
        return diff(*args.diff)
    if not args.variant or not args.out:
        ap.error("give a variant and --out (or --diff DIR_A DIR_B)")
    from kernels import VARIANTS

    variant = VARIANTS.get(args.variant)
    if variant is None or variant.plan is None:
        known = sorted(n for n, v in VARIANTS.items() if v.plan is not None)
        ap.error(f"no Triton variant {args.variant!r}; known: {known}")
    target = load_rules().targets[args.arch]
    extra: dict[str, Any] = {}
    if args.config:
        from tune import parse_config  # tools/tune.py's notation, parsed by tools/tune.py

        extra["config"] = parse_config(args.config)
    launch = variant.plan(
        args.m, args.m, args.k, dtype=args.dtype, layout=args.layout,
        capability=target.capability, num_sms=target.num_sms, **extra,
    )  # fmt: skip
    kernel, log, spec = compile_all(launch, target)
    label = f"{args.variant}-{args.dtype}-{args.layout}-K{args.k}-{args.arch}" + (
        f" config {args.config}" if args.config else ""
    )
    show(dump(kernel, log, spec, launch, args.out, label))
    if args.override_without_fence:
        path = write_override(kernel, launch, spec, args.override_without_fence)
        print(f"override PTX (fence.proxy.async removed): {path}")
        kernel2, log2, spec2 = compile_all(launch, target, args.override_without_fence)
        show(dump(kernel2, log2, spec2, launch, args.out / "override", label + " override"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
