#!/usr/bin/env bash
# Run nox on a GPU runner with the runner's own python3 (its CUDA torch and Triton), with nox
# pinned and installed for this job only. The GPU sessions run on the interpreter that runs nox.
# Usage: tools/gpu-nox.sh -s perf -- --profile quick
#
# Environment (all optional, set in the runner's .env file):
#   TILEGATE_PYTHON      interpreter with torch, Triton, pytest, pytest-benchmark, scipy (default python3)
#   TILEGATE_WHEELHOUSE  folder of wheels for a runner without PyPI (tools/fetch-gpu-wheels.sh makes it)
set -euo pipefail
cd "$(dirname "$0")/.."

NOX_VERSION=2026.10.20  # same pin as tools/gpu-wheels.txt and .github/workflows/ci.yml
python=${TILEGATE_PYTHON:-python3}
# RUNNER_TEMP is emptied after every job, so nothing a job installs here outlives it.
site=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/tilegate-nox-$NOX_VERSION

if [ ! -f "$site/.installed" ]; then
  # --target: no PEP 668 refusal and no change to the runner's environment, whatever python3 is.
  args=(--quiet --disable-pip-version-check --no-input --target "$site")
  if [ -n "${TILEGATE_WHEELHOUSE:-}" ]; then
    args+=(--no-index --find-links "$TILEGATE_WHEELHOUSE")
  fi
  rm -rf "$site"
  "$python" -m pip install "${args[@]}" "nox==$NOX_VERSION"
  touch "$site/.installed"
fi

# nox goes on the nox process's sys.path only, not into PYTHONPATH: pytest and the gate, which
# the sessions start as subprocesses, must see the runner's packages, not nox's dependencies.
exec "$python" -c '
import sys
sys.path.insert(0, sys.argv.pop(1))
sys.argv[0] = "nox"
from nox.__main__ import main
main()
' "$site" "$@"
