"""python -m surge.bench: what env.step costs from Python, beside the surge program and Gymnasium.

  * N = 16: microseconds per env.step call (the per-call overhead: Python, the binding, DLPack).
  * N = 4096 and 65536: env-steps per second of env.step with fixed actions, against
    `surge bench env --mode step` at the same N and Gymnasium's CartPoleVectorEnv (and EnvPool's
    CartPole-v1 where it is installed), measured in turns within this one run; each figure is the
    median over the rounds.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

from . import make
from ._program import program


def per_call_us(step, actions, calls):
    start = time.perf_counter()
    for _ in range(calls):
        step(actions)
    return (time.perf_counter() - start) / calls * 1e6


def surge_python(num_envs, steps):
    env = make("CartPole-v1", num_envs=num_envs, device="cpu", seed=1)
    env.reset(seed=1)
    actions = np.random.default_rng(0).integers(0, 2, num_envs).astype(np.int32)
    per_call_us(env.step, actions, 3)  # warm up
    rate = num_envs * steps / (per_call_us(env.step, actions, steps) * steps / 1e6)
    env.close()
    return rate


def surge_program(num_envs, steps):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.json")
        subprocess.run([str(program()), "bench", "env", "--scenario", "cartpole", "--device", "cpu", "--mode", "step",
                        "--num-envs", str(num_envs), "--steps", str(steps), "--repeats", "1", "--json", path],
                       check=True, capture_output=True)
        with open(path) as f:
            return json.load(f)["env_steps_per_s"]


def gymnasium_vector(num_envs, steps):
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = CartPoleVectorEnv(num_envs=num_envs)
    env.reset(seed=1)
    actions = np.random.default_rng(0).integers(0, 2, num_envs)
    per_call_us(env.step, actions, 3)
    rate = num_envs * steps / (per_call_us(env.step, actions, steps) * steps / 1e6)
    env.close()
    return rate


def envpool_vector(num_envs, steps):
    import envpool

    threads = int(os.environ.get("OMP_NUM_THREADS", "0"))  # 0: EnvPool's default, one per core
    env = envpool.make_gymnasium("CartPole-v1", num_envs=num_envs, batch_size=num_envs, seed=1, num_threads=threads)
    env.reset()
    actions = np.random.default_rng(0).integers(0, 2, num_envs).astype(np.int32)
    per_call_us(env.step, actions, 3)
    rate = num_envs * steps / (per_call_us(env.step, actions, steps) * steps / 1e6)
    env.close()
    return rate


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m surge.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[4096, 65536], help="sizes for env-steps/s")
    parser.add_argument("--steps", type=int, default=64, help="env.step calls per timed round at each size")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; medians are reported")
    parser.add_argument("--small-calls", type=int, default=20000, help="env.step calls per round at N = 16")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)

    contenders = {"surge (python)": surge_python, "surge bench env --mode step": surge_program,
                  "gymnasium CartPoleVectorEnv": gymnasium_vector}
    try:
        import envpool  # noqa: F401

        contenders["envpool CartPole-v1"] = envpool_vector
    except ImportError:
        pass

    small = make("CartPole-v1", num_envs=16, device="cpu", seed=1)
    small.reset(seed=1)
    small_actions = np.zeros(16, np.int32)
    per_call_us(small.step, small_actions, 1000)
    small_us = statistics.median(per_call_us(small.step, small_actions, args.small_calls) for _ in range(args.rounds))
    print(f"N = 16: env.step costs {small_us:.2f} us per call (median of {args.rounds} rounds of {args.small_calls})")

    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    results = {"load_average": os.getloadavg(), "omp_num_threads": threads, "n16_us_per_step": small_us, "rates": {}}
    for num_envs in args.num_envs:
        runs = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, measure in contenders.items():
                runs[name].append(measure(num_envs, args.steps))
        medians = {name: statistics.median(values) for name, values in runs.items()}
        results["rates"][num_envs] = medians
        reference = medians["surge bench env --mode step"]
        for name, rate in medians.items():
            print(f"N = {num_envs}: {name:30s} {rate / 1e6:8.2f} M env-steps/s  ({rate / reference:.0%} of the program)")
    results["load_average_after"] = os.getloadavg()
    print(f"OMP_NUM_THREADS={threads} (Surge's CPU threads, in this process and the program)")
    print(f"load average before {results['load_average'][0]:.2f}, after {results['load_average_after'][0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
