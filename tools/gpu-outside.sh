#!/usr/bin/env bash
# A repository nobody here wrote, gated from the installed wheel on a GPU machine: a `tilegate
# init` repository whose code is a Triton row softmax (8192 rows of 1024 columns, a ~14 us call
# whose host bounds it, and of 16384) launched through a module the package imports BY ITS OWN
# NAME (`from selfbench._launch import softmax`, as Liger-Kernel, fla and FlagGems do);
# then pull requests judged the way an adopter's perf.yml judges them (this checkout's
# `tilegate ci --base HEAD^1` of the installed wheel, as `tilegate init --ci github`'s workflow):
#
#   tools/gpu-outside.sh OUTDIR STEP...
#
# Steps:
#   rebaseline  `tilegate rebaseline --measure 3`, the baseline committed (the stored check then
#               runs beside every A/B: head-only sweeps against it)
#   noise   `tilegate ab-noise --measure 3`, this GPU's A/A noise committed (then the A/B's
#           tolerance is calibrated, not the 3 % ceiling: on the H100 num_warps 8 -> 4 read +2.9 %)
#   aa      nothing changed (an empty commit): A/A
#   warps   the softmax's num_warps 8 -> 4 (a change only the base's own code can show; round 4
#           measured +8.1 % at 16384 columns)
#   temp64  the wrapper allocates a 64 MiB temporary per call (a memory change no time gate sees):
#           MORE MEMORY expected, with the bytes
#   tuned   the base becomes an autotuned softmax (@triton.autotune over num_warps 4/8/16 x
#           num_stages 1/2, keyed on the row length: issue 39's case, whose two processes can
#           pick differently); steps after it (rebaseline, aa) run on that code
# Each step's exit code, wall time and headline go to OUTDIR/summary.txt, its report to
# OUTDIR/<step>.report.md (PACK=1: all but summary.txt packed into OUTDIR/steps.tgz).
# PROFILE=smoke: a dry run on a CPU (the interpreter; timings mean nothing), with a python3
# that has CPU torch and Triton first on PATH.
set -uo pipefail
out=${1:?usage: tools/gpu-outside.sh OUTDIR STEP...}; shift
out=$(mkdir -p "$out" && cd "$out" && pwd); summary=$out/summary.txt; touch "$summary"
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
site=$work/site
python3 -m pip wheel -q --no-deps --no-build-isolation -w "$work/whl" "$here" >/dev/null &&
  python3 -m pip install -q --no-deps --target "$site" "$work"/whl/tilegate-*.whl || exit 2
export PYTHONPATH=$site PYTHONUNBUFFERED=1
repo=$work/selfbench
mkdir -p "$repo" && cd "$repo" || exit 2
"$site/bin/tilegate" init --package selfbench --ci github >/dev/null || exit 2
export PATH=$site/bin:$PATH
# the gate step of the workflow `init --ci github` wrote, as a pull request's job runs it
python3 - .github/workflows/tilegate.yml > "$work/gate-step.sh" <<'PY' || exit 2
import re
import sys

text = open(sys.argv[1]).read()
step = text.split("- name: Measure and judge (tilegate ci)", 1)[1].split("\n      - name:", 1)[0]
block = step.split("run: |\n", 1)[1]
print("\n".join(line[10:] for line in block.splitlines()))
PY
# the code: a Triton row softmax, launched through a module the package imports BY ITS OWN NAME
cat > selfbench/_launch.py <<'PY'
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x, y):
    rows, cols = x.shape
    _softmax_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols), num_warps=8)
    return y
PY
cat > selfbench/kernels.py <<'PY'
"""selfbench's variants: torch's softmax (the reference) and a Triton row softmax."""

import torch

from selfbench._launch import softmax
from tilegate.declare import Variant


def _triton(params, x):
    y = torch.full_like(x, float("nan"))
    return lambda: softmax(x, y)


def _torch(params, x):
    return lambda: torch.softmax(x, dim=-1)


VARIANTS = (Variant("torch", _torch, reference=True), Variant("triton_softmax", _triton))
PY
cat > perf_tests/test_selfbench.py <<'PY'
"""How selfbench's softmax is measured: 8192 rows of 1024 (a ~14 us call: host-bound) and 16384
columns, fp16."""

from types import MappingProxyType

import torch

from selfbench.kernels import VARIANTS
from tilegate.declare import Axis, Benchmark, Profile, Work
from tilegate.harness.bench import measure_case


def _inputs(params, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(params["rows"], params["cols"], generator=gen)
    return x.to(device=device, dtype=torch.float16)


BENCHMARK = Benchmark(
    name="softmax",
    variants=VARIANTS,
    profiles=(
        Profile("quick", (Axis("cols", (1024, 16384), label="c{}"),),
                MappingProxyType({"rows": 8192})),
        Profile("smoke", (Axis("cols", (64,), label="c{}"),), MappingProxyType({"rows": 4}),
                rounds=8, min_time_s=0.0, passes=1, soak_s=0.0, interpreter=True),
    ),
    default_profile="quick",
    inputs=_inputs,
    reference_output=lambda params, x: torch.softmax(x.double(), dim=-1),
    tolerance=lambda params: 1e-2,
    work=lambda params: Work(bytes=2.0 * params["rows"] * params["cols"] * 2),
)


def test_softmax(tilegate_case, perf_run, benchmark):
    measure_case(tilegate_case, perf_run, benchmark)
PY
# shellcheck source=tools/gpu-lib.sh
source "$here/tools/gpu-lib.sh"  # edit, stamp, pack
printf '.perf/\n__pycache__/\n' > .gitignore
g() { git -c user.name=gpu -c user.email=gpu@localhost "$@"; }
g init -q && g add -A && g commit -qm "tilegate init, importing itself by name"
base=$(git rev-parse HEAD)
step() {  # step NAME: commit the work tree as the PR, judge it
  local name=$1 t0 rc
  g commit -q --allow-empty -am "pr: $name"
  t0=$(date +%s.%N)
  if [ -z "${PROFILE:-}" ]; then  # on the GPU: the workflow's own gate step, run by hand
    : > "$work/gh-output"
    EVENT=pull_request GATE_ACK=false BASELINE_ACK=false GITHUB_OUTPUT=$work/gh-output RUNNER_TEMP=$work \
      bash -eo pipefail "$work/gate-step.sh" 2>&1 | stamp > "$out/$name.log"
    rc=$(sed -n 's/^rc=//p' "$work/gh-output" | tail -n 1)
  else  # a dry run on a CPU: its profile
    python3 -m tilegate ci --base HEAD^1 --out-dir "$repo/.perf" \
      -- --no-plots --profile "$PROFILE" 2>&1 | stamp > "$out/$name.log"
    rc=${PIPESTATUS[0]}
  fi
  printf '%-8s exit %s %6.1f s  %s\n' "$name" "$rc" "$(python3 -c "import time;print(time.time()-$t0)")" \
    "$(head -n 1 "$repo/.perf/report.md" 2>/dev/null)" | tee -a "$summary"
  grep -m 12 -E "num_warps|MEMORY|SLOWER|UNSTABLE|Compiled code|each side|one process|tuner flip|autotuner" "$repo/.perf/report.md" \
    | cut -c1-300 | sed 's/^/    /' >> "$summary"
  cp "$repo/.perf/report.md" "$out/$name.report.md" 2>/dev/null
  g reset -q --hard "$base"
}
for spec in "$@"; do
  case $spec in
    aa) step aa ;;
    tuned)
      python3 - selfbench/_launch.py <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("@triton.jit", "@triton.autotune(\n    [triton.Config({}, num_warps=w, num_stages=st) "
              "for w in (4, 8, 16) for st in (1, 2)],\n    key=[\"n_cols\"],\n)\n@triton.jit")
s = s.replace(", num_warps=8)", ")")
open(p, "w").write(s)
PY
      grep -q "triton.autotune" selfbench/_launch.py || { echo "tuned: edit failed" | tee -a "$summary"; exit 2; }
      g commit -qam "the softmax autotuned" && base=$(git rev-parse HEAD)
      echo "tuned    base $base: an autotuned softmax" | tee -a "$summary" ;;
    warps) edit selfbench/_launch.py 'num_warps=8' 'num_warps=4'; step warps ;;
    temp64)
      edit selfbench/_launch.py '    rows, cols = x.shape' '    rows, cols = x.shape
    _tmp = torch.empty(64 << 20, dtype=torch.int8, device=x.device)'
      step temp64 ;;
    noise)
      "$site/bin/tilegate" ab-noise --measure 3 --profile "${PROFILE:-quick}" 2>&1 | stamp > "$out/noise.log"
      printf '%-8s exit %s  %s\n' noise "${PIPESTATUS[0]}" "$(ls baselines/*.ab.json 2>/dev/null | tr '\n' ' ')" \
        | tee -a "$summary"
      g add -A baselines && g commit -qm "A/A noise" && base=$(git rev-parse HEAD) ;;
    rebaseline)
      "$site/bin/tilegate" rebaseline --measure 3 --profile "${PROFILE:-quick}" 2>&1 \
        | stamp > "$out/rebaseline.log"
      printf '%-8s exit %s\n' rebaseline "${PIPESTATUS[0]}" | tee -a "$summary"
      g add -A baselines && g commit -qm "baseline" && base=$(git rev-parse HEAD) ;;
    *) echo "unknown step $spec" | tee -a "$summary" ;;
  esac
done
pack "$out"
