"""surge.make: Surge's batched environments as a Gymnasium vector environment."""
import os
import re

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _surge
from ._arrays import ARRAY_KINDS, array_kind

OUTPUTS = ("obs", "reward", "terminated", "truncated", "final_obs", "ended", "episode_return", "episode_length")


def _seed_value(seed):
    """A seed as Surge takes it (an integer from 0 to 2**64 - 1), checked before anything is done with it."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed {seed!r} is not an integer: give one from 0 to 2**64 - 1")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed {seed!r} is out of range: give one from 0 to 2**64 - 1")
    return int(seed)


def _physics_text(physics):
    """{"masspole": 0.2, "length": (0.5, 0.7)} as the --physics option writes it."""
    if physics is None:
        return ""
    if not isinstance(physics, dict):
        raise TypeError(f"physics must be a dict of parameter names to values or (low, high) ranges, not {type(physics).__name__}")
    parts = []
    for name, value in physics.items():
        # A name is one parameter: "masspole=0.1,length" would smuggle a second one into the option's text.
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"physics name {name!r} is not a parameter name; see surge.make's physics and docs/python.md")
        if isinstance(value, (tuple, list)) and len(value) == 2:
            parts.append(f"{name}={float(value[0])!r}:{float(value[1])!r}")
        elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            parts.append(f"{name}={float(value)!r}")
        else:
            raise TypeError(f"physics[{name!r}] = {value!r}: give a number or a (low, high) pair")
    return ",".join(parts)


def _single_spaces(engine):
    """The spaces Gymnasium defines for the task; generic boxes for a scenario Gymnasium lacks."""
    try:
        reference = gym.make(engine.gym_id)
        spaces = reference.observation_space, reference.action_space
        reference.close()
        return spaces
    except gym.error.Error:
        pass
    obs = gym.spaces.Box(-np.inf, np.inf, (engine.obs_dim,), np.float32)
    if engine.discrete:
        return obs, gym.spaces.Discrete(engine.num_actions)
    low, high = np.array(engine.action_low, np.float32), np.array(engine.action_high, np.float32)
    return obs, gym.spaces.Box(low, high, (engine.action_dim,), np.float32)


class SurgeVectorEnv(VectorEnv):
    """N environments stepped together by Surge, with Gymnasium 1.x same-step auto-reset.

    step() returns views of Surge's own buffers (no copy): the next step() overwrites them, and
    reset() too. Pass copy=True to get arrays of your own. See docs/python.md.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, id, num_envs=1, device="cpu", seed=None, physics=None, array=None, copy=False,
                 episode_statistics=True):
        seed = int.from_bytes(os.urandom(8), "little") >> 1 if seed is None else _seed_value(seed)
        if array is not None and array not in ARRAY_KINDS:
            raise ValueError(f"unknown array kind {array!r}: use one of {', '.join(ARRAY_KINDS)}")
        self._engine = _surge.VectorEngine(str(id), int(num_envs), str(device), int(seed), _physics_text(physics))
        device = self._engine.device
        if array is None:
            array = "numpy" if device == "cpu" else "torch"
        if array == "numpy" and device != "cpu":
            self._engine.close()
            raise ValueError(f"array='numpy' cannot view memory on {device}: use array='torch' or 'jax'")
        self._arrays = array_kind(array)
        self._copy = bool(copy)
        self._episode_statistics = bool(episode_statistics)
        self.num_envs = self._engine.num_envs
        self.device = self._engine.device
        self.render_mode = None
        self.single_observation_space, self.single_action_space = _single_spaces(self._engine)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._exported = self._engine.outputs()
        self._views = self._wrap_outputs()

    def _wrap_outputs(self):
        return {name: self._arrays.wrap(self._exported[name]) for name in OUTPUTS}

    @property
    def scenario(self):
        return self._engine.scenario

    @property
    def buffer_pointers(self):
        """The address of each of Surge's output buffers, to check that arrays are views of them."""
        return {name: self._exported[name].data_pointer for name in OUTPUTS}

    def reset(self, *, seed=None, options=None):
        self._engine.reset(None if seed is None else _seed_value(seed))
        if seed is not None:
            self._np_random, self._np_random_seed = np.random.default_rng(seed), seed
        obs = self._arrays.wrap(self._exported["obs"]) if self._arrays.fresh_each_step else self._views["obs"]
        return (self._arrays.copy(obs) if self._copy else obs), {}

    def step(self, actions):
        try:
            any_ended = self._engine.step(actions)  # in place when the dtype and device are Surge's
        except (TypeError, BufferError, AttributeError, RuntimeError) as error:  # RuntimeError: torch's own
            any_ended = self._step_converted(actions, error)
        views = self._wrap_outputs() if self._arrays.fresh_each_step else self._views
        if self._copy:
            views = {name: self._arrays.copy(array) for name, array in views.items()}
        infos = {}
        if any_ended:  # 1 or 0 on the CPU; -1 (unknown, so infos are given) on CUDA
            ended = views["ended"]
            infos = {
                "final_obs": views["final_obs"],
                "_final_obs": ended,
                "final_info": {},
                "_final_info": ended,
            }
            if self._episode_statistics:
                infos["episode"] = {"r": views["episode_return"], "l": views["episode_length"], "_r": ended, "_l": ended}
                infos["_episode"] = ended
        return views["obs"], views["reward"], views["terminated"], views["truncated"], infos

    def _step_converted(self, actions, error):
        """Actions of another dtype of the same kind (int64 indices, float64 torques), a read-only
        array or a list: converted once, then stepped."""
        engine = self._engine
        if isinstance(error, TypeError) and "dtype differs" not in str(error):
            raise error
        converted = self._arrays.convert(actions, engine.discrete)
        if converted is None:
            expected = "integer" if engine.discrete else "integer or floating-point"
            mismatch = error if isinstance(error, TypeError) else "actions"
            raise TypeError(f"{mismatch}: {engine.scenario} takes {expected} actions") from None
        return engine.step(converted)

    def get_state(self):
        """Every environment's state as host NumPy copies: physics state, parameters, counters, RNG offsets."""
        state = {}
        for name, exported in self._engine.state().items():
            if self.device == "cpu":
                state[name] = np.from_dlpack(exported).copy()
            else:
                import torch

                state[name] = torch.utils.dlpack.from_dlpack(exported).cpu().numpy()
        return state

    def set_state(self, state):
        """Writes back (some of) what get_state returned; the observations follow the new states."""
        current = self.get_state()
        for name, values in state.items():
            if name not in current:
                raise ValueError(f"unknown state {name!r}: the states are {', '.join(current)}")
            array = np.ascontiguousarray(values, dtype=current[name].dtype)
            if array.shape != current[name].shape:
                raise ValueError(f"state {name!r} has shape {list(array.shape)} where {list(current[name].shape)} "
                                 "is expected; give it as get_state returned it")
            self._engine.write_state(name, array)
        self._engine.observe()

    def close_extras(self, **kwargs):
        # Surge's buffers are freed once no array handed out still views them: the env's own references go.
        self._engine.close()
        self._exported, self._views = {}, {}

    def __repr__(self):
        return f"SurgeVectorEnv({self.scenario}, num_envs={self.num_envs}, device={self.device})"


def make(id, num_envs=1, device="cpu", seed=None, physics=None, array=None, copy=False, episode_statistics=True):
    """N environments of a Gymnasium id ("CartPole-v1") or a Surge scenario ("cartpole"), as a VectorEnv.

    episode_statistics=False leaves infos["episode"] out, for gymnasium.wrappers.vector.RecordEpisodeStatistics
    (which refuses a key already there) to add its own."""
    return SurgeVectorEnv(id, num_envs=num_envs, device=device, seed=seed, physics=physics, array=array, copy=copy,
                          episode_statistics=episode_statistics)
