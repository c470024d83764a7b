#!/usr/bin/env python3
"""Pixel observations in the runs of several learners, through the real program (docs/pixels.md).

usage: check_pixel_runs.py SURGE CASE

CASE is one of:
  agents   `surge train --agents 2 --grid learning_rate=A,B` on pixel CartPole: each of the 4 agents,
           drawing into a frame store of its own, equals `surge train --seed s --set learning_rate=X`
           alone, bit for bit (every metrics.csv cell but the timings, config.toml, and the checkpoint's
           parameters, Adam moments and resume state, the carried frames included); `--dry-run` lists
           each agent's frame store

Every case runs in a fresh temporary folder. Without h5py the checkpoints are not compared (said on
stdout); everything else is.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_agents  # noqa: E402  (its comparisons of runs, metrics and checkpoints)

# 36x36 grey frames, 3 to a stack, the small encoder: 6 iterations of 8 envs x 16 steps.
PIXELS = ["--set", "observation=pixels", "--set", "frame_size=36", "--set", "grayscale=true", "--set", "frame_stack=3",
          "--set", "encoder=small", "--set", "num_envs=8", "--set", "num_steps=16", "--set", "num_minibatches=2",
          "--set", "update_epochs=2"]
TRAIN = ["train", "--device", "cpu", "--scenario", "cartpole", "--total-steps", str(6 * 8 * 16)] + PIXELS


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


def main():
    check_agents.SURGE = os.path.abspath(sys.argv[1])
    case = sys.argv[2]
    cases = {"agents": case_agents}
    with tempfile.TemporaryDirectory() as tmp:
        cases[case](tmp)
    print(f"check_pixel_runs {case}: ok")


if __name__ == "__main__":
    main()
