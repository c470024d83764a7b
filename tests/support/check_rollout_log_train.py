#!/usr/bin/env python3
"""Checks the rollout logs `surge train` writes, with independent readers (h5py, Gymnasium).

usage: check_rollout_log_train.py raw-obs|killed|locked SURGE FOLDER

  raw-obs  with normalize_obs, the logged obs are the environments' own observations: every logged
           CartPole transition is stepped again by Gymnasium's own CartPole-v1 and must give the next
           logged observation; episodes that ended start again from Gymnasium's reset range.
  killed   a training that logs every iteration is killed (SIGKILL, or two SIGINTs, the second
           during the clean stop) at random moments; every log must open with `surge h5 info`
           (exit 0) and with h5py, its per-iteration datasets agree on the complete rows (a row
           being written when the process died is left out, and `surge h5 info` says so), and a
           new run may log to the same path afterwards.
  locked   a second training given the log path of a running one exits with 2 and one line naming
           the path and the first run's pid; the first then stops cleanly with its log whole.
Exits 77 (skipped) when h5py (or, for raw-obs, Gymnasium) cannot be imported.
"""
import os
import shutil
import random
import re
import signal
import subprocess
import sys
import time

try:
    import h5py
    import numpy as np
except ImportError as error:  # optional for the suite: report a skip, not a pass
    print(f"skipped: {error}")
    sys.exit(77)

SMALL_RUN = ["train", "--scenario", "cartpole", "--device", "cpu", "--set", "hidden=[16,16]", "--num-envs", "16",
             "--num-steps", "16"]
BATCH = 16 * 16
PER_ENV = ["start_episode_return", "start_episode_length", "physics"]


def train(surge, folder, name, *extra):
    return [surge] + SMALL_RUN + ["--out", os.path.join(folder, name)] + list(extra)


def wait_for(path, process, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert process.poll() is None, f"the training ended ({process.returncode}) before {path} appeared"
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.01)


def complete_rows(f):
    """The rows that count, as docs/hdf5-schema.md defines them."""
    iterations = f["iteration"][:]
    first = int(f.attrs.get("first_iteration", 0))
    rows = 0
    while rows < len(iterations) and iterations[rows] >= first and (rows == 0 or iterations[rows] > iterations[rows - 1]):
        rows += 1
    for name, dataset in f.items():
        if name != "env_id":
            rows = min(rows, dataset.shape[0])
    return rows


def check_raw_obs(surge, folder):
    try:
        import gymnasium as gym
    except ImportError as error:
        print(f"skipped: {error}")
        return 77
    log = os.path.join(folder, "normalized.h5")
    subprocess.run(train(surge, folder, "normalized", "--total-steps", str(8 * BATCH), "--set", "normalize_obs=true",
                         "--log-rollouts", log, "--log-every", "1", "--log-envs", "4", "--log-queue", "64"), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with h5py.File(log, "r", swmr=True) as f:
        assert f.attrs["obs_raw"] == 1 and f.attrs["obs_normalized"] == 1
        assert [str(n) for n in f.attrs["obs_names"]] == ["x", "x_dot", "theta", "theta_dot"], f.attrs["obs_names"]
        assert list(f["iteration"][:]) == list(range(1, 9))
        # One long rollout per env: iteration i's step T follows on as iteration i+1's step 0.
        obs = f["obs"][:].reshape(-1, 4, 4)  # [I*T][M][4]
        actions = f["actions"][:].reshape(-1, 4)
        ended = (f["terminated"][:] | f["truncated"][:]).reshape(-1, 4)
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    stepped = restarted = 0
    worst = 0.0
    assert np.all(np.abs(obs[0]) <= 0.05), obs[0]  # every env starts from Gymnasium's reset range
    for k in range(len(obs) - 1):
        for m in range(4):
            if ended[k, m]:
                assert np.all(np.abs(obs[k + 1, m]) <= 0.05), (k, m, obs[k + 1, m])
                restarted += 1
                continue
            env.state = obs[k, m].astype(np.float64)
            env.steps_beyond_terminated = None
            expected, _, _, _, _ = env.step(int(actions[k, m]))
            error = np.abs(obs[k + 1, m] - expected) / (1e-5 + 1e-5 * np.abs(expected))
            worst = max(worst, float(error.max()))
            assert np.all(error <= 1.0), (k, m, obs[k, m], int(actions[k, m]), obs[k + 1, m], expected)
            stepped += 1
    assert stepped > 400 and restarted > 0, (stepped, restarted)
    print(f"normalize_obs run: {stepped} logged transitions match Gymnasium's CartPole-v1 (worst {worst:.3f} of the "
          f"tolerance), {restarted} episode starts in its reset range")
    return 0


def logged_iterations(surge, log):
    info = subprocess.run([surge, "h5", "info", log], capture_output=True, text=True)
    assert info.returncode == 0, f"surge h5 info {log}: exit {info.returncode}: {info.stderr.strip()}"
    found = re.search(r"logged iterations: (\d+) .*", info.stdout)
    assert found, info.stdout
    return int(found.group(1)), found.group(0)


def check_killed(surge, folder):
    chooser = random.Random()
    log = os.path.join(folder, "killed.h5")
    trials = ["SIGKILL"] * 6 + ["two SIGINTs"] * 2
    for trial, how in enumerate(trials):
        # The log appears only once laid out whole; the lock file a killed run leaves stays, and must
        # not stop the next run.
        if os.path.exists(log):
            os.remove(log)
        process = subprocess.Popen(train(surge, folder, f"killed{trial}", "--total-steps", "100000000",
                                         "--log-rollouts", log, "--log-every", "1"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(log, process)
        delay = 0.0 if trial == 0 else chooser.uniform(0.0, 2.0)
        time.sleep(delay)
        if how == "SIGKILL":
            process.send_signal(signal.SIGKILL)
        else:
            process.send_signal(signal.SIGINT)
            time.sleep(chooser.uniform(0.0, 0.01))
            process.send_signal(signal.SIGINT)
        process.wait()
        rows, line = logged_iterations(surge, log)
        with h5py.File(log, "r", swmr=True) as f:
            assert complete_rows(f) == rows, (complete_rows(f), line)
            lengths = {name: dataset.shape[0] for name, dataset in f.items() if name != "env_id"}
            assert all(rows <= n <= rows + 1 for n in lengths.values()), lengths
            assert ("partly written" in line) == any(n > rows for n in lengths.values()), (line, lengths)
            iterations = f["iteration"][:rows]  # increasing, with gaps where the writer fell behind
            assert np.all(np.diff(iterations) > 0) and np.all(f["global_step"][:rows] == iterations * BATCH)
            for name, dataset in f.items():  # every complete row decompresses
                if name != "env_id":
                    dataset[:rows]
        print(f"trial {trial}: {how} after {delay:.2f} s (exit {process.returncode}): {rows} complete iterations, "
              f"dataset lengths {sorted(set(lengths.values()))}")
    again = subprocess.run(train(surge, folder, "again", "--total-steps", str(2 * BATCH), "--log-rollouts", log,
                                 "--log-every", "1"), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert logged_iterations(surge, log)[0] == 2
    print("a new run logs to the same path afterwards")
    return 0


def check_locked(surge, folder):
    log = os.path.join(folder, "shared.h5")
    first = subprocess.Popen(train(surge, folder, "first", "--total-steps", "100000000", "--log-rollouts", log,
                                   "--log-every", "1"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(log, first)
    time.sleep(0.5)
    second = subprocess.run(train(surge, folder, "second", "--total-steps", str(4 * BATCH), "--log-rollouts", log),
                            capture_output=True, text=True)
    assert first.poll() is None, "the first run ended before the second was tried"
    first.send_signal(signal.SIGINT)
    _, first_err = first.communicate(timeout=120)
    assert second.returncode == 2, (second.returncode, second.stderr)
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and log in lines[0] and f"pid {first.pid}" in lines[0], second.stderr
    assert first.returncode == 128 + signal.SIGINT, (first.returncode, first_err)
    written = re.search(r"logged (\d+) iterations to", first_err)
    assert written, first_err
    rows, _ = logged_iterations(surge, log)
    assert rows == int(written.group(1)) and rows > 0, (rows, first_err)
    with h5py.File(log, "r") as f:  # closed cleanly: plain readers open it too
        assert complete_rows(f) == rows and all(d.shape[0] == rows for n, d in f.items() if n != "env_id")
    assert not os.path.exists(log + ".lock")
    print(f"second run refused: {lines[0]}\nfirst run's log whole: {rows} iterations")
    return 0


def main(argv):
    checks = {"raw-obs": check_raw_obs, "killed": check_killed, "locked": check_locked}
    if len(argv) != 3 or argv[0] not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    shutil.rmtree(argv[2], ignore_errors=True)  # a run refuses a folder that holds an earlier one
    os.makedirs(argv[2])
    return checks[argv[0]](argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
