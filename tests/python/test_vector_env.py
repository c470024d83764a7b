"""surge.make as a Gymnasium vector environment: spaces, reset, same-step auto-reset, episode
statistics, state round trips, copies, and the command line behind python -m surge."""
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, VectorEnv

import surge
from conftest import GYM_IDS, sample_actions


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_spaces_are_gymnasiums(gym_id):
    env = surge.make(gym_id, num_envs=3, seed=1)
    reference = gym.make_vec(gym_id, num_envs=3, vectorization_mode="sync")
    assert isinstance(env, VectorEnv)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert env.single_observation_space == reference.single_observation_space
    assert env.single_action_space == reference.single_action_space
    assert env.observation_space == reference.observation_space
    assert env.action_space == reference.action_space
    obs, info = env.reset(seed=2)
    assert info == {} and obs in env.observation_space
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, reward, terminated, truncated, _ = env.step(sample_actions(env, rng))
        assert obs in env.observation_space
        assert reward.shape == (3,) and terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    env.close()
    reference.close()


def test_surge_names_and_gym_ids_make_the_same_environments():
    by_name = surge.make("cartpole", num_envs=4, seed=9)
    by_id = surge.make("CartPole-v1", num_envs=4, seed=9)
    assert by_name.scenario == by_id.scenario == "cartpole"
    assert np.array_equal(by_name.reset()[0], by_id.reset()[0])


def test_reset_with_a_seed_is_deterministic_and_seeds_differ(cartpole):
    first = cartpole.reset(seed=11)[0].copy()
    cartpole.step(np.ones(8, np.int32))
    again = cartpole.reset(seed=11)[0].copy()
    other = cartpole.reset(seed=12)[0].copy()
    assert data_equivalence(first, again, exact=True)
    assert not np.array_equal(first, other)
    assert len({tuple(row) for row in first}) == 8  # each environment has its own stream


def test_same_step_auto_reset_and_episode_statistics():
    env = surge.make("CartPole-v1", num_envs=16, seed=3)
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    running_return = np.zeros(16)
    running_length = np.zeros(16, np.int64)
    ended_episodes = 0
    for _ in range(300):
        state_before = env.get_state()
        obs, reward, terminated, truncated, infos = env.step(sample_actions(env, rng))
        running_return += reward
        running_length += 1
        ended = terminated | truncated
        if not ended.any():
            assert infos == {}
            continue
        assert np.array_equal(infos["_episode"], ended) and np.array_equal(infos["_final_obs"], ended)
        assert np.array_equal(infos["episode"]["_r"], ended) and np.array_equal(infos["episode"]["_l"], ended)
        assert np.allclose(infos["episode"]["r"][ended], running_return[ended])
        assert np.array_equal(infos["episode"]["l"][ended], running_length[ended])
        assert np.all(infos["episode"]["r"][~ended] == 0)
        # The final observation is the ending state; obs already starts the next episode.
        final = infos["final_obs"][ended]
        assert np.all((np.abs(final[:, 0]) > 2.4) | (np.abs(final[:, 2]) > 0.2094) | truncated[ended])
        assert np.all(np.abs(obs[ended]) <= 0.05)
        assert not np.array_equal(final, state_before["states"][ended])
        ended_episodes += int(ended.sum())
        running_return[ended] = 0
        running_length[ended] = 0
    assert ended_episodes > 50


def test_truncation_at_the_time_limit():
    env = surge.make("MountainCar-v0", num_envs=4, seed=0)
    env.reset(seed=0)
    for step in range(1, 201):
        _, _, terminated, truncated, infos = env.step(np.ones(4, np.int32))
        assert truncated.all() == (step == 200)
    assert not terminated.any()
    assert np.array_equal(infos["episode"]["l"], [200] * 4)


def test_state_round_trip_reproduces_the_steps(cartpole):
    cartpole.reset(seed=4)
    actions = np.array([0, 1] * 4, np.int32)
    saved = cartpole.get_state()
    first = [a.copy() for a in cartpole.step(actions)[:4]]
    cartpole.step(1 - actions)
    cartpole.set_state(saved)
    second = cartpole.step(actions)[:4]
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


def test_outputs_are_overwritten_by_the_next_step_unless_copied():
    views = surge.make("CartPole-v1", num_envs=4, seed=1)
    copies = surge.make("CartPole-v1", num_envs=4, seed=1, copy=True)
    actions = np.zeros(4, np.int32)
    obs_view, obs_copy = views.reset()[0], copies.reset()[0]
    step_view, step_copy = views.step(actions)[0], copies.step(actions)[0]
    assert step_view is obs_view  # the same buffer, now holding the step's observations
    assert step_copy is not obs_copy and not np.array_equal(step_copy, obs_copy)
    assert np.array_equal(step_view, step_copy)


def test_actions_of_another_integer_dtype_are_converted(cartpole):
    cartpole.reset(seed=1)
    cartpole.step(np.ones(8, np.int64))
    cartpole.step([0, 1, 0, 1, 0, 1, 0, 1])
    cartpole.step(np.ones(8, np.int32)[::-1].copy())


def test_physics_settings_reach_the_engine():
    env = surge.make("cartpole", num_envs=64, seed=2, physics={"length": 0.7, "masspole": (0.05, 0.2)})
    params = env.get_state()["params"]  # [N][gravity, masscart, masspole, length, force_mag, tau]
    assert np.allclose(params[:, 3], 0.7)
    assert params[:, 2].min() >= 0.05 and params[:, 2].max() <= 0.2 and params[:, 2].std() > 0.01


def test_python_m_surge_runs_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "surge", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"surge {surge.__version__}")
    bad = subprocess.run([sys.executable, "-m", "surge", "step", "--scenario", "nope", "--input", "x.csv",
                          "--output", str(tmp_path / "y.csv")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("surge step: unknown scenario 'nope'")


@pytest.mark.parametrize("check", ["check_reset_seed_determinism", "check_reset_options", "check_reset_return_type",
                                   "check_reset_return_info_deprecation"])
@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_gymnasiums_reset_checks(check, gym_id):
    # Gymnasium's env_checker has no vector checker; its reset checks apply to a VectorEnv as they are
    # (with copies, so that two resets' observations are two arrays). Its step checks assume one
    # environment's scalar flags: the vector versions follow.
    from gymnasium.utils import env_checker

    getattr(env_checker, check)(surge.make(gym_id, num_envs=4, seed=1, copy=True))


@pytest.mark.parametrize("gym_id", GYM_IDS)
def test_step_determinism_and_fresh_copies(gym_id):
    first, second = (surge.make(gym_id, num_envs=8, seed=1, copy=True) for _ in range(2))
    rng = np.random.default_rng(5)
    previous = None
    assert data_equivalence(first.reset(seed=123), second.reset(seed=123), exact=True)
    for _ in range(50):
        actions = sample_actions(first, rng)
        outputs = first.step(actions)
        assert data_equivalence(outputs, second.step(actions), exact=True)
        if previous is not None:
            assert all(a is not b for a, b in zip(outputs[:4], previous[:4]))
        previous = outputs
