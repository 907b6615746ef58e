#!/usr/bin/env bash
# The proof runs of the perf suite and the gate on a GPU machine, in one go:
#   1. `nox -s rebaseline -- --profile default --repeats 3` (run 1 from a cold Triton cache)
#   2. five back-to-back `nox -s perf -- --profile quick` against that baseline (run 1 cold)
#   3. a test-only slowed run: real kernels followed by ~10 % of their time of GPU spinning
#   4. a test-only broken cross-tile: the swizzle kernels registered under the cross-tile names
# Every nox call's exit code and wall time go to proof-summary.txt; all of .perf/ and the new
# baseline to proof.tgz. Usage: tools/gpu-proof.sh OUTDIR [measure|rebaseline|quick|inject|all]
# (nox importable by python3; `measure` = steps 1-2, `rebaseline` = step 1, `quick` = step 2,
# `inject` = steps 3-4, default all; QUICK_RUNS=N changes the number of quick runs, default 5)
set -uo pipefail
out=${1:?usage: tools/gpu-proof.sh OUTDIR [measure|rebaseline|quick|inject|all]}
what=${2:-all}
quick_runs=${QUICK_RUNS:-5}
mkdir -p "$out"
summary="$out/proof-summary.txt"
: > "$summary"
export PYTHONUNBUFFERED=1

step() {  # step NAME NOX-ARGS...: run nox, record exit code and wall time, keep .perf/ files
  local name=$1; shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  python3 -m nox "$@" 2>&1 | tee "$out/$name.log" | grep -E "^\[tilegate\]|tilegate: |passed|failed|nox > perf|nox > rebaseline|REGRESS|FAIL" | tail -25
  rc=${PIPESTATUS[0]}
  t1=$(date +%s.%N)
  printf '%-12s exit %s  %6.1f s  nox %s\n' "$name" "$rc" "$(python3 -c "print($t1 - $t0)")" "$*" | tee -a "$summary"
  mkdir -p "$out/perf-$name" && cp -r .perf/. "$out/perf-$name/" 2>/dev/null
}

case $what in measure|rebaseline|all)
  TRITON_CACHE_DIR=$(mktemp -d) step rebaseline -s rebaseline -- --profile default --repeats 3
  cp baselines/nvidia-h200.json "$out/" 2>/dev/null ;;
esac
case $what in measure|quick|all)
  TRITON_CACHE_DIR=$(mktemp -d) step quick-1 -s perf -- --profile quick
  for i in $(seq 2 "$quick_runs"); do step "quick-$i" -s perf -- --profile quick; done ;;
esac
case $what in measure|rebaseline|quick) cat "$summary"; exit 0 ;; esac
step slowed -s perf -- --profile quick \
  --inject slow=swizzle_persistent:0.10 --inject slow=tma_xtile_persistent:0.10
step impostor -s perf -- --profile quick \
  --inject impostor=xtile_persistent:swizzle_persistent \
  --inject impostor=tma_xtile_persistent:tma_swizzle_persistent
cat "$summary"
