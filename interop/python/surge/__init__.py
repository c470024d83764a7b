"""Surge: GPU-batched Gymnasium classic-control environments and a PPO learner.

    env = surge.make("CartPole-v1", num_envs=4096, device="cpu", array="numpy")

`python -m surge ...` runs the surge command line. See docs/python.md.
"""
from ._surge import __version__
from .train import Policy, eval, train
from .vector_env import SurgeVectorEnv, make

__all__ = ["Policy", "SurgeVectorEnv", "eval", "make", "train", "__version__"]
