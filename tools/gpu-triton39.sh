#!/usr/bin/env bash
# Issue 21, part 4, on the H200: is Triton 3.9's proxy fence what slows `persistent` at K = 128,
# and does a config win it back (docs/fingerprint.md, "Triton 3.9 and `persistent` at K = 128")?
#
#   tools/gpu-triton39.sh OUTDIR [ROUNDS]
#
# Needs, carried to the GPU machine (both git-ignored):
#   .triton/triton-3.9.0.tar.xz   tools/slim-triton.sh 3.9.0 .triton (Triton 3.9 for sm_90)
#   .perf/no-fence/               the 3.9 PTX of persistent, swizzle_persistent and xtile_persistent
#                                 minus `fence.proxy.async`, written on a CPU machine by
#     for v in persistent swizzle_persistent xtile_persistent; do
#       TRITON_DEFAULT_FP_FUSION=1 PYTHONPATH=. VENV39/bin/python tools/compile_diff.py $v --k 128 \
#         --out /tmp/cd/ovr-$v --override-without-fence .perf/no-fence
#     done
# Three tools/tune.py sweeps of the pointer family, the same configs and registered variants,
# each in its own process: Triton 3.6 (the image's), 3.9, and 3.9 with the no-fence PTX. Two
# processes are compared through their /cuBLAS column (cuBLAS does not change with Triton);
# within one process every column is paired per round. The no-fence run's Triton cache is
# searched afterwards: the override took only if its PTX has no fence.
set -uo pipefail
out=${1:?usage: tools/gpu-triton39.sh OUTDIR [ROUNDS]}; rounds=${2:-100}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
t39=/tmp/triton-3.9.0
mkdir -p $t39 && xz -dc .triton/triton-3.9.0.tar.xz | tar -x -C $t39 || exit 2
sweep() {  # sweep NAME CONFIGS ENV...: one tune.py run, its table in OUTDIR/NAME.txt
  local name=$1 cfgs=$2; shift 2; local t0=$SECONDS
  env "$@" python3 tools/tune.py --family pointer --ks 128,512,4096 --layout nt --rounds "$rounds" \
    --also swizzle_persistent,persistent,xtile_persistent,tiled --configs "$cfgs" > "$out/$name.txt" 2>&1
  echo "$name: exit $? in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
}
all=128x256x64w8s3p1,128x256x128w8s2p1,128x128x64w8s3p2
nofence_cache=$(mktemp -d)
sweep tune36 "$all" TRITON_CACHE_DIR="$(mktemp -d)"
sweep tune39 "$all" PYTHONPATH=$t39 TRITON_DEFAULT_FP_FUSION=1 TRITON_CACHE_DIR="$(mktemp -d)"
sweep tune39-nofence 128x256x64w8s3p1 PYTHONPATH=$t39 TRITON_DEFAULT_FP_FUSION=1 \
  TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR="$PWD/.perf/no-fence" TRITON_CACHE_DIR="$nofence_cache"
grep -h "^Triton\|Triton 3" "$out"/tune39*.txt | head -2 >> "$out/summary.txt"
echo "no-fence run, fence.proxy.async lines in each cached persistent_matmul_kernel.ptx:" >> "$out/summary.txt"
find "$nofence_cache" -name persistent_matmul_kernel.ptx -exec grep -c fence.proxy.async {} + >> "$out/summary.txt"
for f in tune36 tune39 tune39-nofence; do
  echo "== $f"; sed -n '/L2 flushed/,$p' "$out/$f.txt"
done | tee -a "$out/summary.txt"
