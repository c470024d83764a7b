#!/usr/bin/env python3
"""K agents in one process against the same K runs one after another, measured side by side.

    python3 tools/agents_vs_sequential.py train --agents 64 --target-return 475 --rounds 3 --json a.json
    python3 tools/agents_vs_sequential.py bench --agents 64 --config 16x16 --config cleanrl --roofline --json b.json

train: `surge train --agents K --seed S --target-return R` (each agent stops at its own target) against
K processes `surge train --seed s --target-return R`, s = S .. S+K-1, started one after another as a
user would. Each round runs both, the order alternating between rounds. Reports per side the median
over rounds of wall time, CPU time (user + system of the processes) and env-steps (summed over the
agents), the ratio together / one after another, the load average before and after each round, and
whether every agent's steps to the target equal its run alone's (they should: docs/agents.md).

bench: `surge bench train --agents K` against `--agents 1` with the same per-agent settings (the same
--iterations per timed repeat on both sides: 16 by default, one round of surge train --agents), for each
--config (NxT: the scenario's built-in config at N envs x T steps; any other name: that --preset),
alternating per round;
the median env-steps/s of each side and the ratio, and the median CPU time per env-step of each side
(user + system of the timed repeats, as bench train reports it) with the cores the batch kept busy: the
rate is the one over the other, so this says whether a ratio short of the core count is CPU per step or
cores left idle. With --roofline, also how close the batch comes to
the SGEMM rate: the FLOPs of one env-step of training (from `surge bench roofline --what train` at
the config's num_envs and num_steps) times the batch's env-steps/s, over the SGEMM rate that the same
roofline run measured.

Every run is the real program; nothing is timed inside it but what it reports itself (bench). The
runs go into a temporary folder, removed at the end unless --keep.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def fail(message):
    print(f"agents_vs_sequential: {message}", file=sys.stderr)
    sys.exit(2)


def run_timed(command, cwd):
    """Runs `command`; returns (wall seconds, stdout). Exits 2 if it fails."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    if process.returncode != 0:
        fail(f"{' '.join(command)} exited {process.returncode}: {err.strip()[-400:]}")
    return wall, out


class ChildClock:
    """CPU time (user + system) of the children that ended since the last reading."""

    def __init__(self):
        self.last = self.now()

    @staticmethod
    def now():
        import resource
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def lap(self):
        now = self.now()
        spent, self.last = now - self.last, now
        return spent


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def last_steps(rows):
    return int(float(rows[-1]["global_step"])) if rows else 0


def median(values):
    return statistics.median(values) if values else float("nan")


def load():
    return os.getloadavg()[0]


def train_side(args, side, workdir, round_index, clock):
    base = [args.surge, "train", "--device", args.device, "--scenario", args.scenario,
            "--target-return", str(args.target_return)] + sum((["--set", s] for s in args.set), [])
    folder = os.path.join(workdir, f"{side}{round_index}")
    clock.lap()
    if side == "agents":
        wall, _ = run_timed(base + ["--agents", str(args.agents), "--seed", str(args.seed), "--out", folder], workdir)
        cpu = clock.lap()
        table = read_rows(os.path.join(folder, "metrics.csv"))
        per_agent = [[r for r in table if r["agent"] == str(k)] for k in range(args.agents)]
        summary = read_rows(os.path.join(folder, "agents_summary.csv"))
        to_target = [str(int(float(r["threshold_step"]))) if r["threshold_step"] else "" for r in summary]
    else:
        wall, per_agent, to_target = 0.0, [], []
        for k in range(args.agents):
            out = os.path.join(folder, str(k))
            seconds, out_text = run_timed(base + ["--seed", str(args.seed + k), "--out", out], workdir)
            wall += seconds
            per_agent.append(read_rows(os.path.join(out, "metrics.csv")))
            reached = re.search(r"reached at [0-9.]+ s \(step ([0-9,]+)\)", out_text)
            to_target.append(reached.group(1).replace(",", "") if reached else "")
        cpu = clock.lap()
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return {"wall_s": wall, "cpu_s": cpu, "env_steps": sum(last_steps(rows) for rows in per_agent),
            "steps_to_target": to_target}


def measure_train(args, workdir):
    rounds = []
    clock = ChildClock()
    for r in range(args.rounds):
        order = ["agents", "sequential"] if r % 2 == 0 else ["sequential", "agents"]
        result = {"order": order, "load_before": load()}
        for side in order:
            result[side] = train_side(args, side, workdir, r, clock)
            print(f"round {r + 1}/{args.rounds}, {side}: {result[side]['wall_s']:.4g} s wall, "
                  f"{result[side]['cpu_s']:.4g} s CPU, {result[side]['env_steps']} steps", file=sys.stderr)
        result["load_after"] = load()
        rounds.append(result)
    sides = {}
    for side in ("agents", "sequential"):
        sides[side] = {key: median([r[side][key] for r in rounds]) for key in ("wall_s", "cpu_s", "env_steps")}
        sides[side]["wall_s_runs"] = [r[side]["wall_s"] for r in rounds]
    same = all(r["agents"]["steps_to_target"] == r["sequential"]["steps_to_target"] for r in rounds)
    loads = [r["load_before"] for r in rounds] + [r["load_after"] for r in rounds]
    report = {
        "benchmark": "agents_vs_sequential_train", "scenario": args.scenario, "device": args.device,
        "agents": args.agents, "seed": args.seed, "target_return": args.target_return, "set": args.set,
        "rounds": args.rounds, "together": sides["agents"], "one_after_another": sides["sequential"],
        "wall_ratio": sides["agents"]["wall_s"] / sides["sequential"]["wall_s"],
        "cpu_ratio": sides["agents"]["cpu_s"] / sides["sequential"]["cpu_s"],
        "same_steps_to_target": same, "load_average": {"min": min(loads), "max": max(loads), "median": median(loads)},
        "cpu_count": os.cpu_count(), "rounds_detail": rounds,
    }
    together, alone = sides["agents"], sides["sequential"]
    print(f"{args.agents} {args.scenario} agents to {args.target_return:g}, median of {args.rounds} rounds:\n"
          f"  together:          {together['wall_s']:.4g} s wall, {together['cpu_s']:.4g} s CPU, "
          f"{together['env_steps']:.0f} steps\n"
          f"  one after another: {alone['wall_s']:.4g} s wall, {alone['cpu_s']:.4g} s CPU, "
          f"{alone['env_steps']:.0f} steps\n"
          f"  wall ratio {report['wall_ratio']:.4g}, CPU ratio {report['cpu_ratio']:.4g}; steps to the target "
          f"{'identical' if same else 'DIFFER'} per agent; load average {min(loads):.3g} to {max(loads):.3g} "
          f"on {os.cpu_count()} cores")
    return report


def config_args(config):
    """NxT: the built-in config at N envs x T steps (CartPole's own is 16x16); else a preset's name."""
    envs, x, steps = config.partition("x")
    if x and envs.isdigit() and steps.isdigit():
        return ["--num-envs", envs, "--num-steps", steps]
    return ["--preset", config]


def bench_rate(args, workdir, config, agents):
    path = os.path.join(workdir, "bench.json")
    run_timed([args.surge, "bench", "train", "--device", args.device, "--scenario", args.scenario,
               "--agents", str(agents), "--repeats", str(args.repeats), "--iterations", str(args.iterations), "--json",
               path] + config_args(config), workdir)
    with open(path) as f:
        report = json.load(f)
    return report, report["num_envs"], report["num_steps"]


def sgemm_fraction(args, workdir, num_envs, num_steps, rate):
    path = os.path.join(workdir, "roofline.json")
    run_timed([args.surge, "bench", "roofline", "--what", "train", "--device", args.device, "--scenario",
               args.scenario, "--num-envs", str(num_envs), "--steps", str(num_steps), "--repeats", "3", "--json",
               path], workdir)
    with open(path) as f:
        roofline = json.load(f)
    flops = sum(p.get("flops") or 0 for p in roofline["phases"]) / (num_envs * num_steps)
    gemm = roofline["ceilings"]["gemm_flops_per_s"]
    return {"flops_per_env_step": flops, "sgemm_flops_per_s": gemm, "batch_flops_per_s": flops * rate,
            "fraction_of_sgemm": flops * rate / gemm}


def measure_bench(args, workdir):
    configs = []
    for config in args.config:
        rates, cpu_us, busy = {"batch": [], "one": []}, {"batch": [], "one": []}, {"batch": [], "one": []}
        shape = None
        loads = [load()]
        for r in range(args.rounds):
            order = [("batch", args.agents), ("one", 1)]
            for side, agents in (order if r % 2 == 0 else order[::-1]):
                report, envs, steps = bench_rate(args, workdir, config, agents)
                rates[side].append(report["env_steps_per_s"])
                cpu_us[side].append(report["cpu_us_per_env_step"])
                busy[side].append(report["cores_busy"])
                shape = (envs, steps)
            loads.append(load())
        entry = {"config": config, "num_envs": shape[0], "num_steps": shape[1], "agents": args.agents,
                 "batch_env_steps_per_s": median(rates["batch"]), "one_env_steps_per_s": median(rates["one"]),
                 "batch_runs": rates["batch"], "one_runs": rates["one"],
                 "batch_cpu_us_per_env_step": median(cpu_us["batch"]), "one_cpu_us_per_env_step": median(cpu_us["one"]),
                 "batch_cores_busy": median(busy["batch"]), "one_cores_busy": median(busy["one"]),
                 "load_average": {"min": min(loads), "max": max(loads), "median": median(loads)}}
        entry["ratio"] = entry["batch_env_steps_per_s"] / entry["one_env_steps_per_s"]
        line = (f"{config} ({shape[0]} envs x {shape[1]} steps): {args.agents} agents "
                f"{entry['batch_env_steps_per_s']:.4g} env-steps/s, 1 agent {entry['one_env_steps_per_s']:.4g} "
                f"(ratio {entry['ratio']:.4g}, median of {args.rounds}; load average {min(loads):.3g} to "
                f"{max(loads):.3g} on {os.cpu_count()} cores); CPU per env-step "
                f"{entry['batch_cpu_us_per_env_step']:.4g} against {entry['one_cpu_us_per_env_step']:.4g} us, "
                f"cores busy {entry['batch_cores_busy']:.4g} against {entry['one_cores_busy']:.4g}")
        if args.roofline:
            entry["sgemm"] = sgemm_fraction(args, workdir, shape[0], shape[1], entry["batch_env_steps_per_s"])
            s = entry["sgemm"]
            line += (f"; {s['flops_per_env_step']:.4g} FLOP per env-step, the batch at "
                     f"{s['batch_flops_per_s'] / 1e9:.4g} GFLOP/s = {100 * s['fraction_of_sgemm']:.3g}% of "
                     f"SGEMM's {s['sgemm_flops_per_s'] / 1e9:.4g}")
        print(line)
        configs.append(entry)
    return {"benchmark": "agents_vs_one_bench_train", "scenario": args.scenario, "device": args.device,
            "rounds": args.rounds, "repeats": args.repeats, "iterations": args.iterations,
            "cpu_count": os.cpu_count(), "configs": configs}


def default_surge():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for build in ("build-cpu", "build"):
        path = os.path.join(here, build, "bin", "surge")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("surge") or "surge"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["train", "bench"], help="train: to a target; bench: surge bench train")
    parser.add_argument("--surge", default=default_surge(), help="the program [default: %(default)s]")
    parser.add_argument("--scenario", default="cartpole")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--agents", type=int, default=64, help="K [default: 64]")
    parser.add_argument("--seed", type=int, default=1, help="train: seeds SEED .. SEED+K-1 [default: 1]")
    parser.add_argument("--target-return", type=float, default=475.0, help="train: R [default: 475]")
    parser.add_argument("--set", action="append", default=[], help="train: KEY=VALUE for every run (repeatable)")
    parser.add_argument("--config", action="append", help="bench: NxT (the built-in config at N envs x T steps) or "
                        "a preset's name (repeatable) [default: 16x16 and cleanrl]")
    parser.add_argument("--repeats", type=int, default=5, help="bench: surge bench train --repeats [default: 5]")
    parser.add_argument("--iterations", type=int, default=16,
                        help="bench: surge bench train --iterations, both sides alike [default: 16, a round of the "
                             "agents as surge train --agents runs them]")
    parser.add_argument("--roofline", action="store_true", help="bench: also the fraction of the SGEMM rate")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running both sides [default: 3]")
    parser.add_argument("--json", help="write the report as JSON")
    parser.add_argument("--keep", help="keep the runs in this folder (else a temporary one, removed)")
    args = parser.parse_args()
    if args.agents < 1:
        fail(f"--agents {args.agents}: give at least 1")
    if args.rounds < 1:
        fail(f"--rounds {args.rounds}: give at least 1")
    if args.iterations < 1:
        fail(f"--iterations {args.iterations}: give at least 1")
    if not os.access(args.surge, os.X_OK) and not shutil.which(args.surge):
        fail(f"--surge {args.surge} is not a program; build it (cmake --build build-cpu) or give its path")
    args.surge = os.path.abspath(args.surge) if os.path.exists(args.surge) else args.surge
    args.config = args.config or ["16x16", "cleanrl"]
    workdir = args.keep or tempfile.mkdtemp(prefix="agents_vs_sequential.")
    os.makedirs(workdir, exist_ok=True)
    try:
        report = measure_train(args, workdir) if args.what == "train" else measure_bench(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
