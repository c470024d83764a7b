#!/usr/bin/env python3
"""tools/gpu_summary.py on inputs shaped as tools/gpu-check.sh writes them: real `surge` JSON and CSV from tiny
CPU runs (bench train's keys renamed to its CUDA form), ctest and compute-sanitizer console lines as those
tools print them, and a kernel report in kernel_report's schema. The summary must have every section and
the figures fed in; and a check stopped after its build must still give a summary naming what did not run.

usage: check_gpu_summary.py SURGE_BINARY SOURCE_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

GPU_CTEST = """Test project /build-gpu
    Start 21: vec_env_gpu
 1/4 Test #21: vec_env_gpu ......................   Passed    3.21 sec
    Start 22: scenarios_gpu
 2/4 Test #22: scenarios_gpu ....................***Failed    1.02 sec
    Start 23: philox_gpu
 3/4 Test #23: philox_gpu .......................***Skipped   0.01 sec
    Start 31: trainer_gpu
 4/4 Test #31: trainer_gpu ......................***Timeout 120.05 sec

25% tests passed, 2 tests failed out of 4
"""
CPU_CTEST = """Test project /build-gpu
    Start  1: philox
 1/2 Test  #1: philox ...........................   Passed    0.08 sec
    Start  2: lane_math
 2/2 Test  #2: lane_math ........................***Exception: SegFault  0.20 sec

50% tests passed, 1 tests failed out of 2
"""
SANITIZER_LOG = """========= COMPUTE-SANITIZER
===============================================================================
All tests passed (12 assertions in 2 test cases)

========= ERROR SUMMARY: 0 errors
"""
KERNEL_REPORT = {
    "schema_version": 1, "architectures": ["sm_90"],
    "kernels": [
        {"mangled": "_Z4stepv", "arch": "sm_90", "registers": 40, "stack": 0, "spill_stores": 0, "spill_loads": 0,
         "shared": 0, "unit": "vec_env.cu", "name": "fused_rollout_kernel<CartPole>", "block": 256,
         "occupancy": {"blocks_per_sm": 6, "warps_per_sm": 48, "occupancy": 0.75, "limited_by": "registers"},
         "hot": "env step"},
        {"mangled": "_Z3gaev", "arch": "sm_90", "registers": 255, "stack": 64, "spill_stores": 96, "spill_loads": 128,
         "shared": 1024, "unit": "gae.cu", "name": "grid_stride_kernel<lambda 1 in compute_gae>", "block": 256,
         "occupancy": {"blocks_per_sm": 1, "warps_per_sm": 8, "occupancy": 0.125, "limited_by": "registers"},
         "hot": "gae"},
        {"mangled": "_Z5otherv", "arch": "sm_90", "registers": 16, "stack": 0, "spill_stores": 0, "spill_loads": 0,
         "shared": 0, "unit": "adam.cu", "name": "cold_kernel", "block": None, "occupancy": None, "hot": None},
    ]}
LOG = """gpu-check: HDF5: 1.10.8 from .deps/hdf5 (3 carried libraries on the loader's path)
== machine
name, compute_cap, memory.total [MiB], driver_version, clocks.max.sm [MHz]
NVIDIA H200, 9.0, 143771 MiB, 580.159.04, 1980 MHz
Cuda compilation tools, release 13.0, V13.0.48
cmake version 3.31.6
16
gpu-check: building for CUDA architecture 90-real in build-gpu (torch prefix: none)
"""
SECTIONS = ["# tools/gpu-check.sh summary", "## Machine and build", "## GPU tests", "## compute-sanitizer",
            "## Kernel resources", "## surge train --device cuda", "## CartPole to 475", "## Environment stepping",
            "## PPO training throughput", "## Throughput sweeps and rooflines", "## CPU tests",
            "## Skipped or not reached"]

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def run(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    if result.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(command)} exited {result.returncode}: {result.stderr}")
    return result


def main():
    surge, source, work = (os.path.abspath(argument) for argument in sys.argv[1:4])
    tool = [sys.executable, os.path.join(source, "tools", "gpu_summary.py")]
    shutil.rmtree(work, ignore_errors=True)
    out, scratch = os.path.join(work, "out"), os.path.join(work, "scratch")
    os.makedirs(out)
    os.makedirs(scratch)

    def record(*args):
        run(tool + ["record", out] + list(args), scratch)

    def text(name, content, mode="w"):
        with open(os.path.join(out, name), mode, encoding="utf-8") as file:
            file.write(content)

    def summary(which):
        """Writes summary.md from what the check recorded so far, and checks it has every section."""
        run(tool + ["summary", out], scratch)
        with open(os.path.join(out, "summary.md"), encoding="utf-8") as file:
            written = file.read()
        for section in SECTIONS:
            check(section in written, f"the {which} lacks '{section}'")
        return written

    # A check stopped right after its build: the summary still comes, and names the stages it did not reach.
    text("gpu-check.log", LOG)
    record("build", "--field", "status=0", "--field", "arch=90-real", "--field", "seconds=151", "--field",
           "hdf5=1.10.8 from .deps/hdf5")
    record("stage", "--field", "stage=GPU tests")
    early = summary("early summary")
    stopped = [line for line in early.splitlines() if line.startswith("- not reached (the check stopped")]
    check(stopped and "bench env sweep" in stopped[0] and "build" not in stopped[0] and "GPU tests" not in stopped[0],
          f"the early summary does not name the stages not reached: {stopped}")
    check("did not finish" in early, "the early summary does not say the check did not finish")
    check("- ran, but left no results (see gpu-check.log and tests.log): GPU tests" in early,
          "the early summary does not name the stage that ran without results")

    # Real surge outputs at small sizes on the CPU.
    doctor = run([surge, "doctor", "--json"], scratch).stdout
    text_path = os.path.join(scratch, "doctor.json")
    with open(text_path, "w", encoding="utf-8") as file:
        file.write(doctor)
    record("doctor", "--json", text_path)
    for n in (1024, 4096):
        for mode in ("fused", "step"):
            path = os.path.join(scratch, f"env-{n}-{mode}.json")
            run([surge, "bench", "env", "--scenario", "cartpole", "--device", "cpu", "--num-envs", str(n), "--steps", "16",
                 "--repeats", "1", "--mode", mode, "--json", path], scratch)
            record("bench_env", "--json", path)
    path = os.path.join(scratch, "bench-train.json")
    run([surge, "bench", "train", "--scenario", "cartpole", "--device", "cpu", "--num-envs", "64", "--num-steps", "8",
         "--repeats", "1", "--iterations", "1", "--json", path], scratch)
    train = json.load(open(path, encoding="utf-8"))
    rate = train.pop("env_steps_per_s")
    runs = train.pop("env_steps_per_s_runs")
    train.update(env_steps_per_s_graph=rate * 2, env_steps_per_s_graph_runs=[rate * 2 for _ in runs],
                 env_steps_per_s_no_graph=rate, env_steps_per_s_no_graph_runs=runs, device="cuda:0")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(train, file)
    record("bench_train", "--json", path)
    for name, flags in (("cartpole", []), ("cartpole --physics masspole=0.05:0.2,length=0.4:0.6",
                                           ["--physics", "masspole=0.05:0.2,length=0.4:0.6"])):
        directory = os.path.join(scratch, "train-" + str(len(flags)))
        run([surge, "train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", "4096", "--out", directory]
            + flags, scratch)
        record("train", "--csv", os.path.join(directory, "metrics.csv"), "--field", f"run={name}", "--field", "status=0",
               "--field", "seconds=1.5")
    directory = os.path.join(scratch, "target")
    final = run([surge, "train", "--scenario", "cartpole", "--device", "cpu", "--target-return", "60", "--total-steps",
                 "300000", "--out", directory], scratch)
    final_line = [line for line in final.stdout.replace("\r", "\n").splitlines() if line.strip()][-1]
    record("target_475", "--csv", os.path.join(directory, "metrics.csv"), "--reach", "return_last100=60", "--field",
           "status=0", "--field", "seconds=2.5", "--field", f"final_line={final_line}")
    for name, command in (("sweep", ["bench", "sweep", "--what", "env", "--mode", "fused", "--from", "64", "--to", "128",
                                     "--steps", "16", "--repeats", "1", "--min-env-steps", "1024"]),
                          ("roofline", ["bench", "roofline", "--what", "env", "--num-envs", "256", "--steps", "16",
                                        "--repeats", "1", "--gemm-size", "128", "--min-env-steps", "4096"])):
        path = os.path.join(scratch, name + ".json")
        run([surge] + command + ["--scenario", "cartpole", "--device", "cpu", "--json", path], scratch)
        text("throughput.jsonl", open(path, encoding="utf-8").read(), "a")
    text("kernel-report.json", json.dumps(KERNEL_REPORT, indent=1))
    record("kernel_report", "--field", "status=written for 90-real")
    text("tests.log", "== GPU tests\n" + GPU_CTEST + "== surge train --scenario cartpole\nsteps 4096\n"
         + "== compute-sanitizer memcheck philox_gpu\n" + SANITIZER_LOG + "== CPU tests\n" + CPU_CTEST)
    record("sanitizer", "--field", "tool=memcheck", "--field", "test=philox_gpu", "--field", "filter=", "--field",
           "verdict=clean", "--field", "errors=0", "--field", "status=0", "--field", "seconds=12.5")
    record("sanitizer", "--field", "tool=racecheck", "--field", "test=trainer_gpu", "--field", "filter=[kernels]",
           "--field", "verdict=ERRORS", "--field", "errors=3", "--field", "status=86", "--field", "seconds=30.1")
    record("skipped", "--field", "stage=throughput sweeps", "--field", "what=roofline-train", "--field",
           "reason=out of the 480 s budget")
    text("gpu-check.log", "gpu-check: done in 478 s\n", "a")
    full = summary("summary")
    expected = {
        "the GPU tests' counts": "1 passed, 2 failed, 1 skipped (of 4)",
        "the failed GPU tests": "scenarios_gpu (Failed)",
        "the CPU tests' counts": "1 passed, 1 failed, 0 skipped (of 2)",
        "the machine": "NVIDIA H200",
        "surge doctor's verdict": "surge doctor: ",
        "the build": "Build for `90-real`: ok in 151 s",
        "the sanitizer's clean run": "| memcheck | philox_gpu | `all` | clean |",
        "the sanitizer's errors": "| racecheck | trainer_gpu | `[kernels]` | ERRORS | 3 |",
        "the sanitizer's tally": "1 of 2 runs clean",
        "the kernel count": "3 kernels",
        "the spilling kernel": "96/128",
        "the register maximum": "registers at most 255",
        "env stepping at 2^10": "| 2^10 |",
        "env stepping at 2^12": "| 2^12 |",
        "bench train's speed-up": "| 2 |",
        "the target reached": "return_last100 >= 60 at step",
        "the target's final line": final_line.strip()[:30],
        "the randomised-physics run": "`cartpole --physics masspole=0.05:0.2,length=0.4:0.6` | ok",
        "a training run not given": "`pendulum` | not run",
        "the sweep": "sweep env (fused)",
        "the roofline": "roofline env",
        "the skipped stage": "throughput sweeps (roofline-train): out of the 480 s budget",
        "the whole time": "Whole check: 478 s",
    }
    for what, snippet in expected.items():
        check(snippet in full, f"the summary lacks {what}: '{snippet}'")
    check("- not reached" not in full, "a finished check's summary names stages as not reached")
    if failures:
        print(full)
        for failure in failures:
            print("FAILED:", failure)
        return 1
    print(f"summary.md: {len(full.splitlines())} lines, every section and figure present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
