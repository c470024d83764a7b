"""The tests import the package from the build tree (tests/CMakeLists.txt puts <build>/python on
PYTHONPATH) or, outside ctest, wherever `pip install .` put it."""
import numpy as np
import pytest

import surge

GYM_IDS = ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "Pendulum-v1", "MountainCarContinuous-v0"]


def sample_actions(env, rng):
    """Random valid actions in Surge's own dtypes (int32 indices, float32 vectors)."""
    space = env.single_action_space
    if hasattr(space, "n"):
        return rng.integers(0, space.n, env.num_envs).astype(np.int32)
    return rng.uniform(space.low, space.high, (env.num_envs, *space.shape)).astype(np.float32)


@pytest.fixture
def cartpole():
    env = surge.make("CartPole-v1", num_envs=8, seed=5)
    yield env
    env.close()
