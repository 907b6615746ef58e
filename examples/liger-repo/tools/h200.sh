#!/usr/bin/env bash
# Liger-Kernel's own repository gated on an H200, pull request by pull request, into OUT:
#
#   examples/liger-repo/tools/h200.sh OUT [STEPS]        # STEPS default: "945 1266 aa"
#
# Needs: the bundle (examples/liger-repo/.bundle/liger.bundle, made here by tools/make-bundle.py,
# ignored by git, carried with the tree; or BUNDLE=PATH); python3 (or $PYTHON) with CUDA torch,
# Triton, pytest, pytest-benchmark, scipy (the image's: torch 2.11, Triton 3.6, pytest-benchmark
# 5.2.3); git. tilegate is this checkout's (PYTHONPATH), as an adopter's installed tilegate: the
# Liger tree has no tilegate/ of its own. Nothing is downloaded.
#
# Each step is what the workflow `tilegate init --ci github` writes runs on a pull request, in
# the head's checkout (the tilegate on PYTHONPATH judges: Liger's tree has no tilegate/):
#
#   (cd CLONE && python -m tilegate ci --base BASE --out-dir DIR -- --profile quick --no-plots)
#
#   945    head pr-945-head  (#945, LayerNorm backward: atomics -> persistent reduction)
#          base pr-945-base  (its parent + the graft)
#   1266   head pr-1266-head (#1266, cross-entropy: exp -> exp2)
#          base pr-1266-base
#   aa     $AA runs (default 3) of head aa, base pr-945-head: the same tree on both sides
#   dx     head aa + RMSNorm's backward allocating its dX instead of writing it into the grad
#          buffer in place (a library change, not the protocol's), base aa: MORE MEMORY expected
#   host10 head aa + about 10 us of host work in each call of rms_norm's forward wrapper, base
#          aa: SLOWER on its host time expected (judged over worker processes)
#   noise  `tilegate ab-noise --measure 3` on aa (the GPU time's and, over host workers, the host
#          time's A/A noise), committed onto aa: the steps after it (dx, host10) are judged by
#          calibrated tolerances, not the 3 % / 25 % ceilings (a 10 us host change is ~5 %)
#   bisect `tilegate bisect range-good range-bad --case 'liger-rms_norm-fwd-*'` over the bundle's
#          range (make-bundle.py --range 32: 32 real commits, range-seeded slows rms_norm's
#          forward): the culprit must be range-seeded. BISECT_STATE=TGZ resumes a cut one
#          (--resume); the state goes to OUT/bisect-state.tgz either way
#
# No baseline is stored (baselines/ holds a README only): each run is judged by its A/B, within
# the 3 % ceiling (no A/A noise file). Into OUT (3 files): summary.md (per step: exit code, wall
# time, the report's headline, its per-case verdict rows and why each changed), steps.tar.gz
# (per step: report.md, results.json, gate.json, the gate's log), h200.log (this console); a
# table last. Steps start only while DEADLINE_S (default 540) seconds from the start are not
# spent, each within STEP_TIMEOUT (default 200) and what is left.
#
# A dry run of the script on a CPU: PROFILE=smoke AA=1 EXTRA="--report-only
# --perf-axis=kernel=layer_norm-bwd" (Triton interpreter; timings mean nothing).
set -uo pipefail

OUT=${1:?usage: examples/liger-repo/tools/h200.sh OUT [STEPS]}
read -r -a RUN <<<"${2:-${STEPS:-945 1266 aa}}"
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd) # examples/liger-repo
ROOT=$(cd "$HERE/../.." && pwd)        # the tilegate checkout
PY=${PYTHON:-python3}
BUNDLE=${BUNDLE:-$HERE/.bundle/liger.bundle}
PROFILE=${PROFILE:-quick}
AA=${AA:-3}
STEP_TIMEOUT=${STEP_TIMEOUT:-200}
DEADLINE_S=${DEADLINE_S:-540}
read -r -a EXTRA <<<"${EXTRA:-}"
START=$(date +%s)
exec > >(tee "$OUT/h200.log") 2>&1

say() { printf '\n=== %s\n' "$*"; }
die() {
    echo "h200.sh: $*" >&2
    exit 2
}

[ -f "$BUNDLE" ] || die "no bundle $BUNDLE: make it with examples/liger-repo/tools/make-bundle.py (README.md)"
command -v git >/dev/null || die "no git"
WORK=$(mktemp -d /tmp/liger-repo-h200.XXXXXX)
CLONE=$WORK/liger
git clone -q "$BUNDLE" "$CLONE" || die "cannot clone $BUNDLE"
git -C "$CLONE" config user.name h200 && git -C "$CLONE" config user.email h200@localhost
# tilegate from its built wheel, as an adopter installs it (not this checkout on the path)
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$WORK/whl" "$ROOT" >/dev/null &&
    "$PY" -m pip install -q --no-deps --target "$WORK/site" "$WORK"/whl/tilegate-*.whl || die "cannot build tilegate's wheel"
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
export TRITON_CACHE_DIR=$WORK/triton-cache # cold for the first step, warm after
ref() { git -C "$CLONE" rev-parse --verify -q "origin/$1^{commit}" || git -C "$CLONE" rev-parse --verify -q "$1^{commit}" || die "the bundle has no $1"; }
edited() { # edited NAME FILE OLD NEW: aa with one exact snippet of FILE replaced, as branch NAME
    git -C "$CLONE" checkout -q -B "$1" "$(ref aa)" && "$PY" - "$CLONE/$2" "$3" "$4" <<'PYEOF' &&
import sys
from pathlib import Path
p, old, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
s = p.read_text()
assert s.count(old) == 1, f"{p}: snippet not found once: {old!r}"
p.write_text(s.replace(old, new))
PYEOF
        git -C "$CLONE" commit -qam "$1" || die "cannot make $1"
}

say "environment"
"$PY" - "$PROFILE" <<'PYEOF' | tee "$WORK/env.txt" || die "the environment is not usable (above)"
import importlib.metadata as md
import sys

import pytest_benchmark  # noqa: F401
import scipy  # noqa: F401
import tilegate
import torch
import triton

print(f"python {sys.version.split()[0]} torch {torch.__version__} triton {triton.__version__} "
      f"pytest-benchmark {md.version('pytest-benchmark')} tilegate {tilegate.__file__}")
if sys.argv[1] != "smoke":
    from tilegate.harness.device import gpu_info

    g = gpu_info()
    print(f"gpu {g.name} slug={g.slug} sm_{g.capability[0]}{g.capability[1]} driver {g.driver}")
PYEOF
git -C "$CLONE" log --oneline --all | sed 's/^/bundle: /'

SUMMARY=$WORK/summary.md
{
    echo "# Liger-Kernel's repository through tilegate ci (profile $PROFILE)"
    echo
    echo '```'
    cat "$WORK/env.txt"
    echo '```'
} >"$SUMMARY"
ROWS=()

# the report's headline, its per-case rows (the A/B tables), why each decided case changed
# (the report's words), and what differs between the sides' launches of every A/B case
# (tilegate.explain.diff on results.json: the ambiguous ones too)
digest() {
    "$PY" - "$1/report.md" "$1/results.json" <<'PYEOF'
import re
import sys
from pathlib import Path

try:
    lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
except OSError:
    lines = ["(no report)"]
print(f"**{lines[0].lstrip('# ').strip()}**" if lines else "(empty report)")
section, why = "", False
for line in lines[1:]:
    if line.startswith("## "):
        section, why = line, False
    if line.startswith("**Why it changed**"):
        why = True
    elif why and line.startswith(("- ", "<details><summary>")):
        print(re.sub(r"</?(details|summary|code)>", "", line).replace("`", ""))
    elif line.startswith("| `liger-") and (section.startswith("## A/B") or section.startswith("## Deciding")):
        print(line)
    elif section.startswith("## A/B") and line.startswith("- **"):
        print(line)
print("\nEvery A/B case, base -> head (tilegate.explain.diff of results.json):\n")
try:
    from tilegate.explain.diff import explain_cases, read_sides

    results = Path(sys.argv[2])
    keys = sorted(k for side, k in read_sides(results) if side == "base")
    for e in explain_cases(results, [(k, "") for k in keys]):
        print(f"- {e.key}: " + ("; ".join(e.lines) or e.unavailable or "no recorded difference"))
except Exception as err:  # a dry run's digest must not stop the steps
    print(f"- (unavailable: {type(err).__name__}: {err})")
PYEOF
}

step() { # step NAME HEAD_REF BASE_REF
    local name=$1 head base left t0 t1 rc wall dir=$WORK/out-$1
    head=$(ref "$2") && base=$(ref "$3") || return
    left=$((DEADLINE_S - ($(date +%s) - START)))
    if [ "$left" -lt 60 ]; then
        ROWS+=("$name - - skipped: ${left}s left of DEADLINE_S=$DEADLINE_S")
        printf '\n## %s: skipped (%ss left)\n' "$name" "$left" >>"$SUMMARY"
        return
    fi
    say "$name: head $2 (${head:0:12}), base $3 (${base:0:12})"
    git -C "$CLONE" checkout -q --detach "$head" || die "cannot check out $2"
    rm -rf "$dir" && mkdir -p "$dir"
    t0=$(date +%s.%N)
    (cd "$CLONE" && timeout "$((left < STEP_TIMEOUT ? left : STEP_TIMEOUT))" "$PY" -m tilegate ci \
        --base "$base" --out-dir "$dir" \
        -- --profile "$PROFILE" --no-plots "${EXTRA[@]}") 2>&1 | tee "$dir/tilegate-ci.log"
    rc=${PIPESTATUS[0]}
    t1=$(date +%s.%N)
    wall=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")
    local head_line
    head_line=$(head -1 "$dir/report.md" 2>/dev/null | sed 's/^# *//')
    ROWS+=("$name $rc $wall ${head_line:-(no report)}")
    {
        printf '\n## %s: exit %s, %s s (head %s %s, base %s %s)\n\n' "$name" "$rc" "$wall" \
            "$2" "${head:0:12}" "$3" "${base:0:12}"
        digest "$dir"
    } >>"$SUMMARY"
    mkdir -p "$WORK/steps/$name"
    for f in report.md results.json gate.json gate-base.log tilegate-ci.log; do
        [ -f "$dir/$f" ] && cp "$dir/$f" "$WORK/steps/$name/"
    done
}

bisect_step() { # the range's bisect, in the clone checked out at range-bad
    local good bad seeded left rc t0 resume=() dir=$WORK/steps/bisect
    good=$(ref range-good) && bad=$(ref range-bad) && seeded=$(ref range-seeded) || return
    left=$((DEADLINE_S - ($(date +%s) - START)))
    say "bisect: range-good ${good:0:12} .. range-bad ${bad:0:12} (seeded ${seeded:0:12}), ${left}s left"
    git -C "$CLONE" checkout -q --detach "$bad" || die "cannot check out range-bad"
    if [ -n "${BISECT_STATE:-}" ]; then
        mkdir -p "$CLONE/.perf" && tar xzf "$BISECT_STATE" -C "$CLONE/.perf" && resume=(--resume)
    fi
    t0=$(date +%s)
    (cd "$CLONE" && timeout "$left" "$PY" -m tilegate bisect "$good" "$bad" \
        --case 'liger-rms_norm-fwd-*' --profile "$PROFILE" "${resume[@]}") 2>&1 | tee "$WORK/bisect.log"
    rc=${PIPESTATUS[0]}
    mkdir -p "$dir" && cp "$WORK/bisect.log" "$dir/"
    cp "$CLONE/.perf/bisect/report.md" "$CLONE/.perf/bisect/bisect.json" "$dir/" 2>/dev/null
    tar czf "$OUT/bisect-state.tgz" -C "$CLONE/.perf" --exclude=bisect/trees bisect 2>/dev/null
    local head_line named=no
    head_line=$(head -1 "$dir/report.md" 2>/dev/null | sed 's/^# *//')
    grep -q "FOUND: ${seeded:0:10}" <<<"$head_line" && named=yes
    ROWS+=("bisect $rc $(($(date +%s) - t0)) culprit=range-seeded:$named ${head_line:-(no report)}")
    {
        printf '\n## bisect: exit %s, %s s (range-good %s .. range-bad %s, seeded %s: named %s)\n\n' \
            "$rc" "$(($(date +%s) - t0))" "${good:0:12}" "${bad:0:12}" "${seeded:0:12}" "$named"
        sed -n '/^## Steps/q;p' "$dir/report.md" 2>/dev/null | head -40
        awk '/^## Steps/{on=1} on' "$dir/report.md" 2>/dev/null | head -30
    } >>"$SUMMARY"
}

for s in "${RUN[@]}"; do
    case $s in
    945 | 1266) step "$s" "pr-$s-head" "pr-$s-base" ;;
    dx)
        edited edit-dx src/liger_kernel/ops/rms_norm.py "    if in_place is True:
        dX = dY" "    if False:  # dX allocated, never written into dY
        dX = dY"
        step dx edit-dx aa ;;
    host10)
        edited edit-host10 src/liger_kernel/ops/rms_norm.py "def rms_norm_forward(X, W, eps, offset, casting_mode, row_mode):
" "def rms_norm_forward(X, W, eps, offset, casting_mode, row_mode):
    import time as _t

    _end = _t.perf_counter() + 10e-6  # about 10 us of host work per call
    while _t.perf_counter() < _end:
        pass
"
        step host10 edit-host10 aa ;;
    aa) for i in $(seq 1 "$AA"); do step "aa-$i" aa pr-945-head; done ;;
    bisect) bisect_step ;;
    noise)
        git -C "$CLONE" checkout -q --detach "$(ref aa)" || die "cannot check out aa"
        (cd "$CLONE" && "$PY" -m tilegate ab-noise --measure 3 --profile "$PROFILE") 2>&1 | tee "$WORK/noise.log"
        rc=${PIPESTATUS[0]}
        mkdir -p "$WORK/steps/noise" && cp "$WORK/noise.log" "$CLONE"/baselines/*.ab.json "$WORK/steps/noise/" 2>/dev/null
        git -C "$CLONE" add baselines && git -C "$CLONE" commit -qm "A/A noise" &&
            git -C "$CLONE" update-ref refs/remotes/origin/aa HEAD # aa, for the steps after it
        ROWS+=("noise $rc - $(ls "$CLONE"/baselines/*.ab.json 2>/dev/null | xargs -n1 basename)") ;;
    *) die "unknown step $s (known: 945 1266 aa dx host10 noise bisect)" ;;
    esac
done

table() {
    printf '%-8s %4s %8s  %s\n' step exit wall_s headline
    for r in "${ROWS[@]}"; do
        read -r n rc w h <<<"$r"
        printf '%-8s %4s %8s  %s\n' "$n" "$rc" "$w" "$h"
    done
    printf 'total wall %s s\n' "$(($(date +%s) - START))"
}
{
    printf '\n## Table (exit: 0 holds, 1 regression, 2 cannot judge, 124 timed out)\n\n```\n'
    table
    printf '```\n'
} >>"$SUMMARY"
cp "$SUMMARY" "$OUT/summary.md"
[ -d "$WORK/steps" ] && tar czf "$OUT/steps.tar.gz" -C "$WORK" steps
git -C "$CLONE" worktree prune 2>/dev/null
rm -rf "$WORK"
say "summary (exit: 0 holds, 1 regression, 2 cannot judge, 124 timed out): $OUT/summary.md"
table
