#!/usr/bin/env bash
# Download the pure-Python wheels that an offline GPU machine needs to run `nox -s perf` on top of
# its preinstalled CUDA torch, Triton, pytest and pytest-benchmark: nox and its dependencies.
# Usage: tools/fetch-gpu-wheels.sh [DIR]   (default .whl, git-ignored)
# Then, on the GPU machine:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site DIR/*.whl
#   PYTHONPATH=/tmp/site python3 -m nox -s perf
set -euo pipefail
dir=${1:-.whl}
mkdir -p "$dir"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
  -d "$dir" \
  nox==2026.10.20 argcomplete==3.7.2 colorlog==6.12.0 dependency-groups==1.3.2 \
  virtualenv==21.15.11 distlib==0.4.4 platformdirs==4.14.8 python-discovery==1.9.6
ls "$dir"
