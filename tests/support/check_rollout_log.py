#!/usr/bin/env python3
"""Opens a rollout log written by Surge with h5py, an independent reader, and checks it.

usage: check_rollout_log.py --writer PROGRAM FILE.h5
  runs PROGRAM FILE.h5 12 3 paced (tests/support/rollout_log_sample.cpp: the synthetic rollout of
  tests/support/synthetic_rollout.hpp, iterations 0..11, every third logged) and checks every shape,
  type, compression setting and value against the formulas below, which mirror that header.
Exits 77 (skipped) when h5py cannot be imported.
"""
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as error:  # h5py is optional for the suite: report a skip, not a pass
    print(f"skipped: {error}")
    sys.exit(77)

NUM_ENVS, STEPS, OBS_DIM, FIRST_ENV, LOG_ENVS = 10, 6, 3, 3, 4


def expected(iterations):
    i = np.asarray(iterations, dtype=np.int64)[:, None, None]
    t = np.arange(STEPS, dtype=np.int64)[None, :, None]
    e = np.arange(FIRST_ENV, FIRST_ENV + LOG_ENVS, dtype=np.int64)[None, None, :]
    c = np.arange(OBS_DIM, dtype=np.float32)
    obs = (i * 1000 + t * 10 + e).astype(np.float32)[..., None] + np.float32(0.25) * c
    terminated = (i * STEPS + t + e) % 7 == 6
    truncated = ~terminated & ((i * STEPS + t + 2 * e) % 11 == 10)
    i2 = np.asarray(iterations, dtype=np.int64)[:, None]
    e2 = e[0]
    return {
        "obs": obs,
        "actions": ((i + t + e) % 2).astype(np.int32),
        "reward": (np.float32(0.5) + np.float32(0.25) * ((i + 2 * t + e) % 3).astype(np.float32)),
        "terminated": terminated.astype(np.uint8),
        "truncated": truncated.astype(np.uint8),
        "value": (-i.astype(np.float32) - np.float32(0.5) * (t * 16 + e).astype(np.float32)),
        "start_episode_return": (np.float32(0.5) * i2.astype(np.float32) + e2.astype(np.float32)),
        "start_episode_length": (3 * i2 + e2).astype(np.int32),
    }


def main(argv):
    if len(argv) != 3 or argv[0] != "--writer":
        print(__doc__, file=sys.stderr)
        return 2
    program, path = argv[1], argv[2]
    subprocess.run([program, path, "12", "3", "paced"], check=True, stdout=subprocess.DEVNULL)
    logged = [0, 3, 6, 9]
    with h5py.File(path, "r") as f:
        assert f.attrs["schema"] == "surge-rollout-log", f.attrs["schema"]
        assert f.attrs["schema_version"] == 1
        assert f.attrs["log_every"] == 3
        assert f.attrs["num_envs"] == NUM_ENVS
        assert f.attrs["dropped_iterations"] == 0
        assert f.attrs["scenario"] == "synthetic"
        assert f.attrs["seed"] == 42
        assert list(f.attrs["physics_names"]) == ["gravity", "length"], f.attrs["physics_names"]
        assert np.array_equal(f.attrs["physics_value"], np.array([9.8, 0.5], dtype=np.float32))
        assert f.attrs["config"].startswith("[ppo]")
        assert list(f["iteration"][:]) == logged
        assert list(f["global_step"][:]) == [(i + 1) * STEPS * NUM_ENVS for i in logged]
        assert list(f["env_id"][:]) == list(range(FIRST_ENV, FIRST_ENV + LOG_ENVS))
        for name, values in expected(logged).items():
            dataset = f[name]
            assert dataset.dtype == values.dtype, (name, dataset.dtype, values.dtype)
            assert dataset.shape == values.shape, (name, dataset.shape, values.shape)
            assert dataset.maxshape[0] is None and dataset.maxshape[1:] == values.shape[1:], (name, dataset.maxshape)
            assert dataset.chunks is not None and dataset.compression == "gzip" and dataset.shuffle, name
            assert np.array_equal(dataset[:], values), name
    print(f"h5py read {path}: {len(logged)} iterations, every field equal to its formula")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
