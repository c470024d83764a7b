"""surge.train, surge.eval and surge.Policy: the C++ learner and its checkpoints from Python.

train() and eval() run the surge program installed in this package, so progress, messages and the
run folder are exactly the command line's; Policy reads a checkpoint.h5 (h5py) and acts in NumPy.
"""
import csv
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

from ._program import program


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.number)):
        return repr(value.item() if isinstance(value, np.number) else value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"config value {value!r}: give a number, a bool, a string or a list of them")


def _run(args, capture_stdout=False):
    """Runs the program with our stdout and stderr; Ctrl-C reaches it too (it stops at an iteration
    boundary and writes its checkpoint), and we wait for it. Bad input becomes a ValueError."""
    stdout = subprocess.PIPE if capture_stdout else None
    # A session of its own, so that a terminal's Ctrl-C reaches the program once, through us.
    process = subprocess.Popen([str(program()), *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    last_lines = []
    try:
        for line in process.stderr:
            print(line, end="", file=sys.stderr, flush=True)
            last_lines = (last_lines + [line.rstrip("\n")])[-5:]
        process.wait()
    except KeyboardInterrupt:  # the program stops at the next iteration boundary and writes its checkpoint
        process.send_signal(signal.SIGINT)
        for line in process.stderr:
            print(line, end="", file=sys.stderr, flush=True)
        process.wait()
    if process.returncode == 2:
        raise ValueError(last_lines[-1] if last_lines else f"surge {args[0]}: bad input")
    if process.returncode not in (0, 128 + signal.SIGINT):  # 130: stopped by SIGINT, outputs written
        raise RuntimeError(f"surge {args[0]} failed with exit code {process.returncode}: {' '.join(last_lines[-1:])}")
    return process.stdout.read() if capture_stdout else None


def _read_metrics(path):
    with open(path, newline="") as f:
        return [{key: (float(value) if value != "" else None) for key, value in row.items()} for row in csv.DictReader(f)]


def train(scenario, device="cpu", out=None, seed=1, target_return=None, overwrite=False, **config):
    """Trains PPO on `scenario` with the learner of `surge train`; `config` keys are the config's keys
    (num_envs=64, learning_rate=1e-3, hidden=[32, 32], ...; `surge config show` lists them).

    Returns (metrics, folder): the rows of metrics.csv as dicts (one per iteration) and the run's folder,
    which holds config.toml and checkpoint.h5.
    """
    if out is None:
        out = Path("runs") / scenario / f"{time.strftime('%Y%m%d-%H%M%S')}-seed{seed}-py"
    args = ["train", "--scenario", str(scenario), "--device", str(device), "--seed", str(int(seed)), "--out", str(out)]
    if target_return is not None:
        args += ["--target-return", repr(float(target_return))]
    if overwrite:
        args.append("--overwrite")
    for key, value in config.items():
        args += ["--set", f"{key}={_toml_value(value)}"]
    _run(args)
    folder = Path(out)
    return _read_metrics(folder / "metrics.csv"), folder


def eval(checkpoint, episodes=100, device="cpu", seed=12345, sample=False):
    """Plays `episodes` episodes of the checkpoint's policy as `surge eval` does (one per environment,
    environment i seeded as surge.make(..., seed=seed) seeds it); returns {"mean", "std", "min", "max",
    "summary"} (summary: the program's line)."""
    args = ["eval", "--checkpoint", str(checkpoint), "--episodes", str(int(episodes)), "--device", str(device),
            "--seed", str(int(seed))]
    summary = _run(args + (["--sample"] if sample else []), capture_stdout=True).strip()
    print(summary)
    found = re.search(r"return (\S+) ± (\S+) \(min (\S+), max (\S+)\)", summary)
    result = {"summary": summary}
    if found:
        result.update(zip(("mean", "std", "min", "max"), (float(v.replace(",", "")) for v in found.groups())))
    return result


class Policy:
    """A trained actor, in NumPy: act(obs) takes [N, obs_dim] (NumPy, or torch/JAX through np.asarray)
    and returns actions (greedy, or sampled with `rng`)."""

    def __init__(self, layers, activation, discrete, log_std=None, obs_moments=None, obs_clip=10.0, scenario=""):
        self.layers, self.activation, self.discrete = layers, activation, discrete
        self.log_std, self.obs_moments, self.obs_clip, self.scenario = log_std, obs_moments, obs_clip, scenario

    @classmethod
    def load(cls, checkpoint):
        import h5py

        with h5py.File(checkpoint, "r") as f:
            config = tomllib.loads(f.attrs["config"])
            parameters = f["parameters"]
            layers = []
            while f"actor.{len(layers)}.weight" in parameters:
                k = len(layers)
                layers.append((parameters[f"actor.{k}.weight"][()].astype(np.float64),
                               parameters[f"actor.{k}.bias"][()].astype(np.float64).reshape(-1)))
            log_std = parameters["actor.log_std"][()].reshape(-1) if "actor.log_std" in parameters else None
            moments = None
            if config.get("normalize_obs") and "normalization" in f:
                moments = (f["normalization/obs_mean"][()], f["normalization/obs_var"][()])
            scenario = f.attrs["scenario"]
        if not layers:
            raise ValueError(f"'{checkpoint}' holds no actor parameters (parameters/actor.0.weight)")
        return cls(layers, config.get("activation", "tanh"), log_std is None, log_std, moments,
                   config.get("obs_clip", 10.0), scenario if isinstance(scenario, str) else scenario.decode())

    def outputs(self, obs):
        """The actor's last layer: logits (discrete) or the Gaussian's mean (continuous), [N, out]."""
        x = np.asarray(obs, dtype=np.float64)
        if self.obs_moments is not None:
            mean, var = self.obs_moments
            x = np.clip((x - mean) / np.sqrt(var + 1e-8), -self.obs_clip, self.obs_clip)
        for k, (weight, bias) in enumerate(self.layers):
            x = x @ weight.T + bias
            if k + 1 < len(self.layers):
                x = np.tanh(x) if self.activation == "tanh" else np.maximum(x, 0.0)
        return x

    def act(self, obs, greedy=True, rng=None):
        out = self.outputs(obs)
        if self.discrete:
            if greedy:
                return out.argmax(axis=-1).astype(np.int32)
            gumbel = -np.log(-np.log((rng or np.random.default_rng()).uniform(size=out.shape)))
            return (out + gumbel).argmax(axis=-1).astype(np.int32)
        if greedy:
            return out.astype(np.float32)
        noise = (rng or np.random.default_rng()).standard_normal(out.shape)
        return (out + np.exp(self.log_std) * noise).astype(np.float32)
