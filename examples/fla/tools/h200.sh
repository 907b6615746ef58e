#!/usr/bin/env bash
# The fla example on an H200, end to end, into OUT (issue 39: autotuned kernels):
#
#   examples/fla/tools/h200.sh OUT
#
# Needs: python3 (or $PYTHON) with CUDA torch and Triton (the image's: torch 2.11, Triton 3.6)
# and tilegate's own dependencies; git; in examples/fla/.whl/ (ignored by git, carried with the
# tree; README.md says how to get them): fla_core-0.6.0-py3-none-any.whl,
# fla_core-0.5.2-py3-none-any.whl, einops-*.whl. Nothing is downloaded.
#
# Steps, on the quick profile (gdn / gla x fwd / bwd, bf16, T 2048 and 4096; every fla kernel
# autotuned):
#   w  warm TRITON_CACHE_DIR: tools/warm.py, one process per release (0.5.2 too with d or
#      WARM_052=1) and kernel at once, its autotune results deleted; then tools/warm.py --check
#      (each output of 0.6.0 against its reference); PACK=1 packs the cache into OUT/tcache.tgz.*
#      (put them in examples/fla/.tcache/ to seed a later run's caches: below); the later steps
#      of the same run start with each A/B side's cache seeded from the warmed one
#   a  perf --report-only, 0.6.0, from a cold Triton cache (compile + autotune + measure)
#   b  rebaseline --measure 3 -> OUT/baselines/<gpu-slug>.json: three processes, each autotuning;
#      a row whose runs picked differently is stored with its picks (the diff's warnings say so)
#   c  $AA A/A runs (default 5): perf --ab HEAD judged against b's baseline; each must be exit 0,
#      its picks in the results
#   d  upgrade-ab --old 0.5.2 --new 0.6.0: a verdict per op, picks named
#   e  upgrade-ab --old 0.6.0 --new 0.6.0 with the config that c-aa-1 picked for the first tuned
#      kernel of $EDIT_CASE removed from that kernel's config list (tools/edited_fla.py): that
#      case's code changed (its config space) and the report names both picks
# DEADLINE_S=N: no step runs past N seconds from the start (cut short: exit 124; one that
# would have less than 60 s is skipped).
# STEPS="b c e" runs only those (default: a b c d e; c needs b's baseline, or the example's
# baselines/ if one is committed; e needs c's first run, or EDIT_RESULTS=FILE).
# Then a table: step, exit code, wall seconds; and the picks of every case of c-aa-1.
set -uo pipefail

OUT=${1:?usage: examples/fla/tools/h200.sh OUT}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd) # examples/fla
ROOT=$(cd "$HERE/../.." && pwd)        # the tilegate checkout
PY=${PYTHON:-python3}
STEP_TIMEOUT=${STEP_TIMEOUT:-590}
PROFILE=${PROFILE:-quick}
AA=${AA:-5}
EDIT_CASE=${EDIT_CASE:-fla-gla-fwd-bf16-T4096}
read -r -a RUN <<<"${STEPS:-a b c d e}"
read -r -a EXTRA <<<"${EXTRA:-}"
exec > >(tee "$OUT/h200.log") 2>&1

say() { printf '\n=== %s\n' "$*"; }
die() {
    echo "h200.sh: $*" >&2
    exit 2
}
wants() { [[ " ${RUN[*]} " == *" $1 "* ]]; }

# --- each release with einops in a directory of its own -----------------------------------
einops=$(ls "$HERE"/.whl/einops-*.whl 2>/dev/null | head -1)
[ -n "$einops" ] || die "no $HERE/.whl/einops-*.whl (README.md: 'Wheels for an offline GPU machine')"
RELEASES=(0.6.0)
if wants d || [ -n "${WARM_052:-}" ]; then RELEASES+=(0.5.2); fi
for v in "${RELEASES[@]}"; do
    whl=$(ls "$HERE"/.whl/fla_core-"$v"-*.whl 2>/dev/null | head -1)
    [ -n "$whl" ] || die "no $HERE/.whl/fla_core-$v-*.whl (README.md)"
    rm -rf "/tmp/fla-$v"
    for w in "$whl" "$einops"; do
        "$PY" -m pip install -q --no-index --no-deps --target "/tmp/fla-$v" "$w" ||
            "$PY" -m zipfile -e "$w" "/tmp/fla-$v" || die "cannot unpack $w"
    done
done

say "environment"
PYTHONPATH="/tmp/fla-0.6.0:$ROOT" "$PY" - >"$OUT/env.txt" <<'PYEOF' || { cat "$OUT/env.txt"; die "the environment is not usable"; }
import importlib.metadata as md, sys
import fla, tilegate, torch, triton
from tilegate.harness.device import gpu_info
print(f"python {sys.version.split()[0]} torch {torch.__version__} triton {triton.__version__} "
      f"fla-core {md.version('fla-core')} ({fla.__file__}); tilegate from {tilegate.__file__}")
g = gpu_info()
print(f"gpu {g.name} slug={g.slug} sm_{g.capability[0]}{g.capability[1]} driver {g.driver}")
PYEOF
cat "$OUT/env.txt"

# --- a throwaway git repository holding the example (the A/A's base is its HEAD) -------------
REPO=$(mktemp -d /tmp/fla-repo.XXXXXX)/fla
mkdir -p "$REPO"
(cd "$HERE" && tar cf - --exclude=.perf --exclude=.whl --exclude=__pycache__ .) | (cd "$REPO" && tar xf -)
git -C "$REPO" init -q && git -C "$REPO" add -A
git -C "$REPO" -c user.name=h200 -c user.email=h200@localhost commit -q -m "fla example"
cd "$REPO" || die "no $REPO"

# one Triton cache for the run (fla also keeps its autotune timings there: FLA_CACHE_RESULTS);
# step a starts it cold; without a, a TRITON_CACHE_DIR given by the caller is used as it is.
# Seeded, when it does not exist yet, from the compiled kernels that step w packed
# ($HERE/.tcache/tcache.tgz.*, carried with the tree: a runner's persistent Triton cache) into
# this process's cache and each A/B side's own (tilegate.harness.sides.side_cache_dir): no
# autotune results are in them, so every process of the run still tunes for itself.
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/tilegate-fla-triton-cache}
seed_sides() { # each A/B side's own cache: hard links to this one's compiled kernels, no picks
    for side in head base; do
        rm -rf "$TRITON_CACHE_DIR/tilegate-side-$side"
        mkdir -p "$TRITON_CACHE_DIR/tilegate-side-$side"
        cp -al "$TRITON_CACHE_DIR/." "$TRITON_CACHE_DIR/tilegate-side-$side/triton.tmp" 2>/dev/null
        rm -rf "$TRITON_CACHE_DIR/tilegate-side-$side/triton.tmp"/tilegate-side-*
        mv "$TRITON_CACHE_DIR/tilegate-side-$side/triton.tmp" "$TRITON_CACHE_DIR/tilegate-side-$side/triton"
    done
}
if wants a; then rm -rf "$TRITON_CACHE_DIR"; fi
if [ ! -d "$TRITON_CACHE_DIR" ] && ls "$HERE"/.tcache/tcache.tgz.* >/dev/null 2>&1; then
    mkdir -p "$TRITON_CACHE_DIR" && cat "$HERE"/.tcache/tcache.tgz.* | tar xzf - -C "$TRITON_CACHE_DIR" ||
        die "cannot unpack $HERE/.tcache"
    seed_sides
    echo "seeded $TRITON_CACHE_DIR from $HERE/.tcache ($(du -sh "$TRITON_CACHE_DIR" | cut -f1))"
fi
NEW="/tmp/fla-0.6.0:$ROOT"
STEPS=()
step() { # step NAME PYTHONPATH ARGS...: `python -m tilegate ARGS`, its exit code and wall time
    local name=$1 pp=$2
    shift 2
    say "$name: tilegate $* ${EXTRA[*]}"
    local t0 rc limit=$STEP_TIMEOUT
    if [ -n "${DEADLINE_S:-}" ] && [ $((DEADLINE_S - SECONDS)) -lt "$limit" ]; then
        limit=$((DEADLINE_S - SECONDS)) # the whole run ends by DEADLINE_S seconds
    fi
    if [ "$limit" -lt 60 ]; then
        STEPS+=("$name skipped 0")
        echo "${STEPS[-1]}" >>"$OUT/steps.txt"
        return
    fi
    t0=$(date +%s.%N)
    PYTHONPATH="$pp" timeout -k 20 "$limit" "$PY" -m tilegate "$@" "${EXTRA[@]}"
    rc=$?
    STEPS+=("$name $rc $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")")
    echo "${STEPS[-1]}" >>"$OUT/steps.txt" # as each step ends: a run cut short keeps its steps
}

if wants w; then # warm the cache: each release's kernels compiled, one process per kernel
    say "w: warming $TRITON_CACHE_DIR (${RELEASES[*]}), then checking 0.6.0 output by output"
    t0=$(date +%s.%N)
    mkdir -p "$OUT/w"
    pids=()
    for v in "${RELEASES[@]}"; do
        for k in gdn-fwd gdn-bwd gla-fwd gla-bwd; do
            PYTHONPATH="/tmp/fla-$v:$HERE:$ROOT" timeout "$STEP_TIMEOUT" "$PY" "$HERE/tools/warm.py" \
                --kernels "$k" >"$OUT/w/$v-$k.txt" 2>&1 &
            pids+=($!)
        done
    done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    # picks timed by processes sharing the GPU: not worth keeping
    find "$TRITON_CACHE_DIR" -name '*.autotune.json' -delete
    cat "$OUT"/w/*.txt
    PYTHONPATH="/tmp/fla-0.6.0:$HERE:$ROOT" timeout "$STEP_TIMEOUT" "$PY" "$HERE/tools/warm.py" --check ||
        rc=$?
    find "$TRITON_CACHE_DIR" -name '*.autotune.json' -delete
    STEPS+=("w-warm $rc $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")")
    echo "${STEPS[-1]}" >>"$OUT/steps.txt"
    if [ -n "${PACK:-}" ]; then # the cache, in parts that come back from a lent machine
        tar czf - -C "$TRITON_CACHE_DIR" --exclude='./tilegate-side-*' . | split -b 15M - "$OUT/tcache.tgz."
        du -sh "$TRITON_CACHE_DIR" "$OUT"/tcache.tgz.*
    fi
    seed_sides # the later steps of this run start warm too
fi
if wants a; then
    step a-cold "$NEW" perf --profile "$PROFILE" --report-only --no-plots --out-dir "$OUT/a-cold"
fi
BASELINES=baselines
if wants b; then
    SLUG=$(PYTHONPATH="$ROOT" "$PY" -c 'from tilegate.harness.device import gpu_info; print(gpu_info().slug)')
    step b-rebaseline "$NEW" rebaseline --measure 3 --profile "$PROFILE" \
        --out "$OUT/baselines/$SLUG.json" --diff-out "$OUT/b-rebaseline.md"
    BASELINES="$OUT/baselines"
fi
if wants c; then
    for i in $(seq 1 "$AA"); do
        step "c-aa-$i" "$NEW" perf --profile "$PROFILE" --ab HEAD --baselines "$BASELINES" \
            --no-plots --out-dir "$OUT/c-aa-$i"
    done
fi
if wants d; then
    rm -rf .perf/upgrade-ab
    step d-upgrade "$ROOT" upgrade-ab --old /tmp/fla-0.5.2 --new /tmp/fla-0.6.0 \
        --profile "$PROFILE"
    rm -rf "$OUT/d-upgrade" && cp -r .perf/upgrade-ab "$OUT/d-upgrade" 2>/dev/null
fi
if wants e; then
    RESULTS=${EDIT_RESULTS:-$OUT/c-aa-1/results.json}
    PYTHONPATH="$ROOT" "$PY" "$HERE/tools/edited_fla.py" /tmp/fla-0.6.0 /tmp/fla-edited \
        --results "$RESULTS" --case "$EDIT_CASE" | tee "$OUT/e-edit.txt" || die "cannot edit fla"
    rm -rf .perf/upgrade-ab
    step e-edited "$ROOT" upgrade-ab --old /tmp/fla-0.6.0 --new /tmp/fla-edited \
        --profile "$PROFILE"
    rm -rf "$OUT/e-edited" && cp -r .perf/upgrade-ab "$OUT/e-edited" 2>/dev/null
fi

say "autotuner picks of c-aa-1 (case side: kernel key -> config)"
if [ -f "$OUT/c-aa-1/results.json" ]; then
    "$PY" - "$OUT/c-aa-1/results.json" <<'PYEOF' | tee "$OUT/picks.txt"
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    tg = b["extra_info"]["tilegate"]
    for p in tg.get("autotune") or []:
        c = p["config"]
        cfg = ", ".join([f"{k}={v}" for k, v in c["kwargs"].items()]
                        + [f"{k}={c[k]}" for k in ("num_warps", "num_stages")])
        print(f"{tg['key']:28} {tg.get('side', 'head'):4} {p['kernel']:48} {json.dumps(p['key'])} -> {cfg}")
PYEOF
fi

say "summary (exit: 0 holds, 1 regression / slower, 2 cannot judge, 124 timed out)"
{
    printf '%-12s %4s %8s\n' step exit wall_s
    for s in "${STEPS[@]}"; do
        read -r n rc w <<<"$s"
        printf '%-12s %4s %8s\n' "$n" "$rc" "$w"
    done
} | tee "$OUT/summary.txt"
