#!/usr/bin/env bash
# tools/gpu-check.sh OUTDIR: the one command for a machine with an NVIDIA GPU.
#
# Builds Surge for the GPU it finds, then runs, most important first: the kernel resource report (the
# kernel_report target, where the build has it); the GPU tests; a short `surge train --device cuda` of every
# scenario with its built-in config (and one with randomised physics); CartPole trained to a return of 475;
# pixel CartPole trained to 475 and its step and training speeds over N; the environment benchmark over N;
# bench train; compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over a short subset of the GPU
# tests; the throughput sweeps and rooflines; last, the CPU tests for reference. Everything shares one time
# budget counted from the start, build included (SURGE_GPU_CHECK_SECONDS, default 480): a stage the remaining
# time cannot hold is skipped, and the summary says so; a stage that fails does not stop the ones after it.
# Builds in build-gpu (SURGE_GPU_CHECK_BUILD_DIR). Works on a bare machine (nvcc, CMake, Python; no Debian
# packages, no network) when .deps/ was made beforehand by tools/gpu-deps.sh and carried along.
#
# Writes 8 files into OUTDIR, each kept current as the stages run, so that a check stopped at any point
# leaves what it had: summary.md (every figure in one page, from tools/gpu_summary.py), gpu-check.log
# (the running account), build.log, tests.log (ctest, training and sanitizer output), results.jsonl (one
# record per measurement), throughput.jsonl and throughput.svg (the sweeps and rooflines) and
# kernel-report.json.
set -uo pipefail
out=${1:?usage: tools/gpu-check.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
cd "$(dirname "$0")/.." || exit 1
root=$PWD
log="$out/gpu-check.log"
rm -f "$out/summary.md" "$out/kernel-report.json" "$out/throughput.svg"
for file in "$log" "$out/build.log" "$out/tests.log" "$out/results.jsonl" "$out/throughput.jsonl"; do : >"$file"; done
say() { echo "gpu-check: $*" | tee -a "$log"; }
started=$(date +%s)
budget=${SURGE_GPU_CHECK_SECONDS:-480}
build=${SURGE_GPU_CHECK_BUILD_DIR:-build-gpu}
jobs=$(nproc)
# Seconds the next stage may take: at most $1, and what is left of the budget; fails when under 15 s are left.
allow() {
  local left=$((budget - ($(date +%s) - started)))
  ((left < 15)) && return 1
  echo $((left < $1 ? left : $1))
}
record() { python3 tools/gpu_summary.py record "$out" "$@" 2>>"$log"; }
summarise() { python3 tools/gpu_summary.py summary "$out" 2>>"$log"; }
stage_begins() { record stage --field "stage=$1"; }
# skipped STAGE [WHAT] [REASON]: STAGE is one of gpu_summary.py's STAGES.
skipped() {
  local reason=${3:-out of the ${budget} s budget}
  say "SKIPPED $1${2:+ ($2)}: $reason"
  record skipped --field "stage=$1" --field "what=${2:-}" --field "reason=$reason"
}
since() { awk -v from="$1" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.1f", to - from }'; }
trap 'say "stopped by a signal after $(($(date +%s) - started)) s"; summarise; exit 143' TERM INT
export PATH="$PATH:/usr/local/cuda/bin"

# Headers, OpenBLAS and HDF5 from .deps (tools/gpu-deps.sh). Its shared libraries travel packed and are
# unpacked into the build folder, so that .deps itself stays small enough to carry.
deps=$root/.deps
mkdir -p "$build" && build=$(cd "$build" && pwd)
libs=$build/deps
if [[ -f $deps/libs.tar.xz && ( ! -f $libs/.unpacked || $deps/libs.tar.xz -nt $libs/.unpacked ) ]]; then
  rm -rf "$libs" && mkdir -p "$libs"
  if tar -C "$libs" -xJf "$deps/libs.tar.xz" 2>>"$log" ||
     python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
       "$deps/libs.tar.xz" "$libs" 2>>"$log"; then
    touch "$libs/.unpacked"
  else
    say "could not unpack .deps/libs.tar.xz: building without OpenBLAS and HDF5 from .deps"
  fi
fi
if [[ -d $deps ]]; then
  export CPATH="$deps/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$libs/lib:$deps/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$libs/lib:$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$libs:$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
# HDF5 (checkpoints, the rollout log, surge h5): Debian's library from .deps, with the libraries it loads.
# Only those this machine lacks go on the loader's path (hdf5/runtime), so that its own copies of common
# libraries stay in use; if that does not load, all of them; if nothing loads, the build goes without
# HDF5 rather than failing.
hdf5_flags=(-DCMAKE_DISABLE_FIND_PACKAGE_HDF5=ON)
hdf5="none: .deps holds no HDF5 (tools/gpu-deps.sh)"
hdf5_root=""
for candidate in "$libs/hdf5" "$deps/hdf5"; do
  [[ -z $hdf5_root && -f $candidate/include/hdf5.h && -e $candidate/lib/libhdf5.so ]] && hdf5_root=$candidate
done
if [[ -n $hdf5_root ]]; then
  runtime=$hdf5_root/runtime
  rm -rf "$runtime" && mkdir -p "$runtime"
  ldconfig -p >"$build/ldconfig.txt" 2>/dev/null
  for library in "$hdf5_root"/lib/*.so.*; do
    name=$(basename "$library")
    grep -q "^[[:space:]]*${name//./\\.} (" "$build/ldconfig.txt" || ln -s "../lib/$name" "$runtime/$name"
  done
  printf '#include <hdf5.h>\n#include <stdio.h>\nint main(void) { unsigned a, b, c; if (H5get_libversion(&a, &b, &c) < 0) return 1; printf("%%u.%%u.%%u\\n", a, b, c); return 0; }\n' \
    >"$build/hdf5-probe.c"
  hdf5="none: the HDF5 in .deps does not load here (see gpu-check.log)"
  for path in "$runtime" "$hdf5_root/lib"; do
    if LD_LIBRARY_PATH="$path:$LD_LIBRARY_PATH" cc -I"$hdf5_root/include" "$build/hdf5-probe.c" -o "$build/hdf5-probe" \
         -L"$hdf5_root/lib" -lhdf5 -Wl,-rpath,"$hdf5_root/lib" >>"$log" 2>&1 &&
       version=$(LD_LIBRARY_PATH="$path:$LD_LIBRARY_PATH" "$build/hdf5-probe" 2>>"$log"); then
      export LD_LIBRARY_PATH="$path:$LD_LIBRARY_PATH"
      # -U: a build folder configured before finds HDF5 again, here.
      hdf5_flags=(-U "HDF5_*" -DHDF5_ROOT="$hdf5_root" -DCMAKE_DISABLE_FIND_PACKAGE_HDF5=OFF)
      hdf5="$version from .deps ($(find "$path" -name "*.so.*" | wc -l) of its libraries on the loader's path)"
      break
    fi
  done
fi
say "HDF5: $hdf5"
# Gymnasium's golden transitions (the golden GPU tests read them): beside the checkout on a development
# machine, in .deps/golden where tools/gpu-deps.sh carried them.
golden=""
for candidate in "$root/../shared/golden" "$deps/golden"; do
  [[ -z $golden && -d $candidate ]] && golden=$(cd "$candidate" && pwd)
done
[[ -n $golden ]] || say "no golden data (../shared/golden or .deps/golden): the golden GPU tests will fail"

{
  echo "== machine"
  nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1
  nproc
} >>"$log" 2>&1

# Build: the program and the GPU tests' executables first (ctest knows them once configured), going on
# past a target that fails; the rest, which only the CPU tests at the end need, is built there if time is left.
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
arch=${SURGE_CUDA_ARCHITECTURES:-${arch:+${arch}-real}}
arch=${arch:-90-real}
torch_prefix=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
say "building for CUDA architecture $arch in $build (torch prefix: ${torch_prefix:-none})"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSURGE_CUDA_ARCHITECTURES="$arch" ${golden:+-DSURGE_GOLDEN_DIR="$golden"} \
  ${torch_prefix:+-DSURGE_TORCH_PREFIX="$torch_prefix"} "${hdf5_flags[@]}" >"$out/build.log" 2>&1
configure_status=$?
keep_going=(-k)
grep -q "^CMAKE_GENERATOR:INTERNAL=Ninja" "$build/CMakeCache.txt" 2>/dev/null && keep_going=(-k 0)
gpu_test_targets=$(ctest --test-dir "$build" -N -L gpu | sed -n 's/^ *Test *#[0-9]*: *\(.*\)$/test_\1/p')
build_status=$configure_status
if ((configure_status == 0)); then
  # shellcheck disable=SC2086  # one target per word
  cmake --build "$build" -j "$jobs" --target surge $gpu_test_targets -- "${keep_going[@]}" >>"$out/build.log" 2>&1
  build_status=$?
fi
tail -3 "$out/build.log" | tee -a "$log"
record build --field "status=$build_status" --field "arch=$arch" --field "seconds=$(($(date +%s) - started))" \
  --field "hdf5=$hdf5"
surge=$build/bin/surge
if [[ $build_status -ne 0 ]]; then
  say "BUILD FAILED (exit $build_status; see build.log); going on with what did build"
  grep -E "error" "$out/build.log" | head -20 | tee -a "$log"
fi
if [[ ! -x $surge ]]; then
  say "no surge program: the stages that run it are skipped"
  surge=""
fi
say "built in $(($(date +%s) - started)) s"
# Scratch outside OUTDIR: OUTDIR holds only the 8 files named above.
scratch=$build/gpu-check
rm -rf "$scratch" && mkdir -p "$scratch"
if [[ -n $surge ]]; then
  "$surge" --version 2>&1 | tee -a "$log"
  "$surge" doctor 2>&1 | tee -a "$log"
  "$surge" doctor --json >"$scratch/doctor.json" 2>>"$log" && record doctor --json "$scratch/doctor.json"
fi
summarise

# The kernel resource report for the architecture built (the kernel_report target, where this build has it).
if ((configure_status != 0)); then
  skipped "kernel report" "" "the build was not configured"
elif t=$(allow 60); then
  stage_begins "kernel report"
  rm -f "$build/kernel-report.json"
  timeout "$t" cmake --build "$build" -j "$jobs" --target kernel_report >"$scratch/kernel-report.log" 2>&1
  status=$?
  cat "$scratch/kernel-report.log" >>"$out/build.log"
  if [[ -f $build/kernel-report.json ]]; then
    cp "$build/kernel-report.json" "$out/kernel-report.json"
    verdict="written for $arch"
  elif grep -qiE "no rule to make target|unknown target" "$scratch/kernel-report.log"; then
    verdict="this build has no kernel_report target"
  else
    verdict="kernel_report failed (exit $status; see build.log)"
  fi
  say "kernel report: $verdict"
  record kernel_report --field "status=$verdict"
else
  skipped "kernel report"
fi
summarise

echo "== GPU tests" >>"$out/tests.log"
if t=$(allow 240); then
  stage_begins "GPU tests"
  say "GPU tests (at most $t s)"
  timeout "$t" ctest --test-dir "$build" -L gpu --output-on-failure --timeout 120 >>"$out/tests.log" 2>&1
  tail -15 "$out/tests.log" | tee -a "$log"
else
  skipped "GPU tests"
fi
summarise

# Each scenario's built-in config (its [cuda] table) for 2^20 steps: the first iteration eager, the
# second captured as a CUDA graph, the rest replays. The summary checks the run ended and its losses are finite.
say "surge train --device cuda, 2^20 steps per scenario (last row of metrics.csv)"
for run in cartpole acrobot mountain_car pendulum mountain_car_continuous \
           "cartpole --physics masspole=0.05:0.2,length=0.4:0.6"; do
  [[ -n $surge ]] || { skipped "surge train per scenario" "$run" "no surge program"; continue; }
  t=$(allow 60) || { skipped "surge train per scenario" "$run"; continue; }
  stage_begins "surge train per scenario"
  dir="$scratch/train-${run//[^A-Za-z0-9_.]/_}"
  echo "== surge train --scenario $run" >>"$out/tests.log"
  begin=$EPOCHREALTIME
  # shellcheck disable=SC2086  # $run holds the scenario and its extra flags
  timeout "$t" "$surge" train --scenario $run --device cuda --total-steps 1048576 --out "$dir" --overwrite >>"$out/tests.log" 2>&1
  status=$?
  say "  $run: exit $status, last row: $(tail -n 1 "$dir/metrics.csv" 2>/dev/null)"
  record train --csv "$dir/metrics.csv" --field "run=$run" --field "status=$status" --field "seconds=$(since "$begin")"
done
summarise

# train_to_475 KIND NAME SECONDS ARGS...: `surge train ARGS --device cuda --target-return 475` for at most
# SECONDS into $scratch/NAME, its output appended to tests.log, its metrics recorded as KIND (with the
# first row that reached 475) and its last line said.
train_to_475() {
  local kind=$1 name=$2 seconds=$3 begin status final
  shift 3
  echo "== surge train $* --device cuda --target-return 475" >>"$out/tests.log"
  begin=$EPOCHREALTIME
  timeout "$seconds" "$surge" train "$@" --device cuda --target-return 475 --out "$scratch/$name" --overwrite \
    >"$scratch/$name.log" 2>&1
  status=$?
  cat "$scratch/$name.log" >>"$out/tests.log"
  final=$(tr '\r' '\n' <"$scratch/$name.log" | grep -v '^[[:space:]]*$' | tail -n 1)
  say "  exit $status: $final"
  record "$kind" --csv "$scratch/$name/metrics.csv" --reach return_last100=475 --field "status=$status" \
    --field "seconds=$(since "$begin")" --field "final_line=$final"
}

# CartPole to a return of 475 with its built-in CUDA config: the README's time-to-threshold figure.
if [[ -z $surge ]]; then
  skipped "CartPole to 475" "" "no surge program"
elif t=$(allow 90); then
  stage_begins "CartPole to 475"
  say "surge train --scenario cartpole --device cuda --target-return 475 (at most $t s)"
  train_to_475 target_475 target-475 "$t" --scenario cartpole
else
  skipped "CartPole to 475"
fi
summarise

# Pixels on CUDA (docs/pixels.md): CartPole from pixels to 475 with scenarios/configs/cartpole_pixels.toml
# (its 3M-step schedule, as the CPU run that solved it), then at N = 2^12 .. 2^16 the pixel env step
# (`surge bench env --observation pixels`, the config's frames) and three training iterations of that
# config (minibatches of at most 2^16 rows), the second and third replayed from the CUDA graph:
# env-steps/s of both and the run's time.
# At most 150 s in all; a size the stage's time cannot hold is skipped.
pixel_config=scenarios/configs/cartpole_pixels.toml
if [[ -z $surge ]]; then
  skipped "pixels on CUDA" "" "no surge program"
elif t=$(allow 150); then
  stage_begins "pixels on CUDA"
  stage_end=$(($(date +%s) + t))
  left=$((stage_end - $(date +%s)))
  say "pixels: surge train --config $pixel_config --device cuda --target-return 475 (at most $((left < 75 ? left : 75)) s)"
  train_to_475 pixels_475 pixels-475 $((left < 75 ? left : 75)) --config "$pixel_config" --total-steps 3000000
  summarise
  printf "%10s %18s %16s %10s\n" num_envs bench_env_steps/s train_steps/s train_s | tee -a "$log"
  for p in 12 13 14 15 16; do
    n=$((1 << p))
    left=$((stage_end - $(date +%s)))
    if ((left < 10)); then
      skipped "pixels on CUDA" "N >= $n" "the stage's $t s were used up"
      break
    fi
    rate=$(timeout $((left < 20 ? left : 20)) "$surge" bench env --scenario cartpole --device cuda --observation pixels \
      --frame-size 48 --grayscale --frame-stack 2 --num-envs $n --steps 32 --repeats 3 2>>"$log" |
      sed -n 's/^env-steps\/s (median) *\([^ ]*\).*/\1/p')
    left=$((stage_end - $(date +%s)))
    dir="$scratch/pixels-train-$n"
    begin=$EPOCHREALTIME
    # Minibatches of at most 2^16 rows (the config's 4 up to N = 2^13), well inside cuDNN's 32-bit tensors.
    minibatches=$((n * 32 / 65536 > 4 ? n * 32 / 65536 : 4))
    timeout $((left < 30 ? left : 30)) "$surge" train --config "$pixel_config" --device cuda --num-envs $n \
      --set num_minibatches=$minibatches --total-steps $((n * 32 * 3)) --out "$dir" --overwrite >>"$out/tests.log" 2>&1
    status=$?
    seconds=$(since "$begin")
    # The last iteration's sps column: a replay of the graph.
    sps=$(python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
print(rows[-1][rows[0].index("sps")] if len(rows) > 1 and "sps" in rows[0] else "-")' "$dir/metrics.csv" 2>/dev/null)
    printf "%10d %18s %16s %10s\n" $n "${rate:--}" "${sps:--}" "$seconds" | tee -a "$log"
    record pixels_size --field "num_envs=$n" --field "bench_env_steps_per_s=${rate:-null}" \
      --field "train_sps=${sps:-null}" --field "train_status=$status" --field "train_seconds=$seconds"
    summarise
  done
else
  skipped "pixels on CUDA"
fi
summarise

if [[ -z $surge ]]; then
  skipped "bench env sweep" "" "no surge program"
elif t=$(allow 90); then
  stage_begins "bench env sweep"
  say "bench env sweep: cartpole, N = 2^10 .. 2^24 (fused; per step at even powers)"
  printf "%10s %8s %14s %10s %10s %10s\n" num_envs steps env_steps/s write_GB/s copy_GB/s fraction | tee -a "$log"
  stage_end=$(($(date +%s) + t))
  for p in $(seq 10 24); do
    n=$((1 << p))
    steps=$(((1 << 28) / n))
    ((steps > 65536)) && steps=65536
    ((steps < 32)) && steps=32
    for mode in fused step; do
      [[ $mode == step && $((p % 2)) -ne 0 ]] && continue
      [[ $mode == step ]] && steps_here=$((steps < 256 ? steps : 256)) || steps_here=$steps
      left=$((stage_end - $(date +%s)))
      if ((left < 5)); then
        skipped "bench env sweep" "N >= $n" "the stage's $t s were used up"
        break 2
      fi
      json="$scratch/bench-env.json"
      rm -f "$json"
      if timeout $((left < 60 ? left : 60)) "$surge" bench env --scenario cartpole --device cuda --num-envs $n \
          --steps "$steps_here" --repeats 5 --mode $mode --json "$json" >/dev/null 2>>"$log"; then
        record bench_env --json "$json"
        python3 - "$json" <<'PY' | tee -a "$log"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['num_envs']:10d} {r['steps']:8d} {r['env_steps_per_s']:14.4g} {r['write_gb_per_s']:10.4g} {r['copy_gb_per_s']:10.4g} {r['fraction_of_copy_bandwidth']:10.3f} {r['mode']}")
PY
      else
        say "bench env failed at N=$n mode=$mode"
      fi
    done
    summarise
  done
else
  skipped "bench env sweep"
fi
summarise

# 2^20 first: the README's figure.
for n in 1048576 65536 4096; do
  [[ -n $surge ]] || { skipped "bench train" "N=$n" "no surge program"; continue; }
  t=$(allow 60) || { skipped "bench train" "N=$n"; continue; }
  stage_begins "bench train"
  say "bench train: cartpole, N=$n, graphs on and off"
  rm -f "$scratch/bench-train.json"
  timeout "$t" "$surge" bench train --scenario cartpole --device cuda --num-envs $n --json "$scratch/bench-train.json" 2>&1 |
    tail -4 | tee -a "$log"
  [[ -f $scratch/bench-train.json ]] && record bench_train --json "$scratch/bench-train.json"
  summarise
done

# The precisions side by side at 2^20 (fp32, tf32, bf16 alternating): their lines go to gpu-check.log.
if [[ -n $surge ]] && t=$(allow 60); then
  stage_begins "bench train"
  say "bench train: cartpole, N=1048576, precisions fp32, tf32 and bf16 alternating"
  timeout "$t" "$surge" bench train --scenario cartpole --device cuda --num-envs 1048576 --precision fp32,tf32,bf16 \
    --repeats 3 2>&1 | tail -8 | tee -a "$log"
else skipped "bench train" "precisions"; fi
# The fused CUDA MLP kernels (rl/fused_mlp_cuda.hpp) against cuBLASLt at 2^20 environments and 64 x 64
# hidden layers, fused first: their lines go to gpu-check.log.
for fused in true false; do
  [[ -n $surge ]] || break
  t=$(allow 45) || { skipped "bench train" "cuda_fused_mlp=$fused"; continue; }
  stage_begins "bench train"
  say "bench train: cartpole, N=1048576, hidden 64x64, cuda_fused_mlp=$fused"
  timeout "$t" "$surge" bench train --scenario cartpole --device cuda --num-envs 1048576 --set 'hidden=[64,64]' \
    --set cuda_fused_mlp=$fused --repeats 3 2>&1 | tail -4 | sed "s/^/cuda_fused_mlp=$fused: /" | tee -a "$log"
done
# 1024 CartPole agents of 64 environments: the batched learner, then one learner per agent.
for learner in batched separate; do
  [[ -n $surge ]] || break
  t=$(allow 60) || { skipped "bench train" "1024 agents, $learner"; continue; }
  stage_begins "bench train"
  say "bench train: 1024 CartPole agents of 64 environments, --learner $learner"
  timeout "$t" "$surge" bench train --scenario cartpole --device cuda --num-envs 64 --agents 1024 --learner $learner \
    --repeats 3 2>&1 | tail -5 | sed "s/^/learner=$learner: /" | tee -a "$log"
done
# Issue 15's GPU figure: 1024 CartPole agents of 64 envs each until every one reaches 475 (--learner auto: the
# batched learner on CUDA).
if [[ -n $surge ]] && t=$(allow 150); then
  stage_begins "1024 agents to 475"; say "train: 1024 CartPole agents of 64 environments to 475"
  train_to_475 agents_475 agents-1024 "$t" --scenario cartpole --num-envs 64 --agents 1024 --seed 1
else skipped "1024 agents to 475"; fi

# compute-sanitizer over a few short GPU test cases (TOOL TEST [CATCH2 FILTER]), each capped; the GPU
# tests of the staging buffers, events and streams, where the build has them, under memcheck and synccheck.
sanitizer=$(command -v compute-sanitizer || true)
nvcc_dir=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
for candidate in "$nvcc_dir/compute-sanitizer" "$nvcc_dir/../compute-sanitizer/compute-sanitizer" \
                 /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -z $sanitizer && -x $candidate ]] && sanitizer=$candidate
done
sanitizer_runs=("memcheck philox_gpu" "memcheck vec_env_gpu [rng]" "memcheck trainer_gpu [kernels]"
                "memcheck normalization_gpu ~[trainer]" "racecheck trainer_gpu [kernels]"
                "racecheck normalization_gpu ~[trainer]" "synccheck trainer_gpu [kernels]"
                "initcheck vec_env_gpu [rng]" "initcheck trainer_gpu [kernels]"
                "racecheck fused_mlp_gpu Fused CUDA MLP gradients are the same bits from run to run"
                "memcheck fused_mlp_gpu Fused CUDA MLP in tf32 and bf16 on tensor cores")
for test in $(ctest --test-dir "$build" -N -L gpu 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *\(.*\)$/\1/p' |
              grep -E 'staging|event|stream|copy_rows'); do
  sanitizer_runs+=("memcheck $test" "synccheck $test")
done
if [[ -z $sanitizer ]]; then
  skipped "compute-sanitizer" "" "compute-sanitizer not found beside nvcc"
elif t=$(allow 150); then
  stage_begins "compute-sanitizer"
  say "compute-sanitizer ($sanitizer): ${#sanitizer_runs[@]} runs in at most $t s"
  stage_end=$(($(date +%s) + t))
  for entry in "${sanitizer_runs[@]}"; do
    read -r tool test filter <<<"$entry"
    left=$((stage_end - $(date +%s)))
    if ((left < 10)); then
      skipped "compute-sanitizer" "$tool $test ${filter:-}" "the stage's $t s were used up"
      continue
    fi
    if [[ ! -x $build/bin/test_$test ]]; then
      record sanitizer --field "tool=$tool" --field "test=$test" --field "filter=${filter:-}" --field "verdict=not built"
      continue
    fi
    echo "== compute-sanitizer $tool $test ${filter:-}" >>"$out/tests.log"
    begin=$EPOCHREALTIME
    timeout $((left < 45 ? left : 45)) "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 \
      "$build/bin/test_$test" ${filter:+"$filter"} >"$scratch/sanitizer.log" 2>&1
    status=$?
    head -c 200000 "$scratch/sanitizer.log" >>"$out/tests.log"
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$scratch/sanitizer.log" | tail -n 1)
    if grep -qiE "device not supported|unable to find injection library|not supported on this" "$scratch/sanitizer.log"; then
      verdict="unsupported here"
    elif ((status == 124)); then verdict="timeout"
    elif ((status == 86)) || [[ ${errors:-0} -gt 0 ]]; then verdict="ERRORS"
    elif ((status == 77)); then verdict="skipped (no usable GPU)"
    elif ((status == 0)); then verdict="clean"
    else verdict="test failed (exit $status)"
    fi
    say "  $tool $test ${filter:-}: $verdict (${errors:-?} errors, exit $status)"
    record sanitizer --field "tool=$tool" --field "test=$test" --field "filter=${filter:-}" --field "verdict=$verdict" \
      --field "errors=${errors:-null}" --field "status=$status" --field "seconds=$(since "$begin")"
    summarise
    if [[ $verdict == "unsupported here" ]]; then
      record sanitizer_note --field "text=compute-sanitizer does not support this machine's GPU or driver; the other runs were not tried."
      break
    fi
  done
else
  skipped "compute-sanitizer"
fi
summarise

if [[ -z $surge ]]; then
  skipped "throughput sweeps" "" "no surge program"
else
  say "throughput research: sweeps (env fused, env step, train) and rooflines (env, train); JSON lines in throughput.jsonl, figures in throughput.svg"
  names=()
  for job in "sweep-fused:sweep --what env --mode fused" "sweep-step:sweep --what env --mode step" \
             "sweep-train:sweep --what train --repeats 3 --min-env-steps 8388608" \
             "roofline-env:roofline --what env" "roofline-train:roofline --what train --repeats 3"; do
    name=${job%%:*}
    t=$(allow 120) || { skipped "throughput sweeps" "$name"; continue; }
    stage_begins "throughput sweeps"
    # shellcheck disable=SC2086  # the job's flags split into words
    timeout "$t" "$surge" bench ${job#*:} --scenario cartpole --device cuda --json "$scratch/$name.json" \
      --svg "$scratch/$name.svg" 2>>"$log" | tee -a "$log"
    [[ -f $scratch/$name.json ]] && cat "$scratch/$name.json" >>"$out/throughput.jsonl" && names+=("$name")
    summarise
  done
  # The figures one under another in one SVG (nested <svg> elements).
  python3 - "$scratch" "$out/throughput.svg" "${names[@]}" <<'PY' 2>&1 | tee -a "$log"
import os, sys, xml.etree.ElementTree as ET
scratch, target, ns = sys.argv[1], sys.argv[2], "http://www.w3.org/2000/svg"
ET.register_namespace("", ns)
parts = [ET.parse(f"{scratch}/{n}.svg").getroot() for n in sys.argv[3:] if os.path.exists(f"{scratch}/{n}.svg")]
if parts:
    height = sum(float(p.get("height")) for p in parts)
    root = ET.Element(f"{{{ns}}}svg", width="760", height=str(height), viewBox=f"0 0 760 {height}")
    y = 0.0
    for p in parts:
        p.set("y", str(y)); y += float(p.get("height")); root.append(p)
    ET.ElementTree(root).write(target, xml_declaration=True, encoding="UTF-8")
PY
fi
summarise

echo "== CPU tests" >>"$out/tests.log"
if t=$(allow 300); then
  stage_begins "CPU tests"
  say "CPU tests (reference, not slow; building them and running them in at most $t s)"
  timeout "$t" cmake --build "$build" -j "$jobs" -- "${keep_going[@]}" >>"$out/build.log" 2>&1
  if t=$(allow 180); then
    timeout "$t" ctest --test-dir "$build" -L cpu -LE slow --timeout 120 >>"$out/tests.log" 2>&1
    tail -4 "$out/tests.log" | tee -a "$log"
  else
    skipped "CPU tests" "ctest, after building them"
  fi
else
  skipped "CPU tests"
fi
say "done in $(($(date +%s) - started)) s"
summarise
