#!/usr/bin/env python3
"""interop/python/examples/ppo_torch.py solves CartPole-v1 on the CPU within a step budget.

Runs the example as a user would (PYTHONPATH holding the package this build made): seed 1 with a
budget of 300 000 steps must print its progress lines, then `solved` with a mean return of the last
100 episodes of at least 475, at a step within the budget, and exit 0. A budget far too small must
end with `not solved` and exit 3, so the solved verdict is the example's own test, not a given.
Exits 77 (skipped) where torch or gymnasium cannot be imported.
"""
import re
import subprocess
import sys

example = sys.argv[1]
BUDGET = 300_000

try:
    import gymnasium  # noqa: F401
    import torch  # noqa: F401
except ImportError as error:
    print(f"skipped: {error}")
    sys.exit(77)


def run(*args):
    result = subprocess.run([sys.executable, example, "--device", "cpu", *args], capture_output=True, text=True)
    assert result.returncode in (0, 3), (result.returncode, result.stderr[-2000:])
    return result


solved = run("--seed", "1", "--total-timesteps", str(BUDGET))
print(solved.stdout.splitlines()[-1])
assert solved.returncode == 0, solved.stdout[-2000:]
progress = re.findall(r"^global_step=(\d+) episodes=(\d+) return_last100=(\S+) sps=\d+ time=\S+s$", solved.stdout, re.M)
assert len(progress) >= 10, solved.stdout[-2000:]
steps = [int(p[0]) for p in progress]
assert steps == sorted(steps) and len(set(steps)) == len(steps), steps
last = re.search(r"^solved: return_last100=(\S+) >= 475 at global_step=(\d+) in \S+s$", solved.stdout, re.M)
assert last, solved.stdout[-2000:]
assert float(last.group(1)) >= 475.0 and int(progress[-1][1]) >= 100, (last.group(0), progress[-1])
assert int(last.group(2)) == steps[-1] <= BUDGET, (last.group(0), steps[-1])

short = run("--seed", "1", "--total-timesteps", "4096")
assert short.returncode == 3, short.stdout[-2000:]
assert re.search(r"^not solved: return_last100=\S+ < 475 after 4096 steps$", short.stdout, re.M), short.stdout
print("ppo_torch: solved within the budget; a short budget ends unsolved with exit 3")
