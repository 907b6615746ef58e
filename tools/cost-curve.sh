#!/usr/bin/env bash
# How an A/B's wall time grows with what the pull request changes (issue 31, item 2): a
# benchmark, not a test. On a GPU machine:
#
#   tools/cost-curve.sh OUTDIR
#
# 1. matmul, default profile, exactly as perf.yml judges a pull request (tools/gpu-ci-path.sh:
#    the base's gate_from_base.py --via nox, confirmation on):
#      none: aadefault (an empty commit); one family: groupm (pointer sm_90 GROUP_M 8 -> 1, 3 of
#      the 8 Triton variants); all: clonedefault (`b = b.clone()` in the host wrapper: every
#      Triton variant).
# 2. examples/liger, quick profile, in a throwaway git repository of the example (an outside
#    repository: `python -m tilegate perf --ab HEAD^1` with the example's baselines; Liger from
#    examples/liger/.whl/liger_kernel-0.8.5-*.whl, carried with the tree):
#      none: an empty commit; one family: rms_norm's Liger call copies x first (a wrapper-side
#      op in 2 of the 6 ops x passes); all: every Liger call's output multiplied by 1 (an extra
#      kernel forward and backward, every Liger case).
# 3. a repository made by `tilegate init` (quick profile): its Triton kernel's num_warps 4 -> 8.
# Then a table: benchmark, what changed, exit code, wall seconds, changed cases and the seconds
# the run spent on unchanged ones, and each changed case's first explanation line.
# Environment: STEPS="matmul liger toy" (default: all three); MATMUL="aadefault groupm
# clonedefault" (the matmul runs, default all three); TILEGATE_WHEELHOUSE for nox;
# PROFILE=smoke for a dry run of the Liger and toy steps on a CPU (timings mean nothing);
# PYTHON: the interpreter with torch and Triton (default python3).
set -uo pipefail
out=${1:?usage: tools/cost-curve.sh OUTDIR}
out=$(mkdir -p "$out" && cd "$out" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
read -r -a RUN <<<"${STEPS:-matmul liger toy}"
PROFILE=${PROFILE:-quick}  # the Liger and toy steps' profile (smoke: a dry run on a CPU)
wants() { [[ " ${RUN[*]} " == *" $1 "* ]]; }
# shellcheck source=tools/gpu-lib.sh
source "$ROOT/tools/gpu-lib.sh"  # edit, stamp
rows=()

run_ab() {  # run_ab BENCH CHANGE PYTHONPATH DIR ARGS...: `tilegate perf --ab HEAD^1` in this repo
  local bench=$1 change=$2 pp=$3 dir=$4; shift 4
  local t0 rc
  t0=$(date +%s.%N)
  PYTHONPATH="$pp" "${PYTHON:-python3}" -m tilegate perf --ab HEAD^1 --no-plots --out-dir "$dir" "$@" 2>&1 \
    | stamp > "$dir.log"
  rc=${PIPESTATUS[0]}
  rows+=("$bench|$change|$rc|$(python3 -c "import time;print(f'{time.time()-$t0:.1f}')")|$dir")
}

commit() { git -c user.name=cost -c user.email=cost@localhost commit -q --allow-empty -am "$1"; }

if wants matmul; then
  read -r -a steps <<<"${MATMUL:-aadefault groupm clonedefault}"
  (cd "$ROOT" && tools/gpu-ci-path.sh "$out/matmul" "${steps[@]}")
  for s in aadefault:none groupm:one-family clonedefault:all; do
    name=${s%%:*}
    line=$(grep -m1 "^$name " "$out/matmul/summary.txt") || continue
    rc=$(awk '{print $3}' <<<"$line"); wall=$(awk '{print $4}' <<<"$line")
    rows+=("matmul (default)|${s#*:} ($name)|$rc|$wall|$out/matmul/$name")
  done
fi

if wants liger; then
  whl=$(ls "$ROOT"/examples/liger/.whl/liger_kernel-0.8.5-*.whl 2>/dev/null | head -1)
  if [ -z "$whl" ]; then
    echo "cost-curve: no examples/liger/.whl/liger_kernel-0.8.5-*.whl: the Liger steps skipped" >&2
  else
    lib=$(mktemp -d); python3 -m zipfile -e "$whl" "$lib"
    repo=$(mktemp -d)/liger; mkdir -p "$repo"
    (cd "$ROOT/examples/liger" && tar cf - --exclude=.perf --exclude=.whl --exclude=__pycache__ .) \
      | (cd "$repo" && tar xf -)
    (
      rows=()
      cd "$repo" && git init -q && git add -A && commit "liger example"
      pp="$lib:$ROOT"
      commit "none"; run_ab liger "none" "$pp" "$out/liger-none" --profile "$PROFILE"; git reset -q --hard HEAD^1
      edit liger_bench/ops.py 'lambda lf, x, w: lf.liger_rms_norm(x, w, EPS, 0.0, "llama", True),' \
        'lambda lf, x, w: lf.liger_rms_norm(x.clone(), w, EPS, 0.0, "llama", True),'
      commit "one"; run_ab liger "one family (rms_norm: x.clone())" "$pp" "$out/liger-one" --profile "$PROFILE"
      git reset -q --hard HEAD^1
      edit liger_bench/ops.py 'return _factory(lambda *xs: liger(lf, *xs), params, inputs)' \
        'return _factory(lambda *xs: liger(lf, *xs) * 1, params, inputs)'
      commit "all"; run_ab liger "all (every output * 1)" "$pp" "$out/liger-all" --profile "$PROFILE"
      printf '%s\n' "${rows[@]}" > "$out/.liger-rows"
    )
    mapfile -t -O "${#rows[@]}" rows < "$out/.liger-rows"; rm -f "$out/.liger-rows"
  fi
fi

if wants toy; then
  toy=$(mktemp -d)/toy; mkdir -p "$toy"
  (
    rows=()
    cd "$toy" && git init -q
    PYTHONPATH="$ROOT" "${PYTHON:-python3}" -m tilegate init --package toy > "$out/toy-init.log" 2>&1
    git add -A && commit "tilegate init"
    edit toy/kernels.py 'BLOCK=1024)' 'BLOCK=1024, num_warps=8)'
    commit "num_warps 4 -> 8"
    run_ab toy "num_warps 4 -> 8" "$toy:$ROOT" "$out/toy-warps" --profile "$PROFILE"
    printf '%s\n' "${rows[@]}" > "$out/.toy-rows"
  )
  mapfile -t -O "${#rows[@]}" rows < "$out/.toy-rows"; rm -f "$out/.toy-rows"
fi

{
  printf '| benchmark | changed | exit | wall s | changed cases / time on unchanged cases |\n|---|---|---:|---:|---|\n'
  for r in "${rows[@]}"; do
    IFS='|' read -r bench change rc wall dir <<<"$r"
    report=$dir/report.md; [ -f "$report" ] || report=$dir.report.md
    rounds=$(grep -m1 -o '^\*rounds: [^*]*' "$report" 2>/dev/null | cut -c10-160)
    printf '| %s | %s | %s | %s | %s |\n' "$bench" "$change" "$rc" "$wall" "${rounds:-?}"
  done
  echo
  echo "Explanations (the first of each run):"
  for r in "${rows[@]}"; do
    IFS='|' read -r bench change rc wall dir <<<"$r"
    report=$dir/report.md; [ -f "$report" ] || report=$dir.report.md
    grep -m2 '<summary><code>' "$report" 2>/dev/null | sed 's/<[^>]*>//g; s/&gt;/>/g' \
      | cut -c1-220 | sed "s/^/  $bench, $change: /"
  done
} | tee "$out/cost-curve.md"
