#!/usr/bin/env bash
# The proof runs of the perf suite and the gate on a GPU machine, step by step, as a user runs
# them (nox, the runner's own python3). Every step's exit code, wall time and a summary of what
# the gate said go to OUTDIR/proof-summary.txt; each step's .perf/ (results, reports, no plots)
# to OUTDIR/perf-<step>.tar.xz.
#
#   tools/gpu-proof.sh OUTDIR STEP...
#
# Steps (run in the order given):
#   quick[:N]        N x `nox -s perf` (quick, stored baseline); the first from a cold Triton cache
#   default          `nox -s perf -- --profile default`
#   aa[:N]           N x `nox -s perf -- --ab HEAD` (A/A: the same code on both sides)
#   noise            `tilegate ab-noise` from the aa runs so far -> baselines/<gpu>.ab.json (and OUTDIR)
#   detect[:N]       N x A/B against HEAD with one real code change: tma_xtile_persistent launches
#                    10 programs fewer (16384 tiles over 254 instead of 264 programs: 65 instead of
#                    63 tiles for the busiest program, ~+3 %); the change is reverted afterwards
#   groupm           pointer sm_90 GROUP_M 8 -> 1 (kernels/configs.py): `nox -s perf` against the
#                    stored baseline (quick); reverted
#   groupmab         the same change, `nox -s perf -- --ab HEAD --profile default`; reverted
#   abdefault        `nox -s perf -- --ab HEAD --profile default` (A/A, the default profile's time)
#   rebaseline       `nox -s rebaseline -- --profile default --repeats 3` (writes baselines/)
#   wscheck          `nox -s perf -- --report-only` on the reference, TMA cross-tile and warp-specialized
#                    variants: do they compile and compute right here?
# Environment: NOX="python3 -m nox" (how to call nox), EXTRA="..." (extra posargs for every step),
# DETECT_EXTRA="..." (extra posargs of the detect runs), AA_SEED="a.json b.json" (A/A results of
# earlier calls that the noise step pools with this call's).
set -uo pipefail
out=${1:?usage: tools/gpu-proof.sh OUTDIR STEP...}
shift
mkdir -p "$out"
summary=${SUMMARY:-$out/proof-summary.txt}
touch "$summary"
export PYTHONUNBUFFERED=1
nox=${NOX:-python3 -m nox}
read -r -a aa_runs <<< "${AA_SEED:-}"

step() {  # step NAME NOX-ARGS...: run nox, record exit code, wall time and the gate's summary
  local name=$1; shift
  local t0 t1 rc
  rm -rf .perf
  t0=$(date +%s.%N)
  $nox "$@" > "$out/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%-14s exit %s %6.1f s  nox %s\n' "$name" "$rc" "$(python3 -c "print($t1 - $t0)")" "$*" | tee -a "$summary"
  python3 tools/proof_summary.py .perf 2>&1 | tee -a "$summary"
  tail -n 3 "$out/$name.log" | sed 's/^/    | /' >> "$summary"
  if [ -d .perf ]; then
    tar -cJf "$out/perf-$name.tar.xz" --exclude='*.png' --exclude='ab' .perf 2>/dev/null
  fi
  return 0
}

# The steps that change kernels/ put it back from this copy (not from git: the checkout's index
# need not hold the tree being measured).
pristine=$(mktemp -d)
cp -r kernels "$pristine/"
revert() { rm -rf kernels && cp -r "$pristine/kernels" kernels; }
trap revert EXIT

for spec in "$@"; do
  what=${spec%%:*}
  n=${spec#*:}; [ "$n" = "$spec" ] && n=1
  case $what in
    quick)
      for i in $(seq 1 "$n"); do
        if [ "$i" = 1 ]; then export TRITON_CACHE_DIR=$(mktemp -d); fi
        step "quick-$i" -s perf -- --profile quick ${EXTRA:-}
        unset TRITON_CACHE_DIR
      done ;;
    default) step default -s perf -- --profile default ${EXTRA:-} ;;
    aa)
      for i in $(seq 1 "$n"); do
        k=$(( ${#aa_runs[@]} + 1 ))
        step "aa-$k" -s perf -- --ab HEAD --no-plots ${EXTRA:-}
        [ -f .perf/results.json ] && cp .perf/results.json "$out/aa-$k.json" && aa_runs+=("$out/aa-$k.json")
      done ;;
    noise)
      PYTHONPATH=. python3 -m tilegate ab-noise "${aa_runs[@]}" 2>&1 | tail -n 30 | tee -a "$summary"
      cp baselines/*.ab.json "$out/" 2>/dev/null ;;
    detect)
      python3 - <<'EOF'
from pathlib import Path
p = Path("kernels/tma.py"); s = p.read_text()
old = "    programs = min(cfg.programs_per_sm * num_sms, num_tiles)\n    transposed"
assert old in s, "kernels/tma.py changed: update the detect step"
s = s.replace(old, "    programs = min(cfg.programs_per_sm * num_sms - (10 if flatten else 0), num_tiles)\n    transposed")
p.write_text(s)
EOF
      for i in $(seq 1 "$n"); do step "detect-$i" -s perf -- --ab HEAD --no-plots ${DETECT_EXTRA:-} ${EXTRA:-}; done
      revert ;;
    groupm|groupmab)
      python3 - <<'EOF'
from pathlib import Path
p = Path("kernels/configs.py"); s = p.read_text()
old = '("pointer", "sm_90"): Config(128, 256, 64, 8,'
assert old in s, "kernels/configs.py changed: update the groupm step"
p.write_text(s.replace(old, '("pointer", "sm_90"): Config(128, 256, 64, 1,'))
EOF
      if [ "$what" = groupm ]; then
        step groupm-stored -s perf -- --profile quick ${EXTRA:-}
      else
        step groupm-ab -s perf -- --ab HEAD --profile default --no-plots ${EXTRA:-}
      fi
      revert ;;
    wscheck)
      step wscheck -s perf -- --report-only --perf-variants torch,tma_xtile_persistent,tma_ws_persistent
      if ! grep -q "^wscheck *exit 0" "$summary"; then  # keep the other steps measurable
        EXTRA="--perf-variants torch,tiled,grouped,persistent,swizzle_persistent,xtile_persistent,tma_swizzle_persistent,tma_xtile_persistent ${EXTRA:-}"
        echo "wscheck failed: the warp-specialized variants are left out of the next steps" | tee -a "$summary"
      fi ;;
    abdefault) step abdefault -s perf -- --ab HEAD --profile default --no-plots ${EXTRA:-} ;;
    rebaseline)
      step rebaseline -s rebaseline -- --profile default --repeats 3 ${EXTRA:-}
      cp baselines/*.json "$out/" 2>/dev/null ;;
    *) echo "unknown step $spec" | tee -a "$summary" ;;
  esac
done
cat "$summary"
