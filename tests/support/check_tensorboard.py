#!/usr/bin/env python3
"""Reads event files written by Surge with TensorBoard's own reader and checks tags, steps and values.

usage: check_tensorboard.py (--writer PROGRAM FOLDER | --train SURGE FOLDER)
  --writer: runs PROGRAM FOLDER (tests/support/tensorboard_sample.cpp), then checks its known values.
  --train: runs a short `SURGE train --out FOLDER` on the CPU, then checks FOLDER/tb against every
  value of FOLDER/metrics.csv (step: global_step; tags grouped as charts/, losses/, eval/) and the config
  (text and hparams) against FOLDER/config.toml.
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


# metrics.csv column -> TensorBoard tag, grouped as CleanRL names them; the other columns (iteration,
# global_step as the step, wall_time_s) are not scalars.
TAGS = {
    "sps": "charts/SPS", "episodes": "charts/episodes", "episodic_return_mean": "charts/episodic_return",
    "return_last100": "charts/return_last100", "episodic_length_mean": "charts/episodic_length",
    "learning_rate": "charts/learning_rate", "policy_loss": "losses/policy_loss", "value_loss": "losses/value_loss",
    "entropy": "losses/entropy", "approx_kl": "losses/approx_kl", "clipfrac": "losses/clipfrac",
    "explained_variance": "losses/explained_variance", "eval_return_mean": "eval/return_mean",
    "eval_return_std": "eval/return_std",
}


def check_config(accumulator, folder):
    """The config as text (the text plugin) and as hyperparameters (the hparams plugin) equals config.toml."""
    with open(os.path.join(folder, "config.toml")) as f:
        config_text = f.read()
    texts = accumulator.Tensors("config")
    assert len(texts) == 1, texts
    text = texts[0].tensor_proto.string_val[0].decode()
    assert config_text in text, text
    from tensorboard.plugins.hparams import plugin_data_pb2
    content = accumulator.PluginTagToContent("hparams")
    assert "_hparams_/session_start_info" in content, content.keys()
    data = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = data.session_start_info.hparams
    import tomllib
    config = tomllib.loads(config_text)
    assert hparams["scenario"].string_value == config["scenario"] == "cartpole"
    assert hparams["learning_rate"].number_value == config["learning_rate"]
    assert hparams["num_envs"].number_value == config["num_envs"]
    assert hparams["anneal_lr"].bool_value == config["anneal_lr"]
    assert hparams["hidden"].string_value == "[16, 16]"
    scalar_keys = [k for k, v in config.items() if not isinstance(v, (dict, list))]
    assert sorted(k for k in hparams if k in scalar_keys) == sorted(scalar_keys)


def check_run(surge, folder):
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([surge, "train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", "1536",
                    "--set", "hidden=[16,16]", "--set", "eval_every=2", "--out", folder], check=True,
                   stdout=subprocess.DEVNULL)
    metrics_path = os.path.join(folder, "metrics.csv")
    files = os.listdir(os.path.join(folder, "tb"))
    assert len(files) == 1, f"one event file per run, found {files}"
    accumulator = event_accumulator.EventAccumulator(os.path.join(folder, "tb"), size_guidance={
        event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0})
    accumulator.Reload()
    check_config(accumulator, folder)
    with open(metrics_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows, "empty metrics"
    found = set(accumulator.Tags()["scalars"])
    assert found == set(TAGS.values()), f"tags: {sorted(found)}"
    points = 0
    for column, tag in TAGS.items():
        events = {e.step: e.value for e in accumulator.Scalars(tag)}
        cells = {int(r["global_step"]): r[column] for r in rows}
        assert all(c != "nan" for c in cells.values()), column
        # An empty cell (no episode ended, no evaluation ran) is no point in TensorBoard.
        assert sorted(events) == sorted(step for step, c in cells.items() if c != ""), column
        for step, value in events.items():
            expected = np.float32(float(cells[step]))  # metrics.csv holds 9 significant digits
            assert np.float32(value) == expected or abs(value - expected) <= 1e-6 * abs(expected), (column, step)
            points += 1
    assert len(accumulator.Scalars("eval/return_mean")) == 3
    print(f"TensorBoard read {len(TAGS)} tags, {points} points: all match metrics.csv; the config as text and hparams")


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
