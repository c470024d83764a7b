"""Replays the frame store's frames through Gymnasium's own FrameStackObservation (default padding,
"reset") and checks every stack the store gathered: each row's, and the final stack of each episode.

Usage: check_pixel_stacks.py SAMPLE_PROGRAM OUT.json. Exits 77 (skipped) without gymnasium.
"""
import json
import subprocess
import sys

try:
    import gymnasium as gym
    import numpy as np
    from gymnasium.wrappers import FrameStackObservation
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)


class Replay(gym.Env):
    """One environment's frames in the order the store saw them: reset gives the next first frame, step
    gives the next frame, or the final frame with terminated=True where the episode ended."""

    def __init__(self, frames, finals, done, shape):
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(1)
        self.frames, self.finals, self.done = frames, finals, done
        self.row = 0

    def reset(self, seed=None, options=None):
        return self.frames[self.row], {}

    def step(self, action):
        step = self.row
        self.row += 1
        if self.done[step]:
            return self.finals[step], 0.0, True, False, {}
        return self.frames[self.row], 0.0, False, False, {}


def main():
    if subprocess.run(sys.argv[1:3]).returncode != 0:
        sys.exit("the sample program failed")
    data = json.loads(open(sys.argv[2]).read())
    n, steps, stack = data["envs"], data["steps"], data["stack"]
    h, w = data["height"], data["width"]
    frames = np.array(data["frames"], np.uint8).reshape(steps + 1, n, h, w, 1)
    finals = np.array(data["final_frames"], np.uint8).reshape(steps, n, h, w, 1)
    done = np.array(data["done"], np.uint8).reshape(steps, n)
    stacks = np.array(data["stacks"], np.uint8).reshape(steps + 1, n, h, w, stack)
    final_stacks = np.array(data["final_stacks"], np.uint8).reshape(steps, n, h, w, stack)
    ended = 0
    for e in range(n):
        env = FrameStackObservation(Replay(frames[:, e], finals[:, e], done[:, e], (h, w, 1)), stack)
        assert env.unwrapped is not None
        observation, _ = env.reset()
        # Gymnasium stacks as [stack][H][W][1]; the store gathers [H][W][stack].
        as_store = lambda o: np.moveaxis(np.asarray(o)[..., 0], 0, -1)
        np.testing.assert_array_equal(as_store(observation), stacks[0, e], err_msg=f"env {e} reset")
        for t in range(steps):
            observation, _, terminated, _, _ = env.step(0)
            if terminated:
                ended += 1
                np.testing.assert_array_equal(as_store(observation), final_stacks[t, e], err_msg=f"env {e} final {t}")
                observation, _ = env.reset()
            np.testing.assert_array_equal(as_store(observation), stacks[t + 1, e], err_msg=f"env {e} row {t + 1}")
    if ended < n:
        sys.exit(f"only {ended} episodes ended: the sample does not cross resets")
    print(f"{n} environments x {steps} steps, {ended} episode ends: every stack as FrameStackObservation's")


main()
