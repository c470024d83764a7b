"""PPO in PyTorch on Surge's vector environments, in one file.

The layout follows CleanRL's single-file PPO: arguments, an actor and a critic MLP, rollout storage,
GAE, minibatch epochs. The environments are surge.make(..., array="torch"): observations, rewards
and flags arrive as torch tensors that are views of Surge's buffers, on the device Surge steps on.
With --device cuda nothing in the training loop leaves the GPU except two numbers per iteration (the
mean return and the episode count, read together for the progress line and the stop test).

    python interop/python/examples/ppo_torch.py --seed 1 --device cpu

Exits 0 once the mean return of the last 100 episodes reaches --target-return, 3 when the step
budget (--total-timesteps) runs out first.
"""
import argparse
import dataclasses
import os
import sys
import time

# Small batches: one CPU thread each for Surge's step and for torch is fastest, most of all on busy
# cores, where OpenMP threads wait on each other at every step. Set before both libraries load;
# OMP_NUM_THREADS in the environment overrides it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import surge


@dataclasses.dataclass
class Args:
    env_id: str = "CartPole-v1"
    seed: int = 1
    device: str = "cpu"  # cpu or cuda: where Surge steps and where the networks live
    total_timesteps: int = 500_000  # the budget; the learning rate anneals to 0 over it
    num_envs: int = 16
    num_steps: int = 64  # steps per environment per rollout
    learning_rate: float = 2.5e-3
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_return: float = 475.0  # stop once the mean of the last 100 episodes reaches it


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in dataclasses.fields(Args):
        flag = "--" + field.name.replace("_", "-")
        if isinstance(field.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=field.default)
        else:
            parser.add_argument(flag, type=type(field.default), default=field.default)
    return Args(**vars(parser.parse_args()))


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


def mlp(inputs, outputs, last_std):
    return nn.Sequential(
        layer_init(nn.Linear(inputs, 64)),
        nn.Tanh(),
        layer_init(nn.Linear(64, 64)),
        nn.Tanh(),
        layer_init(nn.Linear(64, outputs), std=last_std),
    )


class Agent(nn.Module):
    def __init__(self, obs_dim, num_actions):
        super().__init__()
        self.critic = mlp(obs_dim, 1, last_std=1.0)
        self.actor = mlp(obs_dim, num_actions, last_std=0.01)

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x), validate_args=False)  # checks would sync
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


class ReturnWindow:
    """The returns of the last `size` episodes in a ring on the device: no host sync per step."""

    def __init__(self, size, device):
        self.size = size
        self.ring = torch.zeros(size + 1, device=device)  # slot `size` takes the writes to discard
        self.count = torch.zeros((), dtype=torch.int64, device=device)

    def add(self, returns, ended):
        rank = torch.cumsum(ended.to(torch.int64), 0)  # 1..k over the k episodes that ended
        keep = ended & (rank > rank[-1] - self.size)  # at most `size` of them, so no slot twice
        slots = torch.where(keep, (self.count + rank - 1) % self.size, self.size)
        self.ring.scatter_(0, slots, returns.to(self.ring.dtype))
        self.count += rank[-1]

    def mean(self):
        """(mean of the window, episodes seen), read on the host in one transfer: the loop's one sync."""
        filled = torch.clamp(self.count, 1, self.size)
        both = torch.stack([self.ring[: self.size].sum() / filled, self.count.to(self.ring.dtype)])
        mean, count = both.tolist()
        return (mean if count else float("nan")), int(count)


def main():
    args = parse_args()
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    envs = surge.make(args.env_id, num_envs=args.num_envs, device=args.device, seed=args.seed, array="torch")
    obs_dim = envs.single_observation_space.shape[0]
    agent = Agent(obs_dim, int(envs.single_action_space.n)).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage, on the device.
    obs = torch.zeros((args.num_steps, args.num_envs, obs_dim), device=device)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.int64, device=device)
    logprobs = torch.zeros((args.num_steps, args.num_envs), device=device)
    rewards = torch.zeros((args.num_steps, args.num_envs), device=device)
    dones = torch.zeros((args.num_steps, args.num_envs), device=device)
    values = torch.zeros((args.num_steps, args.num_envs), device=device)
    window = ReturnWindow(100, device)

    global_step = 0
    start = time.time()
    next_obs, _ = envs.reset(seed=args.seed)  # a view of Surge's buffer: step() overwrites it
    next_done = torch.zeros(args.num_envs, device=device)
    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs  # copied out before step() overwrites it
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(obs[step])
            values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs, reward, terminated, truncated, infos = envs.step(action.to(torch.int32))
            reward = reward.clone()
            # Same-step auto-reset: where an episode ended, next_obs already starts the next one and
            # the last observation is in infos["final_obs"]. A truncated episode did not end in the
            # task, so its last reward is bootstrapped from the critic's value of that observation.
            if "final_obs" in infos:
                cut = truncated & ~terminated & infos["_final_obs"]
                with torch.no_grad():
                    final_values = agent.get_value(infos["final_obs"]).flatten()
                reward += torch.where(cut, args.gamma * final_values, torch.zeros_like(final_values))
            if "episode" in infos:
                window.add(infos["episode"]["r"], infos["_episode"])
            rewards[step] = reward
            next_done = (terminated | truncated).to(torch.float32)

        # Generalised advantage estimation, backwards over the rollout.
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1, obs_dim))
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)

        for epoch in range(args.update_epochs):
            order = torch.randperm(batch_size, device=device)
            for begin in range(0, batch_size, minibatch_size):
                mb = order[begin : begin + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_advantages = b_advantages[mb]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                # The clipped surrogate objective, written as a loss.
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # The value loss, clipped around the rollout's values.
                newvalue = newvalue.flatten()
                v_unclipped = (newvalue - b_returns[mb]) ** 2
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - b_returns[mb]) ** 2).mean()

                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        mean_return, episodes = window.mean()
        elapsed = time.time() - start
        print(
            f"global_step={global_step} episodes={episodes} return_last100={mean_return:.1f} "
            f"sps={int(global_step / elapsed)} time={elapsed:.1f}s",
            flush=True,
        )
        if episodes >= window.size and mean_return >= args.target_return:
            print(f"solved: return_last100={mean_return:.1f} >= {args.target_return:g} "
                  f"at global_step={global_step} in {elapsed:.1f}s", flush=True)
            envs.close()
            return 0

    envs.close()
    print(f"not solved: return_last100={mean_return:.1f} < {args.target_return:g} "
          f"after {global_step} steps", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main())
