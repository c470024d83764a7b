#!/usr/bin/env python3
"""`surge render` against Gymnasium's own render_mode="rgb_array" frames, for many states of every scenario.

Usage: check_render.py PATH/TO/surge [--report]

For each scenario, STATES random states (angles all round, positions over the whole track or valley,
CartPole's pole past its threshold too) are set on Gymnasium's environment (Pendulum with no torque
applied yet, so without its arrow) and drawn by both.

Full size (600x400 or 500x500): a pixel is an *edge pixel* when Gymnasium's frame is not uniform over
its 3x3 neighbourhood (it differs from a neighbour in any channel), that is within one pixel of a
colour change, where anti-aliasing decides the value. Every other pixel must be exactly equal in all
three channels; at least 99% of them must be, in every frame.

84x84: Gymnasium's frame area-averaged to 84x84 (each output pixel the mean of the exact area it
covers) against Surge's 84x84 frame drawn directly: the mean absolute difference per channel over
all states must stay below MEAN_BOUND levels of 255 (measured: 0.03 to 0.08; moving CartPole's cart by
one 84x84 pixel alone adds about 0.4), and 99.9% of pixels within PIXEL_BOUND (edges
drawn with coverage differ from Gymnasium's own anti-aliasing by at most about half a source pixel's
width of colour, which an 84-pixel frame shrinks to a seventh). The grey frame is checked against the
BT.601 luma of the same average. Also the bad input of `surge render`. With --report, prints the
figures per scenario. Exits 77 (skipped) when Gymnasium, pygame or NumPy is missing.
"""
import os
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame  # noqa: F401  (Gymnasium's renderer)
    import gymnasium as gym
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)

surge = sys.argv[1]
REPORT = "--report" in sys.argv
STATES = 20
MIN_EQUAL = 0.99
MEAN_BOUND = 0.25
PIXEL_BOUND = 48
rng = np.random.default_rng(16)


def cartpole_state():
    return [rng.uniform(-2.4, 2.4), 0.0, rng.uniform(-0.6, 0.6), 0.0]


SCENARIOS = [
    ("cartpole", "CartPole-v1", cartpole_state),
    ("acrobot", "Acrobot-v1", lambda: [rng.uniform(-np.pi, np.pi), rng.uniform(-np.pi, np.pi), 0.0, 0.0]),
    ("pendulum", "Pendulum-v1", lambda: [rng.uniform(-np.pi, np.pi), 0.0]),
    ("mountain_car", "MountainCar-v0", lambda: [rng.uniform(-1.2, 0.6), 0.0]),
    ("mountain_car_continuous", "MountainCarContinuous-v0", lambda: [rng.uniform(-1.2, 0.6), 0.0]),
]


def read_png(path):
    """Our own PNGs: 8-bit grey or RGB, filter 0 on every row (what Surge writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    at, idat, width = 8, b"", None
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        assert zlib.crc32(kind + body) == int.from_bytes(data[at + 8 + length:at + 12 + length], "big"), "bad CRC"
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            channels = {2: 3, 0: 1}[body[9]]
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert (rows[:, 0] == 0).all(), "a row filter other than none"
    return rows[:, 1:].reshape(height, width, channels)


def surge_frame(scenario, state, folder, size=None, grey=False):
    out = os.path.join(folder, "frame.png")
    command = [surge, "render", "--scenario", scenario, "--state", ",".join(repr(float(v)) for v in state),
               "--out", out]
    if size:
        command += ["--size", size]
    if grey:
        command += ["--grayscale"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return read_png(out)


def gymnasium_frame(env, state):
    env.unwrapped.state = np.array(state, dtype=np.float64)
    if hasattr(env.unwrapped, "last_u"):
        env.unwrapped.last_u = None
    return env.render()


def edge_mask(frame):
    """True where the 3x3 neighbourhood is not one colour (the frame's border counts its inside only)."""
    padded = np.pad(frame.astype(np.int16), ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = frame.shape[:2]
    edge = np.zeros((h, w), bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            shifted = padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
            edge |= (shifted != frame).any(axis=2)
    return edge


def area_weights(source, target):
    """[target][source]: the fraction of each source pixel inside each target pixel's span, over its width."""
    step = source / target
    weights = np.zeros((target, source))
    for i in range(target):
        low, high = i * step, (i + 1) * step
        for k in range(int(low), min(int(np.ceil(high)), source)):
            weights[i, k] = max(0.0, min(high, k + 1) - max(low, k))
    return weights / step


def area_average(frame, width, height):
    rows = area_weights(frame.shape[0], height)
    columns = area_weights(frame.shape[1], width)
    source = frame.astype(np.float64)
    return np.stack([rows @ source[:, :, k] @ columns.T for k in range(source.shape[2])], axis=2)


def check_scenario(scenario, gym_id, draw_state, folder):
    env = gym.make(gym_id, render_mode="rgb_array")
    env.reset(seed=0)
    worst_equal, excluded, small_diffs, grey_diffs, far = 1.0, [], [], [], 0
    for _ in range(STATES):
        state = draw_state()
        reference = gymnasium_frame(env, state)
        ours = surge_frame(scenario, state, folder)
        assert ours.shape == reference.shape, (scenario, ours.shape, reference.shape)
        edge = edge_mask(reference)
        equal = (ours == reference).all(axis=2)
        share = equal[~edge].mean()
        worst_equal = min(worst_equal, share)
        excluded.append(edge.mean())
        assert share >= MIN_EQUAL, f"{scenario} {state}: only {share:.4%} of non-edge pixels equal"

        averaged = area_average(reference, 84, 84)
        small = surge_frame(scenario, state, folder, size="84x84").astype(np.float64)
        difference = np.abs(small - averaged)
        small_diffs.append(difference.mean())
        far += int((difference.max(axis=2) > PIXEL_BOUND).sum())
        grey = surge_frame(scenario, state, folder, size="84x84", grey=True)[:, :, 0].astype(np.float64)
        luma = averaged @ np.array([0.299, 0.587, 0.114])
        grey_diffs.append(np.abs(grey - luma).mean())
    env.close()
    mean_small, mean_grey = float(np.mean(small_diffs)), float(np.mean(grey_diffs))
    far_share = far / (STATES * 84 * 84)
    assert mean_small < MEAN_BOUND, f"{scenario}: 84x84 mean difference {mean_small:.3f}"
    assert mean_grey < MEAN_BOUND, f"{scenario}: 84x84 grey mean difference {mean_grey:.3f}"
    assert far_share < 0.001, f"{scenario}: {far_share:.4%} of 84x84 pixels differ by more than {PIXEL_BOUND}"
    return (f"{scenario}: non-edge pixels equal >= {worst_equal:.4%} (worst of {STATES} states); edge pixels "
            f"excluded {np.mean(excluded):.2%} on average; 84x84 mean |difference| {mean_small:.3f} (RGB), "
            f"{mean_grey:.3f} (grey) of 255; pixels off by > {PIXEL_BOUND}: {far_share:.4%}")


def check_bad_input(folder):
    out = os.path.join(folder, "bad.png")
    for args, words in [
        (["--scenario", "cartpole", "--state", "1,2,3", "--out", out], "needs 4"),
        (["--scenario", "cartpole", "--state", "1,2,x,4", "--out", out], "'x'"),
        (["--scenario", "cartpole", "--size", "84by84", "--out", out], "84by84"),
        (["--scenario", "cartpole", "--out", os.path.join(folder, "bad.bmp")], "bad.bmp"),
        (["--scenario", "nowhere", "--out", out], "nowhere"),
        (["--scenario", "cartpole", "--envs", "16", "--size", "2000x100", "--out", os.path.join(folder, "bad.gif"),
          "--device", "cpu"], "over 4096 pixels a side"),
        (["--scenario", "cartpole", "--steps", "200000", "--out", os.path.join(folder, "bad.gif")], "200000"),
        (["--scenario", "cartpole", "--state", "1,2,3,4", "--out", os.path.join(folder, "bad.gif")], "FILE.png"),
    ]:
        result = subprocess.run([surge, "render", *args], capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("surge render: "), (args, result)
        assert words in lines[0], (args, lines)
        assert not [name for name in os.listdir(folder) if name.startswith("bad")], (args, os.listdir(folder))


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_bad_input(folder)
        for scenario, gym_id, draw_state in SCENARIOS:
            line = check_scenario(scenario, gym_id, draw_state, folder)
            if REPORT:
                print(line)
    print("check_render: OK")


if __name__ == "__main__":
    main()
