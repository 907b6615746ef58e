#!/usr/bin/env bash
# The H200 runs of issue 19 (a pull request that tries to walk past the gate) and issue 21's
# sensitivity step, as `python3 -m tilegate perf --ab HEAD` runs of a checkout whose HEAD holds
# the committed code: each step changes the work tree the way a pull request would, runs the
# A/B, records exit code, wall time and the report's headline, and puts the tree back.
#
#   tools/gpu-escapes.sh OUTDIR STEP...
#
# Steps: aacold (A/A from a fresh Triton cache) | aa[:N] | rename (xtile_persistent renamed
# xtile_persistent_v2, its flatten off, no renamed_from) | zero (c.zero_() in the host wrapper
# before the launch) | comment (a comment in kernels/persistent.py) | onepct[:N]
# (tma_xtile_persistent launches 2 programs fewer: 262 of 264, one SM of 132 left idle, +0.8 %
# predicted) | kstep[:N] (tma_xtile_persistent does one K step more per tile at K >= 4096, 65
# instead of 64, the extra one fully out of bounds (TMA zero-fills it): +1/64 = +1.56 % of its
# MMA work at K = 4096, nothing at K < 4096; tma_swizzle_persistent's code stays the same;
# measured +11 % on the H200: an out-of-bounds step is not a cheap one, results-h200.md) |
# groupmab[:N] (pointer sm_90 GROUP_M 8 -> 1, default profile: one family changed) |
# wsgroup4[:N] (tma_ws sm_90 GROUP_M 8 -> 4, a retune a pull request could make: +1.7, +0.8 and
# +0.4 % at K = 128, 512, 4096 in round 6's 20-round sweep, results-h200.md; the ~1 % change of
# issue 21's sensitivity target, not yet run) |
# aafull[:N] (A/A with both sides of every case timed every round, --perf-ab-full: the runs
# `tilegate ab-noise RESULTS...` builds the A/B noise file from) | aafulldefault[:N] (the same,
# default profile) | stored[:N] (the committed code alone, default profile, --report-only: the
# runs `tilegate rebaseline RESULTS...` builds the stored baseline from) | wsab (tma_ws sm_90
# 128x256x64 -> 256x128x64, the WS sweep's best, A/B against HEAD; kept for the later steps, and
# committed as HEAD, when every K is faster with its whole 99 % interval below 1).
# Issue 31, what the default A/B costs as the number of changed variants grows (the confirmation
# as shipped: --confirm-runs 1, its suspects only, no second soak while the GPU is warm, none
# for a SLOWER case beyond doubt): costnone[:N] (the default profile's A/A: nothing changed) |
# stages4[:N] (pointer sm_90 num_stages 3 -> 4: one family changed and slower; 247 s on a fresh
# machine before issue 31, through gate_from_base.py --via nox; the target is <= 124 s) | costall[:N] (every Triton
# variant's host code changed, its speed not: a no-op line in kernels/_host.py's launch_kernel,
# which every Triton variant's call runs, so every Triton case is "changed" and SAME).
# Each step's log lines carry the seconds since the step began (where the wall time goes).
# A step written cold+STEP runs each of its runs with a fresh TRITON_CACHE_DIR (all compiled).
# Environment: EXTRA="..." extra options for every run.
set -uo pipefail
out=${1:?usage: tools/gpu-escapes.sh OUTDIR STEP...}; shift
mkdir -p "$out"; summary=$out/summary.txt; touch "$summary"
export PYTHONUNBUFFERED=1
# `--ab HEAD` must compare against the work tree's own code: on the lent GPU the copy of .git
# is the session's starting main, not the commits made since, so commit the tree as HEAD first
if [ -n "$(git status --porcelain)" ]; then
  git add -A && git -c user.name=gpu -c user.email=gpu@localhost commit -qm "gpu-escapes: the work tree as HEAD"
fi
pristine=$(mktemp -d); cp -r kernels "$pristine/"
revert() { rm -rf kernels && cp -r "$pristine/kernels" kernels; }
trap revert EXIT
# shellcheck source=tools/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"  # edit, stamp
step() {  # step NAME ARGS...: one A/B run (AB="" for a run without the A/B)
  local name=$1; shift; local t0 rc
  while [ -e "$out/$name.log" ]; do name="$name+"; done  # a step given twice keeps both runs
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  local cache=${TRITON_CACHE_DIR:-}
  if [ -n "${COLD:-}" ]; then cache=$(mktemp -d); fi  # a fresh Triton cache: everything compiles
  env ${cache:+TRITON_CACHE_DIR=$cache} \
    python3 -m tilegate perf ${AB---ab HEAD} --no-plots --out-dir "/tmp/gate-$name" "$@" ${EXTRA:-} 2>&1 | stamp > "$out/$name.log"
  rc=${PIPESTATUS[0]}
  printf '%-10s exit %s %6.1f s  %s\n' "$name" "$rc" "$(python3 -c "import time;print(time.time()-$t0)")" \
    "$(head -n 1 /tmp/gate-$name/report.md 2>/dev/null)" | tee -a "$summary"
  grep -m 6 -E "^\- \*\*|SLOWER|REMOVED|TIME MOVED|rounds:" "/tmp/gate-$name/report.md" 2>/dev/null | cut -c1-400 | sed 's/^/    /' >> "$summary"
  cp "/tmp/gate-$name/report.md" "$out/$name.md" 2>/dev/null
  cp "/tmp/gate-$name/results.json" "$out/$name.json" 2>/dev/null
  return 0
}
for spec in "$@"; do
  COLD=""; if [ "${spec#cold+}" != "$spec" ]; then COLD=1; spec=${spec#cold+}; fi
  what=${spec%%:*}; n=${spec#*:}; [ "$n" = "$spec" ] && n=1
  case $what in
    aacold) TRITON_CACHE_DIR=$(mktemp -d) step aacold ;;
    aa) for i in $(seq 1 "$n"); do step "aa$i"; done ;;
    rename)
      edit kernels/registry.py '"xtile_persistent",
        "pointer",' '"xtile_persistent_v2",
        "pointer",'
      edit kernels/registry.py 'grouped=True,
        flatten=True,
        xtile_twin_of="swizzle_persistent",' 'grouped=True,
        flatten=False,
        xtile_twin_of="swizzle_persistent",'
      step rename; revert ;;
    zero) edit kernels/_host.py '    return launch_kernel(variant, launch, a, b, c)' '    c.zero_()
    return launch_kernel(variant, launch, a, b, c)'; step zero; revert ;;
    comment) printf '\n# a comment-only change\n' >> kernels/persistent.py; step comment; revert ;;
    onepct)
      edit kernels/tma.py 'programs = min(cfg.programs_per_sm * num_sms, num_tiles)' \
        'programs = min(cfg.programs_per_sm * num_sms - (2 if flatten else 0), num_tiles)'
      for i in $(seq 1 "$n"); do step "onepct$i" --confirm-runs 0; done; revert ;;
    kstep)
      edit kernels/tma.py '    k_tiles = cdiv(K, BLOCK_K)
    start = tl.program_id(0)' '    k_tiles = cdiv(K, BLOCK_K)
    if FLATTEN:
        k_tiles += K // 4096
    start = tl.program_id(0)'
      for i in $(seq 1 "$n"); do step "kstep$i" --confirm-runs 0; done; revert ;;
    aafull) for i in $(seq 1 "$n"); do step "aafull$i" --perf-ab-full --confirm-runs 0; done ;;
    aafulldefault)
      for i in $(seq 1 "$n"); do step "aafulldefault$i" --profile default --perf-ab-full --confirm-runs 0; done ;;
    stored) for i in $(seq 1 "$n"); do AB="" step "stored$i" --profile default --report-only; done ;;
    wsab)
      edit kernels/configs.py '("tma_ws", "sm_90"): Config(128, 256, 64, 8,' '("tma_ws", "sm_90"): Config(256, 128, 64, 8,'
      step wsab --confirm-runs 0
      if python3 - /tmp/gate-wsab/results.json >> "$summary" <<'PY'
import sys
from tilegate.judge.abcompare import compare_ab
from tilegate.store.files import load_results
ws = [c for c in compare_ab(load_results(sys.argv[1]), None).cases if c.variant == "tma_ws_persistent"]
for c in ws:
    print(f"    {c.key}: 256x128x64 / 128x256x64 = {c.ratio:.4f} (99 % {c.ci[0]:.4f}..{c.ci[1]:.4f})")
sys.exit(0 if ws and all(c.ci is not None and c.ci[1] < 1.0 for c in ws) else 1)
PY
      then
        echo "    wsab: 256x128x64 adopted for the later steps (committed as HEAD)" | tee -a "$summary"
        git -c user.name=gpu -c user.email=gpu@localhost commit -qam "tma_ws sm_90: 256x128x64"
        rm -rf "$pristine/kernels" && cp -r kernels "$pristine/"
      else
        echo "    wsab: 128x256x64 kept" | tee -a "$summary"; revert
      fi ;;
    wsgroup4)
      edit kernels/configs.py '("tma_ws", "sm_90"): Config(256, 128, 64, 8,' '("tma_ws", "sm_90"): Config(256, 128, 64, 4,'
      for i in $(seq 1 "$n"); do step "wsgroup4-$i" --confirm-runs 0; done; revert ;;
    groupmab)
      edit kernels/configs.py '("pointer", "sm_90"): Config(128, 256, 64, 8,' '("pointer", "sm_90"): Config(128, 256, 64, 1,'
      for i in $(seq 1 "$n"); do step "groupmab$i" --profile default; done; revert ;;
    costnone)
      for i in $(seq 1 "$n"); do step "costnone$i" --profile default; done ;;
    stages4)
      edit kernels/configs.py '("pointer", "sm_90"): Config(128, 256, 64, 8, num_warps=8, num_stages=3,' \
        '("pointer", "sm_90"): Config(128, 256, 64, 8, num_warps=8, num_stages=4,'
      for i in $(seq 1 "$n"); do step "stages4-$i" --profile default; done; revert ;;
    costall)
      edit kernels/_host.py '    values = bind(variant, launch, a, b, c)' '    values = bind(variant, launch, a, b, c)
    assert values is not None  # issue 31 cost step: host code changed, speed not'
      for i in $(seq 1 "$n"); do step "costall$i" --profile default; done; revert ;;
    *) echo "unknown step $spec" | tee -a "$summary" ;;
  esac
done
cat "$summary"
