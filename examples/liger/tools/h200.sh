#!/usr/bin/env bash
# The Liger example on an H200, end to end, into OUT (docs/liger.md, "Measured on the H200"):
#
#   examples/liger/tools/h200.sh OUT
#
# Needs: python3 (or $PYTHON) with CUDA torch and Triton (the image's: torch 2.11, Triton 3.6)
# and tilegate's own dependencies (numpy, scipy, packaging, pytest, pytest-benchmark); git; the
# two Liger wheels in examples/liger/.whl/ (ignored by git, carried with the tree):
#   liger_kernel-0.8.5-py3-none-any.whl, liger_kernel-0.8.4-py3-none-any.whl
# Nothing is downloaded.
#
# Steps, all on the quick profile (6 groups, bf16, 8192 tokens x 4096: the profile `tilegate
# perf` runs when not told otherwise, so the baseline covers what CI and users run):
#   a  perf --report-only from a cold Triton cache (0.8.5), timed: compile + measure
#   b  rebaseline --measure 3 -> OUT/baselines/<gpu-slug>.json (nvidia-h200.json on an H200)
#   c  $AA A/A runs (default 3): perf --ab HEAD, judged against b's baseline too
#   d  upgrade-ab --old 0.8.4 --new 0.8.5: an A/B of the two releases, a verdict per case
#   e  upgrade-ab --old 0.8.5 --new 0.8.5 edited by tools/edited_liger.py (rms_norm backward's
#      and swiglu forward's num_warps, layer_norm backward's row loop): each changed kernel's
#      verdict and why it changed (the report's "Why it changed")
# STEPS="b c d" runs only those (default: a b c d); without b, c is judged against the
# example's committed baselines/. Step d alone needs the 0.8.4 wheel.
# then a table: step, exit code, wall seconds. Estimated ~5.5 min of GPU wall in all (a ~40 s,
# b ~85 s, c ~90 s, d ~115 s; a warm quick run ~28 s: ~10 s CUDA/torch start, ~13 s warm-up,
# soak and timed rounds, the rest checks and the report).
#
# The runs happen in a git copy of examples/liger (a throwaway repository of its own): an A/B
# takes the base's [tool.tilegate] from `git show REF:pyproject.toml`, which inside the tilegate
# checkout is tilegate's own table (kernels/), not this example's.
#
# A dry run of the script itself on a CPU: PROFILE=smoke (Triton interpreter; timings mean
# nothing); EXTRA="--perf-axis=kernel=rms_norm-bwd" (suite options given to every step) shortens it.
set -uo pipefail

OUT=${1:?usage: examples/liger/tools/h200.sh OUT}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd) # examples/liger
ROOT=$(cd "$HERE/../.." && pwd)        # the tilegate checkout (tilegate/ is imported from here)
PY=${PYTHON:-python3}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
PROFILE=${PROFILE:-quick}
AA=${AA:-3}
read -r -a RUN <<<"${STEPS:-a b c d}"
read -r -a EXTRA <<<"${EXTRA:-}"
exec > >(tee "$OUT/h200.log") 2>&1

say() { printf '\n=== %s\n' "$*"; }
die() {
    echo "h200.sh: $*" >&2
    exit 2
}

# --- the two releases, each in a directory of its own ---------------------------------------
wants() { [[ " ${RUN[*]} " == *" $1 "* ]]; }
RELEASES=(0.8.5)
if wants d; then RELEASES+=(0.8.4); fi
for v in "${RELEASES[@]}"; do
    whl=$(ls "$HERE"/.whl/liger_kernel-"$v"-*.whl 2>/dev/null | head -1)
    [ -n "$whl" ] || die "no $HERE/.whl/liger_kernel-$v-*.whl (README.md: 'Wheels for an offline GPU machine')"
    rm -rf "/tmp/liger-$v"
    if ! "$PY" -m pip install -q --no-index --no-deps --target "/tmp/liger-$v" "$whl"; then
        # no pip: a pure-Python wheel is a zip of the package and its dist-info
        "$PY" -m zipfile -e "$whl" "/tmp/liger-$v" || die "cannot unpack $whl"
    fi
done

say "environment"
command -v git >/dev/null || die "no git: the A/A runs (--ab HEAD) need it"
cat >"$OUT/.env.py" <<'PYEOF'
import importlib.metadata as md
import sys

import liger_kernel
import pytest_benchmark  # noqa: F401
import scipy  # noqa: F401
import tilegate
import torch
import triton

print(f"python {sys.version.split()[0]} torch {torch.__version__} triton {triton.__version__} "
      f"liger_kernel {md.version('liger_kernel')} ({liger_kernel.__file__})")
print(f"pytest-benchmark {md.version('pytest-benchmark')}, tilegate from {tilegate.__file__}")
if sys.argv[1] != "smoke":
    from tilegate.harness.device import gpu_info

    g = gpu_info()
    print(f"gpu {g.name} slug={g.slug} sm_{g.capability[0]}{g.capability[1]} driver {g.driver}")
PYEOF
PYTHONPATH="/tmp/liger-0.8.5:$ROOT" "$PY" "$OUT/.env.py" "$PROFILE" >"$OUT/env.txt" ||
    { cat "$OUT/env.txt"; die "the environment is not usable (above)"; }
rm -f "$OUT/.env.py"
if [ "$PROFILE" = smoke ]; then
    SLUG=smoke
else
    SLUG=$(PYTHONPATH="$ROOT" "$PY" -c 'from tilegate.harness.device import gpu_info; print(gpu_info().slug)')
    nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv >>"$OUT/env.txt" 2>&1 || true
fi
cat "$OUT/env.txt"
[ "$SLUG" = nvidia-h200 ] || echo "h200.sh: note: the baseline's GPU slug is $SLUG, not nvidia-h200"

# --- a throwaway git repository holding the example -----------------------------------------
REPO=$(mktemp -d /tmp/liger-repo.XXXXXX)/liger
mkdir -p "$REPO"
(cd "$HERE" && tar cf - --exclude=.perf --exclude=.whl --exclude=__pycache__ --exclude=.benchmarks .) |
    (cd "$REPO" && tar xf -)
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=h200 -c user.email=h200@localhost commit -q \
    -m "liger example at tilegate $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
cd "$REPO" || die "no $REPO"

export TRITON_CACHE_DIR=/tmp/tilegate-liger-triton-cache
rm -rf "$TRITON_CACHE_DIR" # step a starts cold; the later steps reuse what it compiled
NEW="/tmp/liger-0.8.5:$ROOT"
STEPS=()

step() { # step NAME PYTHONPATH ARGS...: `python -m tilegate ARGS`, its exit code and wall time
    local name=$1 pp=$2
    shift 2
    say "$name: tilegate $* ${EXTRA[*]}"
    local t0 t1 rc
    t0=$(date +%s.%N)
    PYTHONPATH="$pp" timeout "$STEP_TIMEOUT" "$PY" -m tilegate "$@" "${EXTRA[@]}"
    rc=$?
    t1=$(date +%s.%N)
    STEPS+=("$name $rc $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")")
}

BASELINES=baselines
if wants a; then
    step a-quick-cold "$NEW" perf --profile "$PROFILE" --report-only --no-plots --out-dir "$OUT/a-quick-cold"
fi
if wants b; then
    step b-rebaseline "$NEW" rebaseline --measure 3 --profile "$PROFILE" \
        --out "$OUT/baselines/$SLUG.json" --diff-out "$OUT/b-rebaseline.md"
    mkdir -p "$OUT/b-runs" && cp .perf/rebaseline/run-*.json "$OUT/b-runs/" 2>/dev/null
    BASELINES="$OUT/baselines"
fi
if wants c; then
    for i in $(seq 1 "$AA"); do
        step "c-aa-$i" "$NEW" perf --profile "$PROFILE" --ab HEAD --baselines "$BASELINES" \
            --no-plots --out-dir "$OUT/c-aa-$i"
    done
fi
if wants d; then
    step d-upgrade "$ROOT" upgrade-ab --old /tmp/liger-0.8.4 --new /tmp/liger-0.8.5 \
        --profile "$PROFILE"
    mkdir -p "$OUT/d-upgrade" && cp .perf/upgrade-ab/*.json .perf/upgrade-ab/report.md "$OUT/d-upgrade/" 2>/dev/null
fi
if wants e; then
    "$PY" "$HERE/tools/edited_liger.py" /tmp/liger-0.8.5 /tmp/liger-edited || die "cannot edit Liger"
    rm -rf .perf/upgrade-ab
    step e-edited "$ROOT" upgrade-ab --old /tmp/liger-0.8.5 --new /tmp/liger-edited \
        --profile "$PROFILE"
    rm -rf "$OUT/e-edited" && cp -r .perf/upgrade-ab "$OUT/e-edited"
fi

say "summary (exit: 0 holds, 1 regression / slower, 2 cannot judge, 124 timed out)"
{
    printf '%-14s %4s %8s\n' step exit wall_s
    total=0
    for s in "${STEPS[@]}"; do
        read -r n rc w <<<"$s"
        printf '%-14s %4s %8s\n' "$n" "$rc" "$w"
        total=$(awk "BEGIN{print $total + $w}")
    done
    printf '%-14s %4s %8.1f\n' total - "$total"
} | tee "$OUT/summary.txt"
