"""surge.train runs the C++ learner and returns its metrics and folder; surge.Policy acts as the
checkpoint's actor does: its greedy episodes from the same starts match `surge eval`'s."""
import numpy as np
import pytest

import surge


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "cartpole"
    metrics, out = surge.train("cartpole", device="cpu", out=folder, seed=3, total_steps=20000, num_envs=16,
                               num_steps=16)
    return metrics, out


def test_train_returns_metrics_and_folder(short_run):
    metrics, folder = short_run
    assert len(metrics) == 20000 // (16 * 16)
    assert [row["iteration"] for row in metrics] == list(range(1, len(metrics) + 1))
    assert metrics[-1]["global_step"] == len(metrics) * 256
    assert {"return_last100", "policy_loss", "sps"} <= set(metrics[0])
    assert (folder / "checkpoint.h5").exists() and (folder / "config.toml").exists()


def test_train_refuses_bad_config_with_the_programs_message(tmp_path):
    with pytest.raises(ValueError, match="surge train: .*no_such_key"):
        surge.train("cartpole", out=tmp_path / "bad", no_such_key=1)
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        surge.train("nope", out=tmp_path / "bad2")


def test_policy_plays_as_surge_eval_does(short_run):
    pytest.importorskip("h5py")
    _, folder = short_run
    policy = surge.Policy.load(folder / "checkpoint.h5")
    episodes, seed = 32, 12345
    reference = surge.eval(folder / "checkpoint.h5", episodes=episodes, seed=seed)
    env = surge.make("cartpole", num_envs=episodes, seed=seed)
    obs, _ = env.reset()
    returns = np.zeros(episodes)
    finished = np.zeros(episodes, bool)
    while not finished.all():
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
        returns += np.where(finished, 0.0, reward)
        finished |= terminated | truncated
    assert returns.mean() > 60  # far beyond a random policy's 22: the actor is read the right way round
    assert returns.mean() == pytest.approx(reference["mean"], rel=1e-3)  # the program prints 4 digits
    sampled = policy.act(obs, greedy=False, rng=np.random.default_rng(0))
    assert sampled.dtype == np.int32 and set(np.unique(sampled)) <= {0, 1}
