#!/usr/bin/env python3
"""`surge train --log-rollouts` with pixel observations, read back with h5py.

Usage: check_pixel_log.py PATH/TO/surge SCRATCH_DIR

Trains pixel CartPole (84x84 grey, 4 frames to a stack) for a few iterations, logging every iteration
of four of its environments, then checks the log against frames drawn again by other commands:

- every logged frame equals the frame of the state the log's `obs` holds for that row, drawn by
  `surge step --frames FILE.h5` (the step from the row before, with the action taken there; its next
  state must also equal the logged one) or, for the first state of an episode, by `surge render --state`;
- the carried-over slots of an iteration equal the previous iteration's last frames;
- frame_first is 1 exactly where an episode began (the run's first row, or after a logged
  terminated/truncated step);
- every stack rebuilt from the file by the rule its `frame_stack_rule` attribute states equals the
  stack built from the redrawn frames and the episodes' bounds (Gymnasium's FrameStackObservation);
- the frames are chunked four frames of one environment at a time and deflated, and the compression
  ratio that `surge train` reports on its last line and `surge h5 info` lists equals the file's.
Prints the ratio. Exits 77 (skipped) when h5py, NumPy or Pillow is missing.
"""
import csv
import os
import re
import shutil
import subprocess
import sys

try:
    import numpy as np
    from PIL import Image
    import h5py
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)

surge, scratch = sys.argv[1:3]
if os.path.isdir(scratch):
    shutil.rmtree(scratch)
os.makedirs(scratch)
SIZE, STACK, STEPS, ENVS, LOGGED, ITERATIONS = 84, 4, 16, 8, 4, 4
log_path = os.path.join(scratch, "log.h5")


def run(*args):
    done = subprocess.run([surge, *args], capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done


settings = {"observation": "pixels", "frame_size": SIZE, "grayscale": "true", "frame_stack": STACK,
            "encoder": "small", "num_envs": ENVS, "num_steps": STEPS, "num_minibatches": 2, "update_epochs": 1}
sets = [part for key, value in settings.items() for part in ("--set", f"{key}={value}")]
trained = run("train", "--scenario", "cartpole", "--device", "cpu", "--seed", "3", *sets, "--total-steps",
              str(ENVS * STEPS * ITERATIONS), "--log-rollouts", log_path, "--log-every", "1", "--log-envs",
              str(LOGGED), "--out", os.path.join(scratch, "run"))
reported = re.search(r"frames stored in ([0-9.]+)% of their raw", trained.stderr)
assert reported, trained.stderr

with h5py.File(log_path, "r") as f:
    assert f.attrs["observation"] == "pixels" and int(f.attrs["frame_stack"]) == STACK
    assert f.attrs["frame_shape"].tolist() == [SIZE, SIZE, 1]
    assert "frame_first" in f.attrs["frame_stack_rule"]
    frames_set = f["frames"]
    assert frames_set.shape == (ITERATIONS, STEPS + STACK - 1, LOGGED, SIZE, SIZE, 1), frames_set.shape
    assert frames_set.dtype == np.uint8 and frames_set.compression == "gzip", frames_set.compression
    assert frames_set.chunks == (1, 4, 1, SIZE, SIZE, 1), frames_set.chunks
    ratio = frames_set.id.get_storage_size() / frames_set.nbytes
    frames, first = frames_set[...][..., 0], f["frame_first"][...]
    obs, actions = f["obs"][...], f["actions"][...]
    ended = f["terminated"][...] | f["truncated"][...]
    assert f["iteration"][...].tolist() == list(range(1, ITERATIONS + 1))

# One row per step of each logged env, iterations end to end: g = iteration * STEPS + t.
rows = ITERATIONS * STEPS
obs_rows = obs.reshape(rows, LOGGED, 4)
action_rows, ended_rows = actions.reshape(rows, LOGGED), ended.reshape(rows, LOGGED)
episode_starts = np.zeros((rows, LOGGED), dtype=bool)
episode_starts[0] = True
episode_starts[1:] = ended_rows[:-1] != 0
assert episode_starts[1:].any(), "no episode ended: the run is too short to check resets"

# Redraw each row's frame: a step from the row before where the episode goes on, else the state drawn.
steps = [(g, m) for g in range(rows) for m in range(LOGGED) if not episode_starts[g, m]]
step_in, step_out = os.path.join(scratch, "in.csv"), os.path.join(scratch, "next.csv")
with open(step_in, "w") as out:
    out.write("s_x,s_x_dot,s_theta,s_theta_dot,action\n")
    for g, m in steps:
        out.write(",".join(repr(float(v)) for v in obs_rows[g - 1, m]) + f",{int(action_rows[g - 1, m])}\n")
step_frames = os.path.join(scratch, "step_frames.h5")
run("step", "--scenario", "cartpole", "--input", step_in, "--output", step_out, "--device", "cpu", "--observation",
    "pixels", "--frames", step_frames, "--frame-size", str(SIZE), "--grayscale")
with open(step_out) as f:
    next_states = [[float(row[f"next_{name}"]) for name in ("x", "x_dot", "theta", "theta_dot")]
                   for row in csv.DictReader(f)]
with h5py.File(step_frames, "r") as f:
    stepped = f["frames"][0][..., 0]
redrawn = np.zeros((rows, LOGGED, SIZE, SIZE), dtype=np.uint8)
for k, (g, m) in enumerate(steps):
    assert np.array_equal(np.float32(next_states[k]), obs_rows[g, m]), (g, m, next_states[k], obs_rows[g, m])
    redrawn[g, m] = stepped[k]
for g, m in zip(*np.nonzero(episode_starts)):
    png = os.path.join(scratch, "start.png")
    run("render", "--scenario", "cartpole", "--state", ",".join(repr(float(v)) for v in obs_rows[g, m]), "--size",
        f"{SIZE}x{SIZE}", "--grayscale", "--device", "cpu", "--out", png)
    redrawn[g, m] = np.asarray(Image.open(png))

for i in range(ITERATIONS):
    for t in range(STEPS):
        g = i * STEPS + t
        assert np.array_equal(frames[i, t + STACK - 1], redrawn[g]), f"iteration {i + 1} row {t}: frame differs"
        assert np.array_equal(first[i, t + STACK - 1] != 0, episode_starts[g]), f"iteration {i + 1} row {t}: first"
    if i > 0:
        assert np.array_equal(frames[i, :STACK - 1], frames[i - 1, STEPS:]), f"iteration {i + 1}: carried frames"
        assert np.array_equal(first[i, :STACK - 1], first[i - 1, STEPS:]), f"iteration {i + 1}: carried flags"
assert len(np.unique(frames[:, STACK - 1:])) > 2, "blank frames"


def stack_from_log(i, t, m):  # the file's rule, as its frame_stack_rule attribute states it
    slots = range(t, t + STACK)
    starts = [s for s in slots if first[i, s, m]]
    start = starts[-1] if starts else t
    return np.stack([frames[i, max(s, start), m] for s in slots], axis=-1)


def stack_redrawn(g, m):  # the last STACK frames of the episode, its first repeated before it began
    start = max(r for r in range(g + 1) if episode_starts[r, m])
    return np.stack([redrawn[max(r, start), m] for r in range(g - STACK + 1, g + 1)], axis=-1)


for i in range(ITERATIONS):
    for t in range(STEPS):
        for m in range(LOGGED):
            assert np.array_equal(stack_from_log(i, t, m), stack_redrawn(i * STEPS + t, m)), (i + 1, t, m)

assert abs(float(reported.group(1)) - 100 * ratio) <= 5e-4 * 100 * ratio, (reported.group(1), ratio)
info = run("h5", "info", log_path)
line = next(line for line in info.stdout.splitlines() if line.strip().startswith("frames "))
assert f"{reported.group(1)}% of" in line and "deflate(1)" in line, line
assert ratio < 0.1, ratio
print(f"{rows * LOGGED} CartPole frames 84x84 grey from surge train: stored {100 * ratio:.3f}% of raw, "
      f"{int(episode_starts.sum())} episode starts; every stack rebuilt from the log equals the redrawn one")
print("ok")
