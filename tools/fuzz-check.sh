#!/usr/bin/env bash
# libFuzzer over the readers of untrusted files (tests/fuzz): the CSV reader, the train-config loader with
# --set, and the checkpoint reader. A CPU-only Clang build of only what they link, with AddressSanitizer and
# UBSan (-fsanitize=fuzzer-no-link,address,undefined), then each target for FUZZ_SECONDS from its seeds
# (tests/fuzz/corpus, the built-in configs, the checkpoints in tests/data). A fuzz target treats any
# exception but InputError as a crash, as the program would exit 1. Fails on any crash, leak, timeout or
# out-of-memory, printing each input (hex) and its stack.
#
#   tools/fuzz-check.sh [TARGET...]   Targets: csv train_config checkpoint (default: all)
#   Environment: BUILD_DIR (default build-fuzz), JOBS (default: all cores), FUZZ_SECONDS (default 60),
#   SURGE_FUZZ_EXCEPTIONS=any (let every exception pass, to look past a known exit-1 bug for memory errors)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath -m "${BUILD_DIR:-build-fuzz}")
jobs=${JOBS:-$(nproc)}
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
((${#targets[@]})) || targets=(csv train_config checkpoint)

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSURGE_ENABLE_CUDA=OFF -DSURGE_ENABLE_MPI=OFF -DSURGE_FUZZ=ON -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  >"$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]/#/fuzz_}"

# A size read from a damaged file can make HDF5 ask for terabytes; outside ASan that malloc fails and the
# reader reports the file, so here too it returns null instead of aborting (as fuzz_cli.py does).
export ASAN_OPTIONS="detect_leaks=1 allocator_may_return_null=1 max_allocation_size_mb=4096 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tools/asan.supp print_suppressions=0 ${LSAN_OPTIONS:-}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

failed=0
for target in "${targets[@]}"; do
  corpus="$build_dir/fuzz-corpus/$target" findings="$build_dir/fuzz-findings/$target" log="$build_dir/fuzz-$target.log"
  rm -rf "$findings"
  mkdir -p "$corpus" "$findings"
  cp tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  case $target in
    train_config) cp scenarios/configs/*.toml "$corpus"/ ;;
    checkpoint) cp tests/data/checkpoints/mountain_car_continuous_iteration5.h5 "$corpus"/ ;;
  esac
  echo "fuzz: $target for ${seconds}s from $(ls "$corpus" | wc -l) inputs"
  # -fork with -ignore_*: a finding is saved and the run goes on, so one known crash does not hide the next.
  (cd "$findings" && "$build_dir/bin/fuzz_$target" -seed=1 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 "$corpus" >"$log" 2>&1) || true
  if ! grep -q "INFO: fuzzed for" "$log"; then
    echo "fuzz: $target did not run to its time limit:"
    tail -20 "$log"
    failed=1
  fi
  grep -E "^#[0-9]+: cov" "$log" | tail -1 || true
  # Each finding is run again alone, with whole stacks through uninstrumented libraries; one that does
  # not fail again (a job that died of its neighbour's memory) is listed but does not fail the check.
  for finding in "$findings"/*; do
    [[ -e $finding ]] || continue
    hex=$(head -c 256 "$finding" | od -An -tx1 | tr -d ' \n')
    if ASAN_OPTIONS="$ASAN_OPTIONS fast_unwind_on_malloc=0" "$build_dir/bin/fuzz_$target" -rss_limit_mb=4096 \
      -timeout=20 "$finding" >"$finding.log" 2>&1; then
      echo "fuzz: $target: $(basename "$finding") did not fail again alone (${#hex} hex digits: $hex)"
      continue
    fi
    # HDF5 1.10 follows a damaged variable-length string's global-heap length without checking it
    # (H5HG_read): a defect of the library, not of the reader; the program itself reports such a file
    # from a guard on that read (rl/io/hdf5_util.cpp). Listed, not failed.
    # A read the program's guard ended (rl/io/hdf5_read_guard.hpp: HDF5 looping over a damaged global heap)
    # is the answer the program gives, one line and exit 2.
    if grep -q "is damaged: the HDF5 library did not finish" "$finding.log"; then
      echo "fuzz: $target: $(basename "$finding") is answered by the program's read guard (exit 2)"
      continue
    fi
    if grep -q "in H5HG_read" "$finding.log"; then
      echo "fuzz: $target: $(basename "$finding") fails inside libhdf5's H5HG_read (a known HDF5 1.10 defect)"
      continue
    fi
    failed=1
    echo "fuzz: $target FOUND $(basename "$finding") ($(stat -c %s "$finding") bytes, first 256 in hex): $hex"
    grep -E "ERROR|SUMMARY|fuzz:|runtime error|^ *#[0-9]+ " "$finding.log" | grep -v "in fuzzer::" | head -30 || true
  done
done
exit $failed
