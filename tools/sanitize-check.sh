#!/usr/bin/env bash
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer over the CPU test suite: a CPU-only Clang
# build of the `surge` program and of the programs the fast cpu-labelled tests run (nothing else), then
# those tests (ctest -L cpu -LE slow). UBSan stops at its first report (-fno-sanitize-recover), so every
# report fails the test that caused it; ASan and LSan always do. tools/asan.supp (LSan) lists the leaks
# that are not ours, each with its reason.
#
#   tools/sanitize-check.sh      Environment: BUILD_DIR (default build-asan), JOBS (default: all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-asan}
jobs=${JOBS:-$(nproc)}
source_dir=$PWD

# -O1 keeps the tests quick enough; frame pointers give ASan whole stacks. NDEBUG as in every other build.
# No libtorch interop: Debian's libtorch headers do not compile with Clang 14 (the interop tests run in the
# GCC build). No MPI: Open MPI's own start-up allocations would fill LeakSanitizer's report; the
# data-parallel tests run in the GCC build.
sanitize_flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSURGE_ENABLE_CUDA=OFF -DSURGE_ENABLE_TORCH=OFF -DSURGE_ENABLE_MPI=OFF -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_FLAGS="$sanitize_flags" -DCMAKE_CXX_FLAGS="$sanitize_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  >"$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }

# The targets: every program on the command line of a fast cpu-labelled test (test programs, surge, the
# sample writers), read from the add_test lines CMake wrote (ctest leaves out the command of a test whose
# program is not built yet) and kept where the build has a target of that name.
selection=(-L cpu -LE slow)
ctest --test-dir "$build_dir" "${selection[@]}" --show-only=json-v1 >"$build_dir/tests.json"
cmake --build "$build_dir" --target help >"$build_dir/targets.txt"
cat >"$build_dir/targets.py" <<'PY'
import glob, json, os, re, sys
build = sys.argv[1]
names = {test["name"] for test in json.load(open(os.path.join(build, "tests.json")))["tests"]}
known = {line.split()[1].split(":")[0] for line in open(os.path.join(build, "targets.txt")) if line.startswith("... ")}
wanted = {"surge"}
for testfile in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
    for name, command in re.findall(r"^add_test\(\[=\[(.*?)\]=\] (.*)\)$", open(testfile).read(), re.M):
        if name in names:
            wanted |= {os.path.basename(word) for word in re.findall(r'"([^"]*)"', command)} & known
print("\n".join(sorted(wanted)))
PY
mapfile -t targets < <(python3 "$build_dir/targets.py" "$build_dir")
echo "sanitize: building ${#targets[@]} targets for $(ctest --test-dir "$build_dir" "${selection[@]}" -N | tail -1)"
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"

# detect_leaks: LSan runs with ASan on Linux; said here so that nobody reads it as off. OpenBLAS is told to
# use one thread: its own pool is not what this build checks. allocator_may_return_null: an allocation the
# address-space cap of a guarded HDF5 read refuses (rl/io/hdf5_read_guard.hpp) fails as it does outside ASan.
export ASAN_OPTIONS="detect_leaks=1 allocator_may_return_null=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$source_dir/tools/asan.supp print_suppressions=0 ${LSAN_OPTIONS:-}"
export OPENBLAS_NUM_THREADS=1
ctest --test-dir "$build_dir" "${selection[@]}" -j "$jobs" --output-on-failure
