#!/usr/bin/env bash
# A repository nobody here wrote, gated from the installed wheel on a GPU machine: what
# `tilegate init` writes, with its kernel module importing the package BY ITS OWN NAME
# (`from selfbench._launch import launch`, as Liger-Kernel, fla and FlagGems do), one commit;
# then pull requests judged the way an adopter's perf.yml judges them (this checkout's
# tools/ci/gate_from_base.py --via python, the installed tilegate in the repository):
#
#   tools/gpu-outside.sh OUTDIR STEP...
#
# Steps:
#   aa      nothing changed (an empty commit): A/A
#   warps   the kernel's launch num_warps 8 -> 1 (a change only the base's own code can show)
# Each step's exit code, wall time and headline go to OUTDIR/summary.txt, its report to
# OUTDIR/<step>.report.md.
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
"$site/bin/tilegate" init --package selfbench >/dev/null || exit 2
cat > selfbench/_launch.py <<'PY'
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def launch(x, y):
    _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, num_warps=8)
    return y
PY
# shellcheck source=tools/gpu-lib.sh
source "$here/tools/gpu-lib.sh"  # edit, stamp
edit selfbench/kernels.py '        _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y' '        return launch(x, y)'
edit selfbench/kernels.py 'from tilegate.declare import Variant
' 'from selfbench._launch import launch
from tilegate.declare import Variant
'
printf '.perf/\n__pycache__/\n' > .gitignore
g() { git -c user.name=gpu -c user.email=gpu@localhost "$@"; }
g init -q && g add -A && g commit -qm "tilegate init, importing itself by name"
base=$(git rev-parse HEAD)
step() {  # step NAME: commit the work tree as the PR, judge it
  local name=$1 t0 rc
  g commit -q --allow-empty -am "pr: $name"
  t0=$(date +%s.%N)
  python3 "$here/tools/ci/gate_from_base.py" --base HEAD^1 --via python --out-dir "$repo/.perf" \
    -- --no-plots 2>&1 | stamp > "$out/$name.log"
  rc=${PIPESTATUS[0]}
  printf '%-8s exit %s %6.1f s  %s\n' "$name" "$rc" "$(python3 -c "import time;print(time.time()-$t0)")" \
    "$(head -n 1 "$repo/.perf/report.md" 2>/dev/null)" | tee -a "$summary"
  grep -m 12 -E "num_warps|SLOWER|UNSTABLE|Compiled code|each side|one process" "$repo/.perf/report.md" \
    | cut -c1-300 | sed 's/^/    /' >> "$summary"
  cp "$repo/.perf/report.md" "$out/$name.report.md" 2>/dev/null
  g reset -q --hard "$base"
}
for spec in "$@"; do
  case $spec in
    aa) step aa ;;
    warps) edit selfbench/_launch.py 'num_warps=8' 'num_warps=1'; step warps ;;
    *) echo "unknown step $spec" | tee -a "$summary" ;;
  esac
done
