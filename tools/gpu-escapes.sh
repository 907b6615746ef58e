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
# predicted) | groupmab (pointer sm_90 GROUP_M 8 -> 1, default profile: one family changed)
# Environment: EXTRA="..." extra options for every run.
set -uo pipefail
out=${1:?usage: tools/gpu-escapes.sh OUTDIR STEP...}; shift
mkdir -p "$out"; summary=$out/summary.txt; touch "$summary"
export PYTHONUNBUFFERED=1
pristine=$(mktemp -d); cp -r kernels "$pristine/"
revert() { rm -rf kernels && cp -r "$pristine/kernels" kernels; }
trap revert EXIT
edit() {  # edit FILE OLD NEW: replace one exact snippet, or stop the step
  python3 - "$@" <<'PY'
import sys
from pathlib import Path
p, old, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
s = p.read_text()
assert s.count(old) == 1, f"{p}: snippet not found once: {old!r}"
p.write_text(s.replace(old, new))
PY
}
step() {  # step NAME ARGS...: one A/B run
  local name=$1; shift; local t0 rc
  t0=$(date +%s.%N)
  python3 -m tilegate perf --ab HEAD --no-plots --out-dir "/tmp/gate-$name" "$@" ${EXTRA:-} > "$out/$name.log" 2>&1
  rc=$?
  printf '%-10s exit %s %6.1f s  %s\n' "$name" "$rc" "$(python3 -c "import time;print(time.time()-$t0)")" \
    "$(head -n 1 /tmp/gate-$name/report.md 2>/dev/null)" | tee -a "$summary"
  grep -m 6 -E "^\- \*\*|SLOWER|REMOVED|TIME MOVED|rounds:" "/tmp/gate-$name/report.md" 2>/dev/null | cut -c1-400 | sed 's/^/    /' >> "$summary"
  cp "/tmp/gate-$name/report.md" "$out/$name.md" 2>/dev/null
  cp "/tmp/gate-$name/results.json" "$out/$name.json" 2>/dev/null
  return 0
}
for spec in "$@"; do
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
    groupmab)
      edit kernels/configs.py '("pointer", "sm_90"): Config(128, 256, 64, 8,' '("pointer", "sm_90"): Config(128, 256, 64, 1,'
      step groupmab --profile default; revert ;;
    *) echo "unknown step $spec" | tee -a "$summary" ;;
  esac
done
cat "$summary"
