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
