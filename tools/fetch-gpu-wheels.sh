#!/usr/bin/env bash
# Download the pure-Python wheels that an offline GPU runner needs to run `nox -s perf` on top of
# its preinstalled CUDA torch, Triton, pytest and pytest-benchmark: nox and every package it
# imports, pinned in tools/gpu-wheels.txt (versions that install on Python 3.10 to 3.13).
# Usage: tools/fetch-gpu-wheels.sh [DIR]   (default .whl, git-ignored)
# Then, on the GPU machine (tools/gpu-nox.sh installs nox from DIR with --no-index --target):
#   TILEGATE_WHEELHOUSE=DIR bash tools/gpu-nox.sh -s perf
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-.whl}
mkdir -p "$dir"
# --python-version 3.10: the oldest Python tilegate supports, so every pin resolves for it and
# for the newer ones (tests/test_wheelhouse.py checks 3.10 to 3.13 against the folder)
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.10 --implementation py -d "$dir" -r "$here/gpu-wheels.txt"
ls "$dir"
