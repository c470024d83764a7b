"""Zero copy: every array step() returns is a view of Surge's own buffer, for NumPy, PyTorch and JAX;
actions of the right dtype and device are read in place."""
import numpy as np
import pytest

import surge

NAMES = ("obs", "reward", "terminated", "truncated")


def test_numpy_views_are_surges_buffers(cartpole):
    pointers = cartpole.buffer_pointers
    obs, _ = cartpole.reset(seed=0)
    assert obs.ctypes.data == pointers["obs"]
    outputs = cartpole.step(np.zeros(8, np.int32))
    for name, array in zip(NAMES, outputs):
        assert array.ctypes.data == pointers[name], name
    assert outputs[2].dtype == np.bool_ and outputs[1].dtype == np.float32


def test_numpy_actions_are_not_copied(cartpole):
    # Surge's step reads the caller's memory: a view into a larger array works, in place.
    backing = np.zeros(16, np.int32)
    actions = backing[4:12]
    cartpole.reset(seed=0)
    cartpole.step(actions)
    assert actions.base is backing


def test_torch_tensors_are_views():
    torch = pytest.importorskip("torch")
    env = surge.make("CartPole-v1", num_envs=8, seed=0, array="torch")
    pointers = env.buffer_pointers
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.data_ptr() == pointers["obs"]
    outputs = env.step(torch.zeros(8, dtype=torch.int32))
    for name, tensor in zip(NAMES, outputs):
        assert tensor.data_ptr() == pointers[name], name
    assert outputs[2].dtype == torch.bool
    env.step(torch.ones(8, dtype=torch.int64))  # converted once
    with pytest.raises(TypeError, match="dtype differs"):
        env.step(torch.zeros(8, dtype=torch.float32))


def test_jax_arrays_are_views():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    env = surge.make("Pendulum-v1", num_envs=8, seed=0, array="jax")
    pointers = env.buffer_pointers
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, jax.Array) and obs.unsafe_buffer_pointer() == pointers["obs"]
    outputs = env.step(jnp.zeros((8, 1), jnp.float32))
    for name, array in zip(NAMES, outputs):
        assert array.unsafe_buffer_pointer() == pointers[name], name
    assert outputs[2].dtype == jnp.bool_
    assert np.allclose(np.asarray(outputs[0])[:, 0] ** 2 + np.asarray(outputs[0])[:, 1] ** 2, 1.0, atol=1e-5)
