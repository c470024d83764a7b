#!/usr/bin/env bash
# tools/gpu-check.sh OUTDIR: the one command for a machine with an NVIDIA GPU.
#
# Builds Surge for the GPU it finds, then runs, most important first: the GPU tests; a short
# `surge train --device cuda` of every scenario with its built-in config (and one with randomised
# physics); the environment benchmark over N; bench train; the throughput sweeps and rooflines; last,
# the CPU tests for reference. Everything shares one time budget counted from the start, build
# included (SURGE_GPU_CHECK_SECONDS, default 480; a device command may run 600 s): a stage the
# remaining time cannot hold is skipped, and the log says so. Works on a bare machine (nvcc, CMake, Python; no Debian packages, no network)
# when .deps/ was made beforehand by tools/gpu-deps.sh and carried along. Writes at most 8 files into
# OUTDIR; gpu-check.log is the summary to paste into a note, tests.log and build.log the details.
set -uo pipefail
out=${1:?usage: tools/gpu-check.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 1
root=$PWD
mkdir -p "$out"
log="$out/gpu-check.log"
: >"$log"
say() { echo "gpu-check: $*" | tee -a "$log"; }
started=$(date +%s)
budget=${SURGE_GPU_CHECK_SECONDS:-480}
# Seconds the next stage may take: at most $1, and what is left of the budget; fails when under 15 s are left.
allow() {
  local left=$((budget - ($(date +%s) - started)))
  ((left < 15)) && return 1
  echo $((left < $1 ? left : $1))
}
skipped() { say "SKIPPED $1: out of the ${budget} s budget"; }

if [[ -d .deps ]]; then
  export CPATH="$root/.deps/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$root/.deps/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$root/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$root/.deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
export PATH="$PATH:/usr/local/cuda/bin"
# Gymnasium's golden transitions (the golden GPU tests read them): beside the checkout on a development
# machine, in .deps/golden where tools/gpu-deps.sh carried them.
golden=""
for candidate in "$root/../shared/golden" "$root/.deps/golden"; do
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

arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
arch=${SURGE_CUDA_ARCHITECTURES:-${arch:+${arch}-real}}
arch=${arch:-90-real}
torch_prefix=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)" 2>/dev/null || true)
say "building for CUDA architecture $arch (torch prefix: ${torch_prefix:-none})"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSURGE_CUDA_ARCHITECTURES="$arch" ${golden:+-DSURGE_GOLDEN_DIR="$golden"} \
  ${torch_prefix:+-DSURGE_TORCH_PREFIX="$torch_prefix"} >"$out/build.log" 2>&1
# First the program and the GPU tests' executables (ctest knows them once configured); the rest, which
# only the CPU tests at the end need, is built there if time is left.
gpu_test_targets=$(ctest --test-dir build-gpu -N -L gpu | sed -n 's/^ *Test *#[0-9]*: *\(.*\)$/test_\1/p')
# shellcheck disable=SC2086  # one target per word
cmake --build build-gpu -j "$(nproc)" --target surge $gpu_test_targets >>"$out/build.log" 2>&1
build_status=$?
tail -3 "$out/build.log" | tee -a "$log"
if [[ $build_status -ne 0 ]]; then
  say "BUILD FAILED (see build.log)"
  grep -E "error" "$out/build.log" | head -20 | tee -a "$log"
  exit 1
fi
say "built in $(($(date +%s) - started)) s"
surge=build-gpu/bin/surge
# Scratch outside OUTDIR, so that an interrupted run leaves no more than the 8 files there.
scratch=build-gpu/gpu-check
rm -rf "$scratch" && mkdir -p "$scratch"
$surge --version 2>&1 | tee -a "$log"
$surge doctor 2>&1 | tee -a "$log"
$surge doctor --json >"$out/doctor.json" 2>>"$log"

: >"$out/tests.log"
if t=$(allow 240); then
  say "GPU tests (at most $t s)"
  timeout "$t" ctest --test-dir build-gpu -L gpu --output-on-failure --timeout 120 >>"$out/tests.log" 2>&1
  tail -15 "$out/tests.log" | tee -a "$log"
else
  skipped "GPU tests"
fi

# Each scenario's built-in config (its [cuda] table) for 2^20 steps: the first iteration eager, the
# second captured as a CUDA graph, the rest replays. Checks the run ended and its losses are finite.
say "surge train --device cuda, 2^20 steps per scenario: iterations, return_last100, policy and value loss of the last one"
for run in cartpole acrobot mountain_car pendulum mountain_car_continuous \
           "cartpole --physics masspole=0.05:0.2,length=0.4:0.6"; do
  t=$(allow 60) || { skipped "surge train --scenario $run"; continue; }
  dir="$scratch/train-${run//[^A-Za-z0-9_.]/_}"
  echo "== surge train --scenario $run" >>"$out/tests.log"
  # shellcheck disable=SC2086  # $run holds the scenario and its extra flags
  timeout "$t" $surge train --scenario $run --device cuda --total-steps 1048576 --out "$dir" >>"$out/tests.log" 2>&1
  status=$?
  python3 - "$dir/metrics.csv" "$run" "$status" <<'PY' 2>&1 | tee -a "$log"
import csv, math, sys
path, run, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    rows = list(csv.DictReader(open(path)))
except OSError:
    rows = []
finite = rows and all(math.isfinite(float(r[k])) for r in rows for k in ("policy_loss", "value_loss", "entropy", "approx_kl"))
problem = "" if finite else ", a loss is not finite" if rows else ", no metrics"
verdict = "ok" if status == 0 and finite else f"FAILED (exit {status}{problem})"
last = rows[-1] if rows else {}
def number(key):
    try:
        return f"{float(last[key]):.4g}"
    except (KeyError, ValueError):
        return "-"
print(f"  {run:52s} {verdict:8s} iterations {number('iteration'):>4s}  return_last100 {number('return_last100'):>9s}"
      f"  policy_loss {number('policy_loss'):>10s}  value_loss {number('value_loss'):>9s}  SPS {number('sps')}")
PY
done

if t=$(allow 90); then
  say "bench env sweep: cartpole, N = 2^10 .. 2^24 (fused; per step at even powers), JSON lines in bench-env.jsonl"
  : >"$out/bench-env.jsonl"
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
      ((left < 5)) && { say "bench env: stopped at N=$n (stage time used up)"; break 2; }
      json="$scratch/bench-env.json"
      rm -f "$json"
      if timeout $((left < 60 ? left : 60)) $surge bench env --scenario cartpole --device cuda --num-envs $n \
          --steps "$steps_here" --repeats 5 --mode $mode --json "$json" >/dev/null 2>>"$log"; then
        cat "$json" >>"$out/bench-env.jsonl"
        python3 - "$json" <<'PY' | tee -a "$log"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['num_envs']:10d} {r['steps']:8d} {r['env_steps_per_s']:14.4g} {r['write_gb_per_s']:10.4g} {r['copy_gb_per_s']:10.4g} {r['fraction_of_copy_bandwidth']:10.3f} {r['mode']}")
PY
      else
        say "bench env failed at N=$n mode=$mode"
      fi
    done
  done
else
  skipped "bench env sweep"
fi

: >"$out/bench-train.jsonl"
for n in 4096 65536 1048576; do
  t=$(allow 60) || { skipped "bench train at N=$n"; continue; }
  say "bench train: cartpole, N=$n, graphs on and off"
  rm -f "$scratch/bench-train.json"
  timeout "$t" $surge bench train --scenario cartpole --device cuda --num-envs $n --json "$scratch/bench-train.json" 2>&1 |
    tail -4 | tee -a "$log"
  cat "$scratch/bench-train.json" >>"$out/bench-train.jsonl" 2>/dev/null
done

say "throughput research: sweeps (env fused, env step, train) and rooflines (env, train); JSON lines in throughput.jsonl, figures in throughput.svg"
: >"$out/throughput.jsonl"
names=()
for job in "sweep-fused:sweep --what env --mode fused" "sweep-step:sweep --what env --mode step" \
           "sweep-train:sweep --what train --repeats 3 --min-env-steps 8388608" \
           "roofline-env:roofline --what env" "roofline-train:roofline --what train --repeats 3"; do
  name=${job%%:*}
  t=$(allow 120) || { skipped "bench $name"; continue; }
  # shellcheck disable=SC2086  # the job's flags split into words
  timeout "$t" $surge bench ${job#*:} --scenario cartpole --device cuda --json "$scratch/$name.json" \
    --svg "$scratch/$name.svg" 2>>"$log" | tee -a "$log"
  [[ -f $scratch/$name.json ]] && cat "$scratch/$name.json" >>"$out/throughput.jsonl" && names+=("$name")
done
# The figures one under another in one SVG (nested <svg> elements), to stay within 8 output files.
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

if t=$(allow 300); then
  say "CPU tests (reference, not slow; building them and running them in at most $t s)"
  echo "== CPU tests" >>"$out/tests.log"
  timeout "$t" cmake --build build-gpu -j "$(nproc)" >>"$out/build.log" 2>&1
  t=$(allow 180) && timeout "$t" ctest --test-dir build-gpu -L cpu -LE slow --timeout 120 >>"$out/tests.log" 2>&1
  tail -4 "$out/tests.log" | tee -a "$log"
else
  skipped "CPU tests"
fi
say "done in $(($(date +%s) - started)) s"
