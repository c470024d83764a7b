#!/usr/bin/env python3
"""Pixel observations in the runs of several learners, through the real program (docs/pixels.md).

usage: check_pixel_runs.py SURGE CASE

CASE is one of:
  agents   `surge train --agents 2 --grid learning_rate=A,B` on pixel CartPole: each of the 4 agents,
           drawing into a frame store of its own, equals `surge train --seed s --set learning_rate=X`
           alone, bit for bit (every metrics.csv cell but the timings, config.toml, and the checkpoint's
           parameters, Adam moments and resume state, the carried frames included); `--dry-run` lists
           each agent's frame store
  mpirun   `mpirun -np 2 surge train` on pixel CartPole, each rank drawing its own 4 environments: the
           same training as one process over all 8 (num_minibatches = 1, so the same samples both ways):
           episode counts and returns equal, losses equal up to the order of the sums; a 2-rank run
           stopped half way and resumed (each rank's carried frames in the checkpoint) writes the
           metrics.csv of the uninterrupted run cell for cell; --log-ranks all logs each rank's frames,
           the first of each env the drawing of its logged first state (`surge render`). Exit 77 where
           mpirun is missing or surge was built without MPI.
  bench    `surge bench train` on pixel CartPole, one agent and two: its pixel row and the JSON's
           observation, bytes drawn per env-step and env-steps/s

Every case runs in a fresh temporary folder. Without h5py the checkpoints are not compared (said on
stdout); everything else is.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_agents  # noqa: E402  (its comparisons of runs, metrics and checkpoints)
import check_mpi  # noqa: E402  (mpirun's command line, and whether surge has MPI)

# 36x36 grey frames, 3 to a stack, the small encoder, 16 steps an iteration.
PIXELS = ["train", "--device", "cpu", "--scenario", "cartpole", "--set", "observation=pixels", "--set", "frame_size=36",
          "--set", "grayscale=true", "--set", "frame_stack=3", "--set", "encoder=small", "--set", "num_steps=16",
          "--set", "update_epochs=2"]
TRAIN = PIXELS + ["--set", "num_envs=8", "--set", "num_minibatches=2", "--total-steps", str(6 * 8 * 16)]


def case_agents(tmp):
    run, rows = check_agents.run, check_agents.rows
    planned = run(TRAIN + ["--agents", "2", "--grid", "learning_rate=1e-3,3e-3", "--dry-run"], tmp)
    assert planned.stdout.count("pixels.frames") >= 1 and "4 agents" in planned.stdout, planned.stdout
    run(TRAIN + ["--agents", "2", "--seed", "5", "--grid", "learning_rate=1e-3,3e-3", "--out", "batch"], tmp)
    assert len(rows(os.path.join(tmp, "batch", "metrics.csv"))) == 4 * 6
    for k, (lr, seed) in enumerate((lr, seed) for lr in ("1e-3", "3e-3") for seed in (5, 6)):
        solo = f"solo{k}"
        run(TRAIN + ["--seed", str(seed), "--set", f"learning_rate={lr}", "--out", solo], tmp)
        agent = os.path.join(tmp, "batch", "agents", str(k))
        check_agents.same_metrics(check_agents.agent_rows(os.path.join(tmp, "batch"), k),
                                  rows(os.path.join(tmp, solo, "metrics.csv")), f"pixel agent {k}")
        assert check_agents.config_text(os.path.join(agent, "config.toml")) == check_agents.config_text(
            os.path.join(tmp, solo, "config.toml")), k
        check_agents.same_checkpoints(os.path.join(agent, "checkpoint.h5"), os.path.join(tmp, solo, "checkpoint.h5"),
                                      f"pixel agent {k}")
        if check_agents.h5py is not None:
            with check_agents.h5py.File(os.path.join(agent, "checkpoint.h5"), "r") as f:
                names = []
                f.visit(names.append)
            assert any("carried_frames" in name for name in names), names
            assert any("encoder.conv0" in name for name in names), names
    returns = {r["return_last100"] for r in rows(os.path.join(tmp, "batch", "metrics.csv")) if r["iteration"] == "6"}
    assert len(returns) > 1, returns  # the agents did not all run one and the same thing


def case_mpirun(tmp):
    if not check_mpi.built_with_mpi(check_agents.SURGE):
        print("surge was built without MPI: skipped")
        sys.exit(check_mpi.SKIP)
    two = check_mpi.mpirun(2) + [check_agents.SURGE]
    rows = check_agents.rows
    pixels = PIXELS + ["--total-steps", str(8 * 8 * 16), "--set", "num_minibatches=1", "--seed", "7"]
    check_agents.run(pixels + ["--set", "num_envs=8", "--out", "one"], tmp)
    ranks = pixels + ["--set", "num_envs=4"]
    for name, extra in (("whole", ["--log-rollouts", "log.h5", "--log-ranks", "all", "--log-every", "1"]),
                        ("half", ["--stop-after", "4"])):
        done = subprocess.run(two + ranks + ["--out", name] + extra, cwd=tmp, capture_output=True, text=True)
        assert done.returncode == 0, (name, done.stderr)
    resumed = subprocess.run(two + ["train", "--resume", "half/checkpoint.h5"], cwd=tmp, capture_output=True, text=True)
    assert resumed.returncode == 0 and "resumed after iteration 4" in resumed.stderr, resumed.stderr
    one, whole = rows(os.path.join(tmp, "one", "metrics.csv")), rows(os.path.join(tmp, "whole", "metrics.csv"))
    assert len(one) == len(whole) == 8, (len(one), len(whole))
    for a, b in zip(one, whole):
        for column in ("global_step", "episodes", "episodic_return_mean", "return_last100", "episodic_length_mean"):
            assert a[column] == b[column], (a["iteration"], column, a[column], b[column])
        for column in ("policy_loss", "value_loss", "entropy", "approx_kl"):
            x, y = float(a[column]), float(b[column])
            assert math.isclose(x, y, rel_tol=1e-3, abs_tol=1e-6), (a["iteration"], column, x, y)
    assert any(r["episodes"] != "0" for r in one), "no episode ended"
    check_agents.same_metrics(rows(os.path.join(tmp, "half", "metrics.csv")), whole, "2 ranks resumed")
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if check_agents.h5py is None or Image is None:
        print("rank logs not read (no h5py or Pillow)")
        return
    for path, first_env in (("log.h5", 0), ("log.rank1.h5", 4)):
        with check_agents.h5py.File(os.path.join(tmp, path), "r") as f:
            assert f["env_id"][...].tolist() == list(range(first_env, first_env + 4)), path
            assert f["frames"].shape == (8, 16 + 2, 4, 36, 36, 1), (path, f["frames"].shape)
            frames, states = f["frames"][0, 2], f["obs"][0, 0]  # row 0 of iteration 1: the first states
        for m in range(4):
            png = os.path.join(tmp, "first.png")
            check_agents.run(["render", "--scenario", "cartpole", "--state", ",".join(repr(float(v)) for v in states[m]),
                              "--size", "36x36", "--grayscale", "--device", "cpu", "--out", png], tmp)
            assert (frames[m, ..., 0] == check_agents.numpy.asarray(Image.open(png))).all(), (path, m)


def case_bench(tmp):
    pixels = [part for key in ("observation=pixels", "frame_size=36", "grayscale=true", "frame_stack=3",
                               "encoder=small") for part in ("--set", key)]
    for agents in (1, 2):
        out = os.path.join(tmp, f"bench{agents}.json")
        done = check_agents.run(["bench", "train", "--device", "cpu", "--num-envs", "8", "--num-steps", "8", "--repeats",
                                 "2", "--iterations", "1", "--agents", str(agents), "--json", out] + pixels, tmp)
        assert "36x36 grey, stack 3, small encoder: 1297 bytes drawn per env-step, 3888 gathered" in done.stdout, \
            done.stdout
        with open(out) as f:
            report = json.load(f)
        assert report["observation"] == "pixels" and report["frame_bytes_per_step"] == 36 * 36 + 1, report
        assert report["agents"] == agents and report["env_steps_per_s"] > 0, report
    vector = check_agents.run(["bench", "train", "--device", "cpu", "--num-envs", "8", "--num-steps", "8", "--repeats",
                               "1", "--iterations", "1", "--json", os.path.join(tmp, "vector.json")], tmp)
    assert "pixels" not in vector.stdout, vector.stdout
    with open(os.path.join(tmp, "vector.json")) as f:
        report = json.load(f)
    assert report["observation"] == "vector" and report["frame_bytes_per_step"] == 0, report


def main():
    check_agents.SURGE = os.path.abspath(sys.argv[1])
    case = sys.argv[2]
    cases = {"agents": case_agents, "mpirun": case_mpirun, "bench": case_bench}
    with tempfile.TemporaryDirectory() as tmp:
        cases[case](tmp)
    print(f"check_pixel_runs {case}: ok")


if __name__ == "__main__":
    main()
