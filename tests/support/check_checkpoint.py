"""checkpoint.h5 read by h5py, an independent reader: the layout rl/io/checkpoint.hpp documents, the shapes of
the network in the config (biases [out], as PyTorch keeps them), every dataset checksummed (Fletcher-32), a
NumPy policy built from it playing Gymnasium's CartPole (where Gymnasium is installed), and `surge eval` on
it. Exit 77 (skipped) where h5py is missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

try:
    import h5py
except ImportError:
    print("SKIPPED: h5py is not installed")
    sys.exit(77)



def play_in_gymnasium(actor):
    """The actor as PyTorch would run it (x @ W.T + b with b [out]), greedy, on Gymnasium's CartPole."""
    try:
        import gymnasium
        import numpy as np
    except ImportError:
        return
    env = gymnasium.make("CartPole-v1")
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            x = np.asarray(obs, dtype=np.float32)
            for k, (weight, bias) in enumerate(actor):
                x = x @ weight.T + bias
                if k + 1 < len(actor):
                    x = np.tanh(x)
            assert x.shape == (2,), x.shape
            obs, reward, terminated, truncated, _ = env.step(int(np.argmax(x)))
            total += reward
            done = terminated or truncated
        assert 1.0 <= total <= 500.0, total


surge = sys.argv[1]
out = tempfile.mkdtemp(prefix="surge_check_checkpoint_")
try:
    subprocess.run([surge, "train", "--device", "cpu", "--total-steps", "1024", "--seed", "4", "--set", "hidden=[32,16]",
                    "--out", out], check=True, capture_output=True, text=True)
    path = os.path.join(out, "checkpoint.h5")
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "surge-checkpoint", f.attrs["format"]
        assert int(f.attrs["format_version"]) == 1
        assert f.attrs["scenario"] == "cartpole"
        assert f.attrs["gym_id"] == "CartPole-v1"
        assert int(f.attrs["global_step"]) == 1024, f.attrs["global_step"]
        config = tomllib.loads(f.attrs["config"])
        assert config["hidden"] == [32, 16] and config["seed"] == 4, config
        dims = [int(f.attrs["obs_dim"])] + config["hidden"]
        expected = {}
        for net, out_dim in (("actor", int(f.attrs["num_actions"])), ("critic", 1)):
            layer_dims = dims + [out_dim]
            for layer in range(len(layer_dims) - 1):
                expected[f"{net}.{layer}.weight"] = (layer_dims[layer + 1], layer_dims[layer])
                expected[f"{net}.{layer}.bias"] = (layer_dims[layer + 1],)
        for group in ("parameters", "optimizer/adam_m", "optimizer/adam_v"):
            names = set(f[group].keys())
            assert names == set(expected), (group, names)
            for name, shape in expected.items():
                data = f[group][name][()]
                assert data.shape == shape and data.dtype == "float32", (group, name, data.shape, data.dtype)
                assert f[group][name].fletcher32, (group, name)
        assert float(f["optimizer"].attrs["step"]) == 4 * 4 * 4  # 4 iterations x 4 epochs x 4 minibatches
        assert abs(f["parameters/actor.0.weight"][()]).max() > 0
        assert "normalization" not in f  # written only where the config normalises
        assert all(f["resume"][name].fletcher32 for name in f["resume"] if f["resume"][name].size > 0)
        actor = [(f[f"parameters/actor.{k}.weight"][()], f[f"parameters/actor.{k}.bias"][()]) for k in range(3)]
    play_in_gymnasium(actor)
    result = subprocess.run([surge, "eval", "--checkpoint", path, "--episodes", "20", "--device", "cpu"],
                            check=True, capture_output=True, text=True)
    match = re.search(r"20 episodes \(greedy\) on cpu after 1024 training steps: return ([0-9.]+) ± ([0-9.]+)", result.stdout)
    assert match, result.stdout
    assert 1.0 <= float(match.group(1)) <= 500.0
    bad = subprocess.run([surge, "eval", "--checkpoint", os.path.join(out, "metrics.csv")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, (bad.returncode, bad.stderr)

    # With normalisation: /normalization holds RunningMeanStd's mean, var and count for the observations
    # (every one returned: the first, then 16 envs x 16 steps x 4 iterations) and the discounted returns.
    normalized = os.path.join(out, "normalized")
    subprocess.run([surge, "train", "--device", "cpu", "--total-steps", "1024", "--seed", "4", "--set", "normalize_obs=true",
                    "--set", "normalize_reward=true", "--out", normalized], check=True, capture_output=True, text=True)
    path = os.path.join(normalized, "checkpoint.h5")
    with h5py.File(path, "r") as f:
        group = f["normalization"]
        for name, size in (("obs_mean", 4), ("obs_var", 4), ("reward_mean", 1), ("reward_var", 1)):
            assert group[name].shape == (size,) and group[name].dtype == "float64", (name, group[name].shape)
        assert (group["obs_var"][()] > 0).all() and group["reward_var"][()][0] > 0
        assert abs(float(group.attrs["obs_count"]) - (1e-4 + 16 * (1 + 16 * 4))) < 1e-9, group.attrs["obs_count"]
        assert abs(float(group.attrs["reward_count"]) - (1e-4 + 1024)) < 1e-9, group.attrs["reward_count"]
    result = subprocess.run([surge, "eval", "--checkpoint", path, "--episodes", "20", "--device", "cpu"],
                            check=True, capture_output=True, text=True)
    assert "20 episodes (greedy) on cpu after 1024 training steps" in result.stdout, result.stdout
    print("checkpoint.h5 read by h5py: layout, shapes and surge eval agree")
finally:
    shutil.rmtree(out)
