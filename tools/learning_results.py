#!/usr/bin/env python3
"""Learning results of the classic-control suite: the README's table, measured.

For each scenario and seed, runs `surge train` with the scenario's built-in config (to its end) and
`surge eval` on the checkpoint, then reports per scenario the medians over the seeds of: the final
return_last100, the steps and wall time at which return_last100 first reached the threshold (once
100 episodes had finished), the whole run's wall time and the greedy evaluation return.

    python3 tools/learning_results.py [--surge build/bin/surge] [--device cpu] [--seeds 1 2 3]
                                      [--scenarios cartpole acrobot ...] [--json FILE] [--out DIR]
                                      [--set precision=bf16 ...]
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

# Gymnasium's reward_threshold for each task; Pendulum-v1 has none, so -250 is our bar for "solved".
THRESHOLDS = {
    "cartpole": 475.0,
    "acrobot": -100.0,
    "mountain_car": -110.0,
    "pendulum": -250.0,
    "mountain_car_continuous": 90.0,
}
GYM_IDS = {
    "cartpole": "CartPole-v1",
    "acrobot": "Acrobot-v1",
    "mountain_car": "MountainCar-v0",
    "pendulum": "Pendulum-v1",
    "mountain_car_continuous": "MountainCarContinuous-v0",
}


def first_crossing(rows, threshold):
    """(global_step, wall_time_s) of the first iteration whose return_last100 >= threshold, counting
    only iterations after which at least 100 episodes had finished; None if never."""
    finished = 0.0
    for row in rows:
        finished += float(row["episodes"])
        value = float(row["return_last100"] or "nan")  # empty: no episode has ended yet
        if finished >= 100 and not math.isnan(value) and value >= threshold:
            return int(row["global_step"]), float(row["wall_time_s"])
    return None


def run_seed(surge, scenario, seed, device, out_dir, settings=()):
    run_dir = os.path.join(out_dir, f"{scenario}_seed{seed}")
    extra = [arg for setting in settings for arg in ("--set", setting)]
    train = subprocess.run(
        [surge, "train", "--scenario", scenario, "--device", device, "--seed", str(seed), "--out", run_dir, *extra],
        capture_output=True, text=True)
    if train.returncode != 0:
        sys.exit(f"surge train failed for {scenario} seed {seed}:\n{train.stdout[-2000:]}{train.stderr[-2000:]}")
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
    evaluation = subprocess.run(
        [surge, "eval", "--checkpoint", os.path.join(run_dir, "checkpoint.h5"), "--device", device, "--episodes", "1000"],
        capture_output=True, text=True)
    if evaluation.returncode != 0:
        sys.exit(f"surge eval failed for {scenario} seed {seed}:\n{evaluation.stderr}")
    match = re.search(r"return (-?[0-9.]+)", evaluation.stdout)
    crossing = first_crossing(rows, THRESHOLDS[scenario])
    return {
        "seed": seed,
        "final_return_last100": float(rows[-1]["return_last100"] or "nan"),
        "steps": int(rows[-1]["global_step"]),
        "wall_time_s": float(rows[-1]["wall_time_s"]),
        "threshold_step": crossing[0] if crossing else None,
        "threshold_wall_time_s": crossing[1] if crossing else None,
        "eval_return_greedy": float(match.group(1)) if match else float("nan"),
    }


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--surge", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "surge"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--scenarios", nargs="+", default=list(THRESHOLDS), choices=list(THRESHOLDS))
    parser.add_argument("--json", help="also write every run's figures to this file")
    parser.add_argument("--out", help="keep the runs in this folder (default: a temporary one)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config setting for every run, as surge train --set takes it (e.g. precision=bf16)")
    args = parser.parse_args()
    if not os.access(args.surge, os.X_OK):
        sys.exit(f"no surge program at {args.surge}: build first (tools/setup.sh) or pass --surge PATH")

    out_dir = args.out or tempfile.mkdtemp(prefix="surge_learning_")
    results = {}
    print("| task | final return_last100 (median) | steps to threshold | wall time to threshold | whole run | greedy eval, 1000 episodes |")
    print("|---|---|---|---|---|---|")
    for scenario in args.scenarios:
        runs = [run_seed(args.surge, scenario, seed, args.device, out_dir, args.set) for seed in args.seeds]
        results[scenario] = runs
        reached = sum(r["threshold_step"] is not None for r in runs)
        final = median_or_none([r["final_return_last100"] for r in runs])
        steps = median_or_none([r["threshold_step"] for r in runs])
        wall = median_or_none([r["threshold_wall_time_s"] for r in runs])
        whole = median_or_none([r["wall_time_s"] for r in runs])
        evaluation = median_or_none([r["eval_return_greedy"] for r in runs])
        threshold = THRESHOLDS[scenario]
        to_threshold = (f"{steps:,.0f} ({reached}/{len(runs)} seeds reach {threshold:g})" if steps is not None
                        else f"not reached ({threshold:g})")
        wall_text = f"{wall:.2f} s" if wall is not None else "-"
        print(f"| {GYM_IDS[scenario]} | {final:.1f} | {to_threshold} | {wall_text} | {runs[0]['steps']:,} steps, "
              f"{whole:.1f} s | {evaluation:.1f} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": args.device, "seeds": args.seeds, "thresholds": THRESHOLDS, "runs": results}, f, indent=2)


if __name__ == "__main__":
    main()
