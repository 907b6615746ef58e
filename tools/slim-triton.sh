#!/usr/bin/env bash
# Make a Triton release small enough to carry to the offline GPU machine, whose image has only
# Triton 3.6.0 (what travels there is limited to 64 MiB, working tree included).
# For NVIDIA sm_90 only: drops the AMD backend, CUPTI/proton (profiling), the ptxas that sm_90
# does not use, and libtriton's debug symbols. Triton 3.9.0 shrinks from 272 MiB to ~56 MiB.
#
#   usage (where pip works):  tools/slim-triton.sh 3.9.0 .triton   # -> .triton/triton-3.9.0.tar.xz
#   on the GPU machine (name .triton in carry; git-ignore it):
#     mkdir -p /tmp/triton-3.9.0 && xz -dc .triton/triton-3.9.0.tar.xz | tar -x -C /tmp/triton-3.9.0
#     export PYTHONPATH=/tmp/triton-3.9.0${PYTHONPATH:+:$PYTHONPATH}   # shadows the image's 3.6.0
#   Triton 3.9 warns when TRITON_DEFAULT_FP_FUSION is unset (set it, or let the warning through).
#   Check with: python3 -c 'import triton; print(triton.__version__, triton.__file__)'
set -euo pipefail
v=${1:?usage: slim-triton.sh VERSION OUTDIR}
out=$(mkdir -p "${2:?usage: slim-triton.sh VERSION OUTDIR}" && cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$tmp" "triton==$v"
cd "$tmp"
unzip -q triton-*.whl && rm triton-*.whl
rm -rf triton/backends/amd triton/backends/nvidia/lib/cupti* triton/_C/libproton.so \
  triton/instrumentation triton/profiler
sed -i '/amd/d' triton-*.dist-info/entry_points.txt   # backends are found through entry points
# Keep the ptxas that get_ptxas(90) returns: ptxas-blackwell from 3.9 on, plain ptxas before.
nv=triton/backends/nvidia
if grep -q "arch < 90" $nv/compiler.py; then rm -f $nv/bin/ptxas
elif grep -q "ptxas_blackwell if arch >= 100 else" $nv/compiler.py; then rm -f $nv/bin/ptxas-blackwell
fi
strip --strip-unneeded triton/_C/libtriton.so
tar -cf - triton triton-*.dist-info | xz -T0 -6 > "$out/triton-$v.tar.xz"
ls -la "$out/triton-$v.tar.xz"
