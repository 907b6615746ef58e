#!/usr/bin/env bash
# Pull requests judged on a GPU machine exactly the way perf.yml judges them: the work tree is
# committed as the base, each step commits one change on top of it (the pull request), and the
# BASE's `tilegate ci` (its tilegate/) runs with `--base HEAD^1 --via nox` (nox from the
# runner's own python3 through tools/gpu-nox.sh; TILEGATE_WHEELHOUSE for a runner without PyPI),
# confirmation as shipped. Each step's exit code, wall time, headline and deciding lines go to
# OUTDIR/summary.txt, its report / results / gate.json to OUTDIR/<step>.*.
#
#   tools/gpu-ci-path.sh OUTDIR STEP...
#
# Steps (quick profile unless said; STEP:N repeats it N times; cold+STEP: a bare Triton cache):
#   aa          nothing changed (an empty commit): A/A
#   aadefault   the same, default profile
#   onepct      tma_xtile_persistent launches 4 programs fewer (260 of 264): a ~1 % slowdown
#   stages      pointer sm_90 num_stages 3 -> 4 (default profile): one family changed
#   groupm      pointer sm_90 GROUP_M 8 -> 1 (default profile): one family changed
#   clone       `b = b.clone()` in the host wrapper: work outside the Triton kernels
#   clonedefault the same, default profile: every Triton variant changed
#   rename      xtile_persistent renamed xtile_persistent_v2 with its flatten off
#   unflatten   xtile_persistent's flatten off, name kept: a change in the kernel's loops
#   dropk       the PR drops K = 128 from perf_tests/ and makes tma_xtile_persistent ~1 % slower
#               at K = 128 only (its protocol edit is a change of the gate; the base's measures)
#   unsupported the PR's registry declares tma_xtile_persistent unsupported on sm_90 (a skip)
#   noise       this GPU's A/A noise (`tilegate ab-noise --measure 3`, quick) committed into the base,
#               as a maintainer calibrates a new GPU model (docs/ci.md); steps after it use it
#   temp64      the host wrapper allocates a 64 MiB temporary per call: MORE MEMORY
#   bisect20    20 commits on the base (every third a comment in kernels/_host.py, the others a
#               docs file, the 13th onepct's plan edit with CUT programs fewer, default 4), then
#               `tilegate bisect HEAD~20 HEAD --case tma_xtile_persistent-fp16-nt-K128` (quick):
#               the culprit named by compiled identity first, then paired steps, explained
# Environment: PACK=1 leaves OUTDIR as summary.txt and steps.tgz (a lent machine returns a few
# files a call); EXTRA="..." more options for tilegate perf in every step; bisect20's CUT, and its
# PROFILE and CASE (a dry run on a CPU: PROFILE=smoke CASE=tma_xtile_persistent-fp16-nt-K24).
set -uo pipefail
out=${1:?usage: tools/gpu-ci-path.sh OUTDIR STEP...}; shift
out=$(mkdir -p "$out" && cd "$out" && pwd); summary=$out/summary.txt; touch "$summary"
export PYTHONUNBUFFERED=1
if [ -n "$(git status --porcelain)" ]; then
  git add -A && git -c user.name=gpu -c user.email=gpu@localhost commit -qm "gpu-ci-path: the work tree as the base"
fi
base=$(git rev-parse HEAD)
trap 'git reset -q --hard "$base"' EXIT
# shellcheck source=tools/gpu-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"  # edit, stamp, pack
step() {  # step NAME [tilegate perf options...]: commit the work tree as the PR, judge it
  local name=$1; shift; local t0 rc dir gate cache
  while [ -e "$out/$name.log" ]; do name="$name+"; done
  git -c user.name=gpu -c user.email=gpu@localhost commit -q --allow-empty -am "pr: $name"
  dir=$(mktemp -d); gate=$(mktemp -d)
  git archive HEAD^1 tilegate | tar -x -C "$gate"  # the base's tilegate/, as perf.yml runs it
  cache=${TRITON_CACHE_DIR:-}
  if [ -n "${COLD:-}" ]; then cache=$(mktemp -d); fi
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  env ${cache:+TRITON_CACHE_DIR=$cache} PYTHONPATH="$gate" python3 -m tilegate ci --base HEAD^1 --via nox --out-dir "$dir" \
    -- --no-plots "$@" ${EXTRA:-} 2>&1 | stamp > "$out/$name.log"
  rc=${PIPESTATUS[0]}
  printf '%-12s exit %s %6.1f s  %s\n' "$name" "$rc" "$(python3 -c "import time;print(time.time()-$t0)")" \
    "$(head -n 1 "$dir/report.md" 2>/dev/null)" | tee -a "$summary"
  grep -m 8 -E "^\- \*\*|MEMORY|SLOWER|UNSTABLE|REMOVED|NOT MEASURED|not measured|TIME MOVED|rounds:|confirm" "$dir/report.md" 2>/dev/null \
    | cut -c1-300 | sed 's/^/    /' >> "$summary"
  for f in report.md results.json gate.json; do cp "$dir/$f" "$out/$name.$f" 2>/dev/null; done
  git reset -q --hard "$base"
  return 0
}
unflatten_xtile() {  # xtile_persistent's flatten off: its tile loop no longer fused into K's
  edit kernels/registry.py 'grouped=True,
        flatten=True,
        xtile_twin_of="swizzle_persistent",' 'grouped=True,
        flatten=False,
        xtile_twin_of="swizzle_persistent",'
}
for spec in "$@"; do
  COLD=""; if [ "${spec#cold+}" != "$spec" ]; then COLD=1; spec=${spec#cold+}; fi
  what=${spec%%:*}; n=${spec#*:}; [ "$n" = "$spec" ] && n=1
  for i in $(seq 1 "$n"); do
    case $what in
      aa) step aa ;;
      aadefault) step aadefault --profile default ;;
      onepct)
        edit kernels/tma.py 'programs = min(cfg.programs_per_sm * num_sms, num_tiles)' \
          'programs = min(cfg.programs_per_sm * num_sms - (4 if flatten else 0), num_tiles)'
        step onepct ;;
      stages)
        edit kernels/configs.py '("pointer", "sm_90"): Config(128, 256, 64, 8, num_warps=8, num_stages=3,' \
          '("pointer", "sm_90"): Config(128, 256, 64, 8, num_warps=8, num_stages=4,'
        step stages --profile default ;;
      groupm)
        edit kernels/configs.py '("pointer", "sm_90"): Config(128, 256, 64, 8,' '("pointer", "sm_90"): Config(128, 256, 64, 1,'
        step groupm --profile default ;;
      clone)
        edit kernels/_host.py '    return launch_kernel(variant, launch, a, b, c)' '    b = b.clone()
    return launch_kernel(variant, launch, a, b, c)'
        step clone ;;
      clonedefault)
        edit kernels/_host.py '    return launch_kernel(variant, launch, a, b, c)' '    b = b.clone()
    return launch_kernel(variant, launch, a, b, c)'
        step clonedefault --profile default ;;
      rename)
        edit kernels/registry.py '"xtile_persistent",
        "pointer",' '"xtile_persistent_v2",
        "pointer",'
        unflatten_xtile
        step rename ;;
      unflatten)
        unflatten_xtile
        step unflatten ;;
      dropk)
        edit perf_tests/test_matmul.py '(128, 512, 4096)' '(512, 4096)'
        edit kernels/tma.py 'programs = min(cfg.programs_per_sm * num_sms, num_tiles)' \
          'programs = min(cfg.programs_per_sm * num_sms - (4 if flatten and K <= 128 else 0), num_tiles)'
        step dropk ;;
      unsupported)
        edit kernels/registry.py 'xtile_twin_of="tma_swizzle_persistent",' \
          'xtile_twin_of="tma_swizzle_persistent",
        capabilities=((10, 0),),'
        step unsupported ;;
      noise)
        python3 -m tilegate ab-noise --measure 3 --profile quick > "$out/noise.log" 2>&1
        printf '%-12s exit %s  %s\n' noise "$?" "$(ls baselines/*.ab.json | tr '\n' ' ')" | tee -a "$summary"
        git add baselines && git -c user.name=gpu -c user.email=gpu@localhost commit -qm "A/A noise" && base=$(git rev-parse HEAD) ;;
      temp64)
        edit kernels/_host.py '    values = bind(variant, launch, a, b, c)' '    values = bind(variant, launch, a, b, c)
    _tmp = torch.empty(64 << 20, dtype=torch.int8, device=c.device)'
        step temp64 ;;
      bisect20)
        for c in $(seq 1 20); do
          if [ "$c" = 13 ]; then
            edit kernels/tma.py 'programs = min(cfg.programs_per_sm * num_sms, num_tiles)' \
              "programs = min(cfg.programs_per_sm * num_sms - (${CUT:-4} if flatten else 0), num_tiles)"
          elif [ $((c % 3)) = 0 ]; then
            echo "# bisect20: host comment $c" >> kernels/_host.py
          else
            echo "bisect20: line $c" >> docs/bisect-range.txt && git add docs/bisect-range.txt
          fi
          git -c user.name=gpu -c user.email=gpu@localhost commit -qam "bisect20: commit $c"
        done
        t0=$(date +%s.%N)
        python3 -m tilegate bisect HEAD~20 HEAD --case "${CASE:-tma_xtile_persistent-fp16-nt-K128}" \
          --profile "${PROFILE:-quick}" \
          2>&1 | stamp > "$out/bisect20.log"
        rc=${PIPESTATUS[0]}
        printf '%-12s exit %s %6.1f s  %s (CUT=%s; culprit: commit 13, %s)\n' bisect20 "$rc" \
          "$(python3 -c "import time;print(time.time()-$t0)")" "$(head -n 1 .perf/bisect/report.md 2>/dev/null)" \
          "${CUT:-4}" "$(git log -1 --format=%h HEAD~7)" | tee -a "$summary"
        cp .perf/bisect/report.md "$out/bisect20.report.md" 2>/dev/null
        cp .perf/bisect/bisect.json "$out/bisect20.bisect.json" 2>/dev/null
        git reset -q --hard "$base" ;;
      *) echo "unknown step $spec" | tee -a "$summary" ;;
    esac
  done
done
pack "$out"
