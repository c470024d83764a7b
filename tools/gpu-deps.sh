#!/usr/bin/env bash
# Gathers what tools/gpu-check.sh needs but a bare GPU machine lacks (it has nvcc, CMake and Python with
# PyTorch, but no Debian packages and no network) into .deps/ (ignored by git), from this machine's
# Debian packages: the Catch2, toml++, nlohmann-json and DLPack headers, and OpenBLAS with its runtime;
# and Gymnasium's golden transitions from ../shared/golden, which the golden GPU tests read and which
# does not travel with the working tree. Carry .deps to the GPU machine beside the working tree. About 50 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps
mkdir -p .deps/include .deps/lib
cp -r /usr/include/catch2 /usr/include/toml++ /usr/include/nlohmann /usr/include/dlpack .deps/include/
openblas_include=/usr/include/x86_64-linux-gnu/openblas-pthread
openblas_lib=/usr/lib/x86_64-linux-gnu/openblas-pthread
if [[ -f $openblas_lib/libopenblas.so.0 ]]; then
  cp $openblas_include/cblas.h $openblas_include/openblas_config.h .deps/include/
  cp -L $openblas_lib/libopenblas.so.0 .deps/lib/
  ln -sf libopenblas.so.0 .deps/lib/libopenblas.so
  for runtime in libgfortran.so.5 libquadmath.so.0; do
    cp -L /usr/lib/x86_64-linux-gnu/$runtime .deps/lib/
  done
else
  echo "gpu-deps: OpenBLAS not found (apt-get install libopenblas-dev); the CPU backend will use its built-in GEMM" >&2
fi
if [[ -d ../shared/golden ]]; then
  cp -r ../shared/golden .deps/golden
else
  echo "gpu-deps: ../shared/golden not found; the golden GPU tests will fail on the GPU machine" >&2
fi
du -sh .deps
