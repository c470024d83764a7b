#!/usr/bin/env python3
"""Replays a synthetic vectorised rollout through Gymnasium's own vector NormalizeObservation and
NormalizeReward wrappers (same-step auto-reset) and compares with what Surge's normalisation made of it.

usage: check_normalization.py PROGRAM OUT.json
  runs PROGRAM OUT.json (tests/support/normalization_sample.cpp), which writes the raw observations, rewards
  and flags and Surge's normalised observations and scaled rewards; both are clipped to +-10 as
  CleanRL clips after the wrappers. Gymnasium keeps the observation statistics in float32 and sums the
  discounted returns' batch moments in float32, hence the tolerances.
Exits 77 (skipped) when gymnasium cannot be imported.
"""
import json
import subprocess
import sys

try:
    import gymnasium as gym
    import numpy as np
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
    from gymnasium.wrappers.vector import NormalizeObservation, NormalizeReward
except ImportError as error:  # gymnasium is optional for the suite: report a skip, not a pass
    print(f"skipped: {error}")
    sys.exit(77)


class Replay(VectorEnv):
    """Plays back recorded observations, rewards and flags, whatever the actions."""

    def __init__(self, obs, reward, terminated, truncated, autoreset_mode):
        self.metadata = {"autoreset_mode": autoreset_mode}
        self.obs, self.reward, self.terminated, self.truncated = obs, reward, terminated, truncated
        self.num_envs = obs.shape[1]
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, shape=obs.shape[2:], dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = gym.spaces.Discrete(2)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self.obs[0].copy(), {}

    def step(self, actions):
        t = self.t
        self.t += 1
        return self.obs[t + 1].copy(), self.reward[t].copy(), self.terminated[t].copy(), self.truncated[t].copy(), {}


def main():
    program, path = sys.argv[1], sys.argv[2]
    subprocess.run([program, path], check=True)
    with open(path) as f:
        data = json.load(f)
    steps, envs, dim = data["steps"], data["envs"], data["dim"]
    obs = np.asarray(data["obs"], dtype=np.float32).reshape(steps + 1, envs, dim)
    reward = np.asarray(data["reward"], dtype=np.float32).reshape(steps, envs)
    terminated = np.asarray(data["terminated"]).reshape(steps, envs).astype(bool)
    truncated = np.asarray(data["truncated"]).reshape(steps, envs).astype(bool)
    ours_obs = np.asarray(data["normalized_obs"], dtype=np.float32).reshape(steps + 1, envs, dim)
    ours_reward = np.asarray(data["scaled_reward"], dtype=np.float32).reshape(steps, envs)
    obs_clip, reward_clip = data["obs_clip"], data["reward_clip"]

    # The observation wrapper refuses same-step auto-reset (it leaves info's final observation alone) but
    # counts and normalises every observation it returns alike in either mode; the reward wrapper follows
    # the same-step rule, which is Surge's.
    obs_env = NormalizeObservation(Replay(obs, reward, terminated, truncated, AutoresetMode.NEXT_STEP))
    reward_env = NormalizeReward(Replay(obs, reward, terminated, truncated, AutoresetMode.SAME_STEP), gamma=data["gamma"])
    first, _ = obs_env.reset()
    reward_env.reset()
    theirs_obs = [np.clip(first, -obs_clip, obs_clip)]
    theirs_reward = []
    actions = np.zeros(envs, dtype=np.int64)
    for _ in range(steps):
        theirs_obs.append(np.clip(obs_env.step(actions)[0], -obs_clip, obs_clip))
        theirs_reward.append(np.clip(reward_env.step(actions)[1], -reward_clip, reward_clip))
    theirs_obs = np.asarray(theirs_obs)
    theirs_reward = np.asarray(theirs_reward)

    failures = []
    obs_error = np.abs(ours_obs - theirs_obs) - (1e-4 + 1e-4 * np.abs(theirs_obs))
    if (obs_error > 0).any():
        t, n, d = np.argwhere(obs_error > 0)[0]
        failures.append(f"obs[{t}][{n}][{d}]: ours {ours_obs[t, n, d]!r}, gymnasium {theirs_obs[t, n, d]!r}")
    reward_error = np.abs(ours_reward - theirs_reward) - (1e-6 + 1e-5 * np.abs(theirs_reward))
    if (reward_error > 0).any():
        t, n = np.argwhere(reward_error > 0)[0]
        failures.append(f"reward[{t}][{n}]: ours {ours_reward[t, n]!r}, gymnasium {theirs_reward[t, n]!r}")
    # The data must exercise what it claims to: clipping, ends of both kinds, a real rescaling.
    if not (np.abs(theirs_obs) == obs_clip).any():
        failures.append("no observation reached the clip")
    if not terminated.any() or not truncated.any():
        failures.append("the rollout lacks terminated or truncated steps")
    if np.allclose(theirs_reward, reward):
        failures.append("the rewards were not rescaled")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"normalisation matches gymnasium {gym.__version__} over {steps} steps x {envs} envs: largest differences "
          f"{np.abs(ours_obs - theirs_obs).max():.3g} (obs), {np.abs(ours_reward - theirs_reward).max():.3g} (reward)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
