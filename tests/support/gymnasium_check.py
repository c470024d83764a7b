#!/usr/bin/env python3
"""Steps Gymnasium's own CartPole-v1 beside `surge step` on 2000 fresh random states and actions.

Usage: gymnasium_check.py PATH/TO/surge

The golden CSV is fixed; this check draws new states over wide ranges (beyond the termination
thresholds too), so the comparison is not limited to the rows someone once chose. Exits 77 (which
ctest reports as skipped) when Gymnasium or NumPy cannot be imported.
"""
import csv
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import gymnasium as gym
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)

ROWS = 2000
STATE_NAMES = ["x", "x_dot", "theta", "theta_dot"]
# Wide draws: positions and angles past their thresholds, speeds well beyond what episodes reach.
STATE_RANGES = [(-3.0, 3.0), (-5.0, 5.0), (-0.4, 0.4), (-5.0, 5.0)]
# Rows whose termination test sits this close to a threshold are left out: float32 and float64
# arithmetic may then disagree on the flag (the golden data leaves them out for the same reason).
THRESHOLD_MARGIN = 1e-4
ATOL = RTOL = 1e-5


def gymnasium_transitions(seed):
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rows = []
    while len(rows) < ROWS:
        state = np.array([rng.uniform(low, high) for low, high in STATE_RANGES], dtype=np.float64)
        action = int(rng.integers(2))
        env.state = state.copy()
        env.steps_beyond_terminated = None  # each row is a fresh episode's step, rewarded 1
        obs, reward, terminated, _, _ = env.step(action)
        next_state = np.array(env.state, dtype=np.float64)
        if min(abs(abs(next_state[0]) - env.x_threshold), abs(abs(next_state[2]) - env.theta_threshold_radians)) < THRESHOLD_MARGIN:
            continue
        rows.append((state, action, next_state, np.asarray(obs, dtype=np.float32), float(reward), int(bool(terminated))))
    return rows


def surge_transitions(surge, rows, folder):
    input_path = os.path.join(folder, "states.csv")
    output_path = os.path.join(folder, "next.csv")
    with open(input_path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([f"s_{name}" for name in STATE_NAMES] + ["action"])
        for state, action, *_ in rows:
            writer.writerow([repr(float(v)) for v in state] + [action])
    done = subprocess.run([surge, "step", "--scenario", "cartpole", "--device", "cpu", "--input", input_path,
                           "--output", output_path], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"surge step failed with exit code {done.returncode}: {done.stderr.strip()}")
        sys.exit(1)
    with open(output_path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    rows = gymnasium_transitions(seed=20240607)
    with tempfile.TemporaryDirectory(prefix="surge_gymnasium_check_") as folder:
        produced = surge_transitions(sys.argv[1], rows, folder)
    if len(produced) != len(rows):
        print(f"surge wrote {len(produced)} rows for {len(rows)} inputs")
        return 1

    failures = []
    worst = 0.0  # largest error as a fraction of the allowed tolerance
    terminations = 0
    for k, ((state, action, next_state, obs, reward, terminated), out) in enumerate(zip(rows, produced)):
        checks = [(f"next_{name}", float(out[f"next_{name}"]), next_state[j]) for j, name in enumerate(STATE_NAMES)]
        checks += [(f"obs_{j}", float(out[f"obs_{j}"]), float(obs[j])) for j in range(4)]
        for column, value, ref in checks:
            allowed = ATOL + RTOL * abs(ref)
            worst = max(worst, abs(value - ref) / allowed)
            if abs(value - ref) > allowed:
                failures.append(f"row {k + 1} {column}: surge {value!r}, Gymnasium {ref!r}")
        if float(out["reward"]) != reward:
            failures.append(f"row {k + 1} reward: surge {out['reward']}, Gymnasium {reward}")
        if int(out["terminated"]) != terminated:
            failures.append(f"row {k + 1} terminated: surge {out['terminated']}, Gymnasium {terminated} (state {list(state)}, action {action})")
        terminations += terminated

    print(f"Gymnasium {gym.__version__}: {len(rows)} CartPole-v1 transitions, {terminations} terminating; "
          f"largest error {worst:.3f} of the tolerance {ATOL} + {RTOL}*|ref|")
    for line in failures[:10]:
        print(line)
    if failures:
        print(f"{len(failures)} disagreements with Gymnasium")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
