#!/usr/bin/env bash
# ThreadSanitizer over the rollout log's writer thread, the OpenMP loops and learners side by side (agents): a CPU-only Clang build with
# SURGE_SANITIZE=thread (cmake/SurgeSanitize.cmake says why Clang and Archer) of only the tests that run
# them, run on four OpenMP threads, then again in the shuffled order mode, which puts every loop on all
# threads (small ones included). Any report fails the test that caused it.
#
#   tools/tsan-check.sh      Environment: BUILD_DIR (default build-tsan), JOBS (default: all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-tsan}
jobs=${JOBS:-$(nproc)}
tests=(parallel vec_env rollout_log train_logs agent_set batched_kernels batched_bookkeeping batched_normalization batched_loss gemm_batched engine_agents batched_trainer)

mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSURGE_ENABLE_CUDA=OFF -DSURGE_ENABLE_MPI=OFF -DSURGE_SANITIZE=thread >"$build_dir/configure.log" 2>&1 ||
  { cat "$build_dir/configure.log"; exit 1; }
grep -E "^-- Surge sanitizer" "$build_dir/configure.log" || true
cmake --build "$build_dir" -j "$jobs" --target "${tests[@]/#/test_}"

archer=$(sed -n 's/^SURGE_ARCHER_LIBRARY_PATH:FILEPATH=//p' "$build_dir/CMakeCache.txt")
export OMP_TOOL_LIBRARIES="$archer" OMP_NUM_THREADS=4 OPENBLAS_NUM_THREADS=1
# ignore_noninstrumented_modules: what libomp (and HDF5, OpenBLAS) do inside themselves is not ours to
# check and, uninstrumented, would only give false reports (libomp's own mutexes); every access our code
# makes is still checked, and Archer supplies the OpenMP synchronisation between them.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
pattern="^($(IFS='|'; echo "${tests[*]}"))\$"
ctest --test-dir "$build_dir" --output-on-failure -R "$pattern"
SURGE_CPU_ORDER=shuffle ctest --test-dir "$build_dir" --output-on-failure -R "^(parallel|vec_env)\$"
