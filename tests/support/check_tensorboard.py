#!/usr/bin/env python3
"""Reads event files written by Surge with TensorBoard's own reader and checks tags, steps and values.

usage: check_tensorboard.py (--writer PROGRAM FOLDER | --train SURGE FOLDER)
  --writer: runs PROGRAM FOLDER (tests/support/tensorboard_sample.cpp), then checks its known values.
  --train: runs a short `SURGE train --out FOLDER` on the CPU, then checks FOLDER/tb against every
  column of FOLDER/metrics.csv (step: global_step).
Exits 77 (skipped) when TensorBoard cannot be imported.
"""
import csv
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    from tensorboard.backend.event_processing import event_accumulator
except ImportError as error:  # TensorBoard is optional for the suite: report a skip, not a pass
    print(f"skipped: {error}")
    sys.exit(77)


def load(folder):
    accumulator = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    return accumulator


def check_sample(program, folder):
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([program, folder], check=True)
    files = [f for f in os.listdir(folder) if f.startswith("events.out.tfevents.")]
    assert len(files) == 1, files
    accumulator = load(folder)
    tags = ["episode_return", "loss/value", "approx_kl"]
    assert sorted(accumulator.Tags()["scalars"]) == sorted(tags), accumulator.Tags()
    for t, tag in enumerate(tags):
        events = accumulator.Scalars(tag)
        assert [e.step for e in events] == [1000 * k for k in range(50)], tag
        assert [e.wall_time for e in events] == [1.7e9 + k for k in range(50)], tag
        for k, e in enumerate(events):
            expected = np.float32((t + 1) * 0.125 * k - 2.0 + t * 1e-3)
            assert np.float32(e.value) == expected, (tag, k, e.value, expected)
    print(f"TensorBoard read {len(tags)} tags x 50 steps from {files[0]}: all equal")


def check_run(surge, folder):
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([surge, "train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", "1280",
                    "--set", "hidden=[16,16]", "--out", folder], check=True, stdout=subprocess.DEVNULL)
    metrics_path = os.path.join(folder, "metrics.csv")
    accumulator = load(os.path.join(folder, "tb"))
    with open(metrics_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows, "empty metrics"
    columns = list(rows[0])
    found = set(accumulator.Tags()["scalars"])
    missing = [c for c in columns if c not in found]
    assert not missing, f"columns missing from TensorBoard: {missing}"
    steps = [int(r["global_step"]) for r in rows]
    for column in columns:
        events = accumulator.Scalars(column)
        assert [e.step for e in events] == steps, column
        for e, r in zip(events, rows):
            expected = np.float32(float(r[column]))  # metrics.csv holds 9 significant digits
            same = np.float32(e.value) == expected or (np.isnan(e.value) and np.isnan(expected))
            assert same or abs(e.value - expected) <= 1e-6 * abs(expected), (column, e.step, e.value, expected)
    print(f"TensorBoard read {len(columns)} columns x {len(rows)} rows: all match metrics.csv")


def main(argv):
    if len(argv) == 3 and argv[0] == "--writer":
        check_sample(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "--train":
        check_run(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
