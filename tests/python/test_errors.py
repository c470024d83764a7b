"""Bad input ends in one ValueError or TypeError carrying the command line's message, never a crash."""
import numpy as np
import pytest

import surge


def test_wrong_action_shape(cartpole):
    with pytest.raises(ValueError, match=r"actions: expected contiguous int32\[8\] on cpu, got int32\[7\]"):
        cartpole.step(np.zeros(7, np.int32))


def test_wrong_action_dtype(cartpole):
    with pytest.raises(TypeError, match=r"got float32\[8\] on cpu \(dtype differs\): cartpole takes integer actions"):
        cartpole.step(np.zeros(8, np.float32))
    with pytest.raises(TypeError):
        cartpole.step(np.array(["a"] * 8))


def test_wrong_continuous_action_shape():
    env = surge.make("Pendulum-v1", num_envs=4, seed=0)
    with pytest.raises(ValueError, match=r"expected contiguous float32\[4\]\[1\]"):
        env.step(np.zeros(4, np.float32))
    env.step(np.zeros((4, 1), np.float64))  # converted once: another floating-point dtype is fine


def test_wrong_action_device():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    env = surge.make("CartPole-v1", num_envs=4, seed=0)
    with pytest.raises(ValueError, match="device differs"):
        env.step(torch.zeros(4, dtype=torch.int32, device="cuda"))


def test_closed_env(cartpole):
    cartpole.close()
    with pytest.raises(ValueError, match="the environment is closed"):
        cartpole.step(np.zeros(8, np.int32))
    with pytest.raises(ValueError, match="the environment is closed"):
        cartpole.reset()


def test_unknown_scenario():
    with pytest.raises(ValueError, match=r"unknown scenario 'CartPole-v9': known scenarios are cartpole \(CartPole-v1\)"):
        surge.make("CartPole-v9")


def test_unknown_or_bad_physics():
    with pytest.raises(ValueError, match="cartpole has no physics parameter 'mass'; its parameters are gravity"):
        surge.make("cartpole", physics={"mass": 1.0})
    with pytest.raises(ValueError, match="masspole"):
        surge.make("cartpole", physics={"masspole": -1.0})
    with pytest.raises(TypeError, match="give a number or a"):
        surge.make("cartpole", physics={"masspole": "heavy"})


def test_bad_device_count_and_array_kind():
    with pytest.raises(ValueError, match="cpu, cuda"):
        surge.make("cartpole", device="tpu")
    with pytest.raises(ValueError, match="num_envs 0"):
        surge.make("cartpole", num_envs=0)
    with pytest.raises(ValueError, match="unknown array kind 'cupy'"):
        surge.make("cartpole", array="cupy")


def test_unknown_state_name(cartpole):
    with pytest.raises(ValueError, match="unknown state 'velocity'"):
        cartpole.set_state({"velocity": np.zeros(8)})
    with pytest.raises(ValueError, match=r"state 'states' has shape \[8, 3\] where \[8, 4\] is expected"):
        cartpole.set_state({"states": np.zeros((8, 3))})
    with pytest.raises(ValueError, match=r"state 'states' has shape \[4, 8\] where \[8, 4\] is expected"):
        cartpole.set_state({"states": np.zeros((4, 8))})  # as many values, transposed: not reshaped silently


def test_discrete_action_out_of_range(cartpole):
    with pytest.raises(ValueError, match=r"action 2 of environment 3 is not one of cartpole's actions 0..1"):
        cartpole.step(np.array([0, 1, 0, 2, 0, 0, 0, 0], np.int32))
    with pytest.raises(ValueError, match=r"action -1 of environment 0"):
        cartpole.step(np.full(8, -1, np.int32))


def test_read_only_actions_are_converted(cartpole):
    actions = np.zeros(8, np.int32)
    actions.flags.writeable = False
    obs, reward, *_ = cartpole.step(actions)
    assert obs.shape == (8, 4) and np.all(reward == 1)


def test_reset_twice_draws_new_states():
    env = surge.make("cartpole", num_envs=4, seed=3)
    first = env.reset()[0].copy()
    again = env.reset()[0].copy()
    assert not np.array_equal(first, again)
    assert np.array_equal(surge.make("cartpole", num_envs=4, seed=3).reset()[0], first)


def test_bad_seeds_are_refused_before_anything_happens(cartpole):
    with pytest.raises(ValueError, match=r"seed -1 is out of range: give one from 0 to 2\*\*64 - 1"):
        surge.make("cartpole", seed=-1)
    with pytest.raises(TypeError, match=r"seed 1.5 is not an integer"):
        surge.make("cartpole", seed=1.5)
    with pytest.raises(TypeError, match=r"seed True is not an integer"):
        surge.make("cartpole", seed=True)
    obs, _ = cartpole.reset(seed=3)
    before = np.array(obs, copy=True)
    with pytest.raises(TypeError, match=r"seed 1.5 is not an integer"):
        cartpole.reset(seed=1.5)
    with pytest.raises(ValueError, match=r"seed 18446744073709551616 is out of range"):
        cartpole.reset(seed=2**64)
    np.testing.assert_array_equal(obs, before)  # a view of Surge's observations: no reset happened


def test_physics_names_are_single_parameters():
    with pytest.raises(ValueError, match=r"physics name 'masspole=0.1,length' is not a parameter name"):
        surge.make("cartpole", physics={"masspole=0.1,length": 0.5})
    with pytest.raises(ValueError, match=r"physics name 3 is not a parameter name"):
        surge.make("cartpole", physics={3: 0.5})


def test_torch_actions_with_gradients_or_of_bool_type():
    torch = pytest.importorskip("torch")
    env = surge.make("CartPole-v1", num_envs=4, seed=0, array="torch")
    env.reset()
    logits = torch.zeros(4, 2, requires_grad=True)
    env.step(logits.argmax(dim=1).to(torch.int32))  # an integer result carries no gradient
    pendulum = surge.make("Pendulum-v1", num_envs=4, seed=0, array="torch")
    pendulum.reset()
    pendulum.step(torch.zeros(4, 1, requires_grad=True))  # detached and stepped
    with pytest.raises(TypeError, match="cartpole takes integer actions"):
        env.step(torch.zeros(4, dtype=torch.bool))


def test_record_episode_statistics_wrapper():
    gymnasium = pytest.importorskip("gymnasium")
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    wrapped = RecordEpisodeStatistics(surge.make("CartPole-v1", num_envs=4, seed=0, episode_statistics=False))
    wrapped.reset(seed=0)
    ended = 0
    for _ in range(200):
        _, _, terminated, truncated, infos = wrapped.step(np.ones(4, np.int32))
        if "episode" in infos:
            ended += int(np.sum(infos["_episode"]))
    assert ended > 0
    with pytest.raises(ValueError, match="episode"):
        env = RecordEpisodeStatistics(surge.make("CartPole-v1", num_envs=4, seed=0))
        env.reset(seed=0)
        for _ in range(200):
            env.step(np.ones(4, np.int32))
