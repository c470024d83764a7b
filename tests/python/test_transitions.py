"""Surge against Gymnasium's own environments, from the same states with the same actions: the next
observations, rewards and termination flags agree within the golden tolerance (tests/support/golden.hpp:
float32 against Gymnasium's float64)."""
import gymnasium as gym
import numpy as np
import pytest

import surge
from conftest import GYM_IDS, sample_actions

ATOL = RTOL = 1e-5
NUM_ENVS = 32
STEPS = 40


def within_tolerance(value, reference):
    return np.abs(np.asarray(value, np.float64) - reference) <= ATOL + RTOL * np.abs(reference)


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_transitions_match_gymnasium(gym_id):
    env = surge.make(gym_id, num_envs=NUM_ENVS, seed=7)
    references = [gym.make(gym_id).unwrapped for _ in range(NUM_ENVS)]
    for i, reference in enumerate(references):
        reference.reset(seed=100 + i)
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(STEPS):
        # Both start from the same float32 states, with the episode counters at zero (no time limit).
        states = np.stack([np.asarray(r.state, np.float64) for r in references]).astype(np.float32)
        for reference, state in zip(references, states):
            reference.state = state.astype(np.float64)
            if hasattr(reference, "steps_beyond_terminated"):
                reference.steps_beyond_terminated = None
        env.set_state({"states": states, "episode_steps": np.zeros(NUM_ENVS, np.int32)})
        actions = sample_actions(env, rng)
        obs, reward, terminated, _, infos = env.step(actions)
        next_obs = np.where(terminated[:, None], infos["final_obs"], obs) if terminated.any() else obs
        for i, reference in enumerate(references):
            action = int(actions[i]) if env.single_action_space.shape == () else actions[i]
            ref_obs, ref_reward, ref_terminated, _, _ = reference.step(action)
            assert bool(terminated[i]) == bool(ref_terminated), (i, states[i], actions[i])
            assert within_tolerance(next_obs[i], ref_obs).all(), (i, next_obs[i], ref_obs)
            assert within_tolerance(reward[i], ref_reward), (i, reward[i], ref_reward)
            compared += 1
            if ref_terminated:
                reference.reset(seed=int(rng.integers(1 << 30)))
    assert compared == NUM_ENVS * STEPS
