#!/usr/bin/env python3
"""Reference throughput of Gymnasium's numpy-vectorised CartPole (CartPoleVectorEnv) on this machine,
measured the way `surge bench env` measures Surge: random actions, median env-steps/s over repeats.

    python3 tools/bench_gymnasium.py --num-envs 65536 --steps 128 --repeats 5
"""
import argparse
import json
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, default=65536)
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="also write the result as JSON")
    args = parser.parse_args()
    try:
        import numpy as np
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
    except ImportError as error:
        print(f"bench_gymnasium: {error}; install with: python3 -m pip install gymnasium", file=sys.stderr)
        return 2

    env = CartPoleVectorEnv(num_envs=args.num_envs)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    actions = rng.integers(0, 2, size=(args.steps, args.num_envs))
    for t in range(min(args.steps, 8)):  # warm-up
        env.step(actions[t])
    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for t in range(args.steps):
            env.step(actions[t])
        rates.append(args.num_envs * args.steps / (time.perf_counter() - start))
    rate = statistics.median(rates)
    print(f"gymnasium CartPoleVectorEnv: {args.num_envs} envs x {args.steps} steps: {rate:.3g} env-steps/s (median of {args.repeats})")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"benchmark": "gymnasium-cartpole-vector", "num_envs": args.num_envs, "steps": args.steps,
                       "env_steps_per_s": rate, "env_steps_per_s_runs": rates}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
