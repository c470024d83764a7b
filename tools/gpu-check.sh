#!/usr/bin/env bash
# tools/gpu-check.sh OUTDIR: the one command for a machine with an NVIDIA GPU.
#
# Builds Surge for the GPU it finds, runs the GPU tests (and the CPU ones, for reference) and the
# benchmark sweeps, and writes logs and JSON into OUTDIR. Works on a bare machine (nvcc, CMake, Python;
# no Debian packages, no network) when .deps/ was made beforehand by tools/gpu-deps.sh and carried along.
# Keeps to at most 8 output files. Well inside 5 minutes on an H100/H200-class machine.
set -uo pipefail
out=${1:?usage: tools/gpu-check.sh OUTDIR}
cd "$(dirname "$0")/.."
root=$PWD
mkdir -p "$out"
log="$out/gpu-check.log"
: >"$log"
say() { echo "gpu-check: $*" | tee -a "$log"; }
started=$(date +%s)

if [[ -d .deps ]]; then
  export CPATH="$root/.deps/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$root/.deps/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$root/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CMAKE_PREFIX_PATH="$root/.deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
export PATH="$PATH:/usr/local/cuda/bin"

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
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSURGE_CUDA_ARCHITECTURES="$arch" \
  ${torch_prefix:+-DSURGE_TORCH_PREFIX="$torch_prefix"} >"$out/build.log" 2>&1
cmake --build build-gpu -j "$(nproc)" >>"$out/build.log" 2>&1
build_status=$?
tail -3 "$out/build.log" | tee -a "$log"
if [[ $build_status -ne 0 ]]; then
  say "BUILD FAILED (see build.log)"
  grep -E "error" "$out/build.log" | head -20 | tee -a "$log"
  exit 1
fi
surge=build-gpu/bin/surge
$surge --version 2>&1 | tee -a "$log"
if $surge doctor --help >/dev/null 2>&1; then
  $surge doctor 2>&1 | tee -a "$log"
  $surge doctor --json >"$out/doctor.json" 2>>"$log"
fi

say "GPU tests"
ctest --test-dir build-gpu -L gpu --output-on-failure --timeout 120 >"$out/ctest.log" 2>&1
tail -15 "$out/ctest.log" | tee -a "$log"
say "CPU tests (reference, not slow)"
ctest --test-dir build-gpu -L cpu -LE slow --timeout 120 >>"$out/ctest.log" 2>&1
tail -4 "$out/ctest.log" | tee -a "$log"

say "bench env sweep: cartpole, N = 2^10 .. 2^24 (fused), JSON lines in bench-env.jsonl"
: >"$out/bench-env.jsonl"
printf "%10s %8s %14s %10s %10s %10s\n" num_envs steps env_steps/s write_GB/s copy_GB/s fraction | tee -a "$log"
for p in $(seq 10 24); do
  n=$((1 << p))
  steps=$(( (1 << 28) / n ))
  ((steps > 65536)) && steps=65536
  ((steps < 32)) && steps=32
  for mode in fused step; do
    [[ $mode == step && $((p % 2)) -ne 0 ]] && continue
    [[ $mode == step ]] && steps_here=$((steps < 256 ? steps : 256)) || steps_here=$steps
    json=$(mktemp)
    if timeout 60 $surge bench env --scenario cartpole --device cuda --num-envs $n --steps $steps_here --repeats 5 \
        --mode $mode --json "$json" >/dev/null 2>>"$log"; then
      cat "$json" >>"$out/bench-env.jsonl"
      python3 - "$json" <<'PY' | tee -a "$log"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['num_envs']:10d} {r['steps']:8d} {r['env_steps_per_s']:14.4g} {r['write_gb_per_s']:10.4g} {r['copy_gb_per_s']:10.4g} {r['fraction_of_copy_bandwidth']:10.3f} {r['mode']}")
PY
    else
      say "bench env failed at N=$n mode=$mode"
    fi
    rm -f "$json"
  done
done

if $surge bench train --help >/dev/null 2>&1; then
  say "bench train: end-to-end PPO throughput, graphs on and off"
  for n in 4096 65536 1048576; do
    timeout 90 $surge bench train --scenario cartpole --device cuda --num-envs $n --json "$out/bench-train-$n.json" 2>&1 |
      tail -4 | tee -a "$log"
  done
  cat "$out"/bench-train-*.json >"$out/bench-train.jsonl" 2>/dev/null && rm -f "$out"/bench-train-*.json
fi
if $surge bench sweep --help >/dev/null 2>&1; then
  say "throughput research: sweeps (env fused, env step, train) and rooflines (env, train); JSON lines in throughput.jsonl, figures in throughput.svg"
  : >"$out/throughput.jsonl"
  names=()
  for job in "sweep-fused:sweep --what env --mode fused" "sweep-step:sweep --what env --mode step" \
             "sweep-train:sweep --what train --repeats 3 --min-env-steps 8388608" \
             "roofline-env:roofline --what env" "roofline-train:roofline --what train --repeats 3"; do
    name=${job%%:*}
    timeout 180 $surge bench ${job#*:} --scenario cartpole --device cuda --json "$out/$name.json" --svg "$out/$name.svg" \
      2>>"$log" | tee -a "$log"
    [[ -f $out/$name.json ]] && cat "$out/$name.json" >>"$out/throughput.jsonl" && names+=("$name")
  done
  # The figures one under another in one SVG (nested <svg> elements), to stay within 8 output files.
  python3 - "$out" "${names[@]}" <<'PY' 2>&1 | tee -a "$log"
import os, sys, xml.etree.ElementTree as ET
out, ns = sys.argv[1], "http://www.w3.org/2000/svg"
ET.register_namespace("", ns)
parts = [ET.parse(f"{out}/{n}.svg").getroot() for n in sys.argv[2:] if os.path.exists(f"{out}/{n}.svg")]
height = sum(float(p.get("height")) for p in parts)
root = ET.Element(f"{{{ns}}}svg", width="760", height=str(height), viewBox=f"0 0 760 {height}")
y = 0.0
for p in parts:
    p.set("y", str(y)); y += float(p.get("height")); root.append(p)
ET.ElementTree(root).write(f"{out}/throughput.svg", xml_declaration=True, encoding="UTF-8")
PY
  rm -f "$out"/sweep-*.json "$out"/sweep-*.svg "$out"/roofline-*.json "$out"/roofline-*.svg
fi
say "done in $(( $(date +%s) - started )) s"
