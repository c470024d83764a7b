#!/usr/bin/env python3
"""`surge train --agents K --grid ...` through the real program (docs/agents.md).

usage: check_agents.py SURGE CASE

CASE is one of:
  solo     agent k of a batch of 3 equals `surge train --seed s_k` alone: every metrics.csv cell but
           wall_time_s and sps, config.toml, and the checkpoint's parameters, Adam moments and resume
           state, bit for bit
  grid     a grid's agents get exactly their values (config.toml, checkpoint, metrics.csv columns), a
           grid agent equals the run alone with --set of its values, [grid] in TOML, and surge plot
           drawing a grid point's seeds as a band
  refused  keys a grid may not vary, and other bad input: exit 2, one line, nothing written
  resume   stopped after some iterations and resumed (--resume DIR), every agent equals the whole run;
           after SIGINT every agent's checkpoint is there and the run resumes to the same end
  target   --target-return with --target-mode any and all: when the run stops, and the final table
  pause    with --target-return, each agent stops at its target: agent k equals `surge train --seed s_k
           --target-return R` alone to its last row (metrics.csv, checkpoint.h5, best.h5), and a run cut
           while some agents are paused resumes to the same end (paused agents stay paused)
  compare  tools/agents_vs_sequential.py: both sides run, alternating, the same steps to the target per
           agent and in all, and its JSON for train and bench; bad input exits 2 with one line

Every case runs in a fresh temporary folder. Without h5py the checkpoints are not compared (said on
stdout); everything else is.
"""
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tomllib

try:
    import h5py
    import numpy
except ImportError:  # the checkpoint comparisons are left out
    h5py = None

SURGE = None
SMALL = ["train", "--device", "cpu", "--scenario", "cartpole", "--total-steps", "7680"]  # 30 iterations of 16 x 16
VOLATILE = {"wall_time_s", "sps"}


def run(args, cwd, check_ok=True):
    result = subprocess.run([SURGE] + args, cwd=cwd, capture_output=True, text=True)
    if check_ok and result.returncode != 0:
        raise AssertionError(f"surge {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def agent_rows(run_dir, agent):
    return [r for r in rows(os.path.join(run_dir, "metrics.csv")) if r["agent"] == str(agent)]


def same_metrics(batch_rows, solo_rows, what):
    assert len(batch_rows) == len(solo_rows) and solo_rows, (what, len(batch_rows), len(solo_rows))
    for i, (b, s) in enumerate(zip(batch_rows, solo_rows)):
        for column, value in s.items():
            if column in VOLATILE:
                continue
            assert b[column] == value, f"{what}: row {i + 1}, {column}: {b[column]} in the batch, {value} alone"


def datasets(path):
    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return found


def same_checkpoints(a, b, what):
    if h5py is None:
        print(f"{what}: checkpoints not compared (no h5py)")
        return
    left, right = datasets(a), datasets(b)
    assert set(left) == set(right), (what, set(left) ^ set(right))
    compared = 0
    for name, value in left.items():
        if name == "resume/metrics":  # its wall times differ
            continue
        if isinstance(value, numpy.ndarray):
            assert value.dtype == right[name].dtype and value.shape == right[name].shape, (what, name)
            assert value.tobytes() == right[name].tobytes(), f"{what}: {name} differs"
        else:
            assert value == right[name], f"{what}: {name} differs"
        compared += name.startswith("parameters/")
    assert compared >= 6, (what, sorted(left))  # the actor's and critic's layers at least


def config_text(path):
    """config.toml without its header line, which names the device."""
    with open(path) as f:
        return "".join(line for line in f if not line.startswith("#"))


def case_solo(tmp):
    run(SMALL + ["--agents", "3", "--seed", "5", "--out", "batch"], tmp)
    assert len(rows(os.path.join(tmp, "batch", "metrics.csv"))) == 3 * 30
    for k in range(3):
        solo = f"solo{k}"
        run(SMALL + ["--seed", str(5 + k), "--out", solo], tmp)
        agent = os.path.join(tmp, "batch", "agents", str(k))
        same_metrics(agent_rows(os.path.join(tmp, "batch"), k), rows(os.path.join(tmp, solo, "metrics.csv")),
                     f"agent {k}")
        same_metrics(rows(os.path.join(agent, "metrics.csv")), rows(os.path.join(tmp, solo, "metrics.csv")),
                     f"agent {k}'s own metrics.csv")
        assert config_text(os.path.join(agent, "config.toml")) == config_text(os.path.join(tmp, solo, "config.toml"))
        same_checkpoints(os.path.join(agent, "checkpoint.h5"), os.path.join(tmp, solo, "checkpoint.h5"), f"agent {k}")
        assert os.path.isdir(os.path.join(tmp, "batch", "tb", f"agent_{k}")), k
    # Each agent's checkpoint is one `surge eval` reads.
    evaluated = run(["eval", "--device", "cpu", "--checkpoint", "batch/agents/2/checkpoint.h5", "--episodes", "4"], tmp)
    assert "4 episodes" in evaluated.stdout, evaluated.stdout


def case_grid(tmp):
    run(SMALL + ["--agents", "2", "--grid", "lr=1e-3,3e-3", "--grid", "ent_coef=0,0.01", "--out", "g"], tmp)
    expected = [(lr, ent, seed) for lr in ("1e-3", "3e-3") for ent in ("0", "0.01") for seed in (1, 2)]
    table = rows(os.path.join(tmp, "g", "metrics.csv"))
    assert len(table) == 8 * 30, len(table)
    for k, (lr, ent, seed) in enumerate(expected):
        with open(os.path.join(tmp, "g", "agents", str(k), "config.toml"), "rb") as f:
            config = tomllib.load(f)
        assert config["learning_rate"] == float(lr) and config["ent_coef"] == float(ent), (k, config)
        assert config["seed"] == seed and config["num_agents"] == 1, (k, config)
        mine = [r for r in table if r["agent"] == str(k)]
        assert {(r["grid.learning_rate"], r["grid.ent_coef"], r["seed"], r["grid_point"]) for r in mine} == {
            (lr, ent, str(seed), str(k // 2))
        }, (k, mine[0])
        assert float(mine[0]["learning_rate"]) == float(lr), (k, mine[0]["learning_rate"])  # annealed from it
        if h5py is not None:
            with h5py.File(os.path.join(tmp, "g", "agents", str(k), "checkpoint.h5"), "r") as f:
                text = f.attrs["config"]
                text = text.decode() if isinstance(text, bytes) else text
            saved = tomllib.loads(text)
            assert saved["learning_rate"] == float(lr) and saved["ent_coef"] == float(ent), (k, saved)
    # Agent 6 (lr 3e-3, ent_coef 0.01, seed 1) is that run alone.
    run(SMALL + ["--seed", "1", "--set", "learning_rate=3e-3", "--set", "ent_coef=0.01", "--out", "alone"], tmp)
    same_metrics(agent_rows(os.path.join(tmp, "g"), 6), rows(os.path.join(tmp, "alone", "metrics.csv")), "agent 6")
    same_checkpoints(os.path.join(tmp, "g", "agents", "6", "checkpoint.h5"),
                     os.path.join(tmp, "alone", "checkpoint.h5"), "agent 6")
    # surge plot of the run draws each grid point's seeds as one band, named by its values.
    plotted = run(["plot", "g", "--out", "g.svg"], tmp)
    assert "8 runs in 4 groups" in plotted.stderr + plotted.stdout, plotted.stderr
    with open(os.path.join(tmp, "g.svg")) as f:
        svg = f.read()
    assert svg.count("(mean of 2 seeds") == 4 and "ent_coef = 0.01, learning_rate = 0.003" in svg, svg[-2000:]
    summary = rows(os.path.join(tmp, "g", "agents_summary.csv"))
    assert [r["agent"] for r in summary] == [str(k) for k in range(8)], summary
    # A TOML [grid] table makes the agents --grid makes.
    plain = 'scenario = "cartpole"\ntotal_steps = 7680\nnum_envs = 16\nnum_steps = 16\n'
    with open(os.path.join(tmp, "plain.toml"), "w") as f:
        f.write(plain)
    with open(os.path.join(tmp, "grid.toml"), "w") as f:
        f.write(plain + 'num_agents = 2\n[grid]\nlearning_rate = [1e-3, 3e-3]\nent_coef = [0, 0.01]\n')
    run(["train", "--device", "cpu", "--config", "grid.toml", "--out", "t"], tmp)
    run(["train", "--device", "cpu", "--config", "plain.toml", "--agents", "2", "--grid", "learning_rate=1e-3,3e-3",
         "--grid", "ent_coef=0,0.01", "--out", "t2"], tmp)
    for k in range(8):
        same_metrics(agent_rows(os.path.join(tmp, "t"), k), agent_rows(os.path.join(tmp, "t2"), k), f"[grid] agent {k}")
    # A --grid of a key the file's [grid] has replaces its values.
    run(["train", "--device", "cpu", "--config", "grid.toml", "--grid", "ent_coef=0.02", "--out", "t3"], tmp)
    assert {r["grid.ent_coef"] for r in rows(os.path.join(tmp, "t3", "metrics.csv"))} == {"0.02"}
    assert len(rows(os.path.join(tmp, "t3", "agents.csv"))) == 4


def refused(result, *words):
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("surge train: "), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def case_refused(tmp):
    for key in ("num_envs=4,8", "hidden=[8],[16]", "num_steps=8,16", "seed=1,2", "normalize_obs=true,false"):
        refused(run(SMALL + ["--grid", key, "--out", "x"], tmp, False), key.split("=")[0], "a grid may vary")
    refused(run(SMALL + ["--grid", "learning_rate=1e-3,-1", "--out", "x"], tmp, False), "learning_rate")
    refused(run(SMALL + ["--grid", "lr", "--out", "x"], tmp, False), "key=v1,v2")
    refused(run(SMALL + ["--agents", "0", "--out", "x"], tmp, False), "--agents")
    refused(run(SMALL + ["--agents", "2", "--seeds", "1-2", "--out", "x"], tmp, False), "--seeds")
    refused(run(SMALL + ["--agents", "2", "--log-rollouts", "a.h5", "--out", "x"], tmp, False), "--log-rollouts")
    refused(run(SMALL + ["--agents", "2", "--target-mode", "most", "--out", "x"], tmp, False), "--target-mode 'most'")
    refused(run(SMALL + ["--target-mode", "any", "--out", "x"], tmp, False), "--target-mode", "--agents")
    with open(os.path.join(tmp, "bad.toml"), "w") as f:
        f.write('scenario = "cartpole"\n[grid]\nnum_envs = [4, 8]\n')
    refused(run(["train", "--device", "cpu", "--config", "bad.toml", "--out", "x"], tmp, False), "num_envs")
    assert os.listdir(tmp) == ["bad.toml"], os.listdir(tmp)
    # A total that does not fit is refused by the dry run (exit 2), and by the run before it writes.
    huge = ["--agents", "65536", "--num-envs", "65536", "--total-steps", str(1 << 30)]
    plan = run(SMALL[:5] + huge + ["--dry-run"], tmp, False)
    assert plan.returncode == 2 and "all 65536 agents: " in plan.stdout and "does not fit" in plan.stdout, plan.stdout
    refused(run(SMALL[:5] + huge + ["--out", "x"], tmp, False), "does not fit")
    assert os.listdir(tmp) == ["bad.toml"], os.listdir(tmp)


def case_resume(tmp):
    whole = SMALL + ["--agents", "3", "--grid", "clip_coef=0.1,0.3"]
    run(whole + ["--out", "whole"], tmp)
    stopped = run(whole + ["--out", "part", "--stop-after", "11"], tmp)
    assert "surge train --resume part" in stopped.stderr, stopped.stderr
    assert len(rows(os.path.join(tmp, "part", "metrics.csv"))) == 6 * 11
    run(["train", "--resume", "part"], tmp)
    for k in range(6):
        same_metrics(agent_rows(os.path.join(tmp, "part"), k), agent_rows(os.path.join(tmp, "whole"), k),
                     f"resumed agent {k}")
        same_checkpoints(os.path.join(tmp, "part", "agents", str(k), "checkpoint.h5"),
                         os.path.join(tmp, "whole", "agents", str(k), "checkpoint.h5"), f"resumed agent {k}")
    refused(run(["train", "--resume", "part", "--agents", "2"], tmp, False), "--agents")

    # SIGINT: the run stops at an iteration boundary with every agent's checkpoint, and goes on from there.
    interrupt(tmp, SMALL[:5] + ["--agents", "3", "--total-steps", "2560000", "--out", "cut"], "cut", 3)


def interrupt(tmp, args, out, agents):
    """Runs `surge ARGS` (a long run of `agents` agents into `out`), sends SIGINT once it has started, and
    checks that it stopped at an iteration boundary with every agent's rows and checkpoint; returns the
    iterations done."""
    process = subprocess.Popen([SURGE] + args, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    last = os.path.join(tmp, out, "agents", str(agents - 1), "metrics.csv")
    while not os.path.exists(last) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGINT, (process.returncode, err)
    assert "stopped by SIGINT" in err and f"--resume {out}" in err, err
    done = len(agent_rows(os.path.join(tmp, out), 0))
    assert done >= 1 and all(len(agent_rows(os.path.join(tmp, out), k)) == done for k in range(agents)), done
    for k in range(agents):
        assert os.path.isfile(os.path.join(tmp, out, "agents", str(k), "checkpoint.h5")), k
    return done

def case_target(tmp):
    finished = {}
    for mode in ("any", "all"):
        result = run(SMALL[:5] + ["--agents", "4", "--total-steps", "256000", "--target-return", "60",
                                  "--target-mode", mode, "--out", mode], tmp)
        assert f"(--target-mode {mode}) met" in result.stdout, result.stdout
        summary = rows(os.path.join(tmp, mode, "agents_summary.csv"))
        reached = [r for r in summary if r["threshold_step"]]
        assert len(reached) == (4 if mode == "all" else len(reached)) and reached, summary
        finished[mode] = max(len(agent_rows(os.path.join(tmp, mode), k)) for k in range(4))
        last = [float(r["threshold_step"]) for r in reached]
        assert max(last) <= finished[mode] * 256, (last, finished[mode])
        for r in reached:  # an agent stops at the iteration that reached the target
            assert len(agent_rows(os.path.join(tmp, mode), r["agent"])) * 256 == float(r["threshold_step"]), r
        assert "mean ± std" in result.stdout, result.stdout
    # The agents are the same in both runs: "all" waits for the slowest, "any" stops at the fastest.
    assert finished["any"] < finished["all"], finished
    slowest = max(float(r["threshold_step"]) for r in rows(os.path.join(tmp, "all", "agents_summary.csv")))
    assert finished["all"] * 256 == slowest, (finished, slowest)


def case_pause(tmp):
    # Agents 3 seeds apart reach 60 at different iterations; each stops at its own (eval every 8 iterations,
    # so best.h5 is written too).
    common = SMALL[:5] + ["--total-steps", "256000", "--target-return", "60", "--set", "eval_every=8",
                          "--set", "eval_episodes=2"]
    run(common + ["--agents", "4", "--seed", "3", "--out", "batch"], tmp)
    summary = rows(os.path.join(tmp, "batch", "agents_summary.csv"))
    lengths = [len(agent_rows(os.path.join(tmp, "batch"), k)) for k in range(4)]
    assert len(set(lengths)) > 1, lengths  # they did stop at different iterations
    for k in range(4):
        solo = f"solo{k}"
        run(common + ["--seed", str(3 + k), "--out", solo], tmp)
        agent = os.path.join(tmp, "batch", "agents", str(k))
        assert lengths[k] * 256 == float(summary[k]["threshold_step"]), (k, lengths, summary[k])
        same_metrics(agent_rows(os.path.join(tmp, "batch"), k), rows(os.path.join(tmp, solo, "metrics.csv")),
                     f"paused agent {k}")
        same_metrics(rows(os.path.join(agent, "metrics.csv")), rows(os.path.join(tmp, solo, "metrics.csv")),
                     f"paused agent {k}'s own metrics.csv")
        for name in ("checkpoint.h5", "best.h5"):
            assert os.path.isfile(os.path.join(tmp, solo, name)) and os.path.isfile(os.path.join(agent, name)), name
            same_checkpoints(os.path.join(agent, name), os.path.join(tmp, solo, name), f"paused agent {k} {name}")
    # Cut after the first agent has stopped and before the last has: the resumed run keeps the stopped
    # agents as they are and ends where the whole run ends.
    cut = (min(lengths) + max(lengths)) // 2
    stopped = run(common + ["--agents", "4", "--seed", "3", "--out", "part", "--stop-after", str(cut)], tmp)
    assert "--resume part" in stopped.stderr, stopped.stderr
    resumed = run(["train", "--resume", "part", "--target-return", "60"], tmp)
    assert "already at the target" in resumed.stderr, resumed.stderr
    for k in range(4):
        same_metrics(agent_rows(os.path.join(tmp, "part"), k), agent_rows(os.path.join(tmp, "batch"), k),
                     f"resumed paused agent {k}")
        same_checkpoints(os.path.join(tmp, "part", "agents", str(k), "checkpoint.h5"),
                         os.path.join(tmp, "batch", "agents", str(k), "checkpoint.h5"), f"resumed paused agent {k}")


def case_compare(tmp):
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools",
                        "agents_vs_sequential.py")
    common = [sys.executable, tool, "--surge", SURGE, "--rounds", "2", "--agents", "3"]
    subprocess.run(common + ["train", "--target-return", "40", "--json", "t.json"], cwd=tmp, check=True,
                   capture_output=True)
    with open(os.path.join(tmp, "t.json")) as f:
        report = json.load(f)
    assert report["same_steps_to_target"], report
    assert [r["order"] for r in report["rounds_detail"]] == [["agents", "sequential"], ["sequential", "agents"]]
    together, alone = report["together"], report["one_after_another"]
    assert together["env_steps"] == alone["env_steps"] > 0, report
    assert all(r["agents"]["steps_to_target"] and all(r["agents"]["steps_to_target"])
               for r in report["rounds_detail"]), report
    assert report["wall_ratio"] > 0 and report["load_average"]["max"] >= 0, report
    subprocess.run(common + ["bench", "--config", "4x16", "--repeats", "1", "--iterations", "2", "--json", "b.json"],
                   cwd=tmp, check=True, capture_output=True)
    with open(os.path.join(tmp, "b.json")) as f:
        bench = json.load(f)
    assert bench["iterations"] == 2, bench
    [entry] = bench["configs"]
    assert (entry["num_envs"], entry["num_steps"], entry["agents"]) == (4, 16, 3), entry
    assert len(entry["batch_runs"]) == len(entry["one_runs"]) == 2 and entry["ratio"] > 0, entry
    assert all(entry[f"{side}_{key}"] > 0 for side in ("batch", "one") for key in ("cpu_us_per_env_step", "cores_busy"))
    bad = subprocess.run(common + ["train", "--agents", "0"], cwd=tmp, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("agents_vs_sequential: --agents 0"), bad.stderr
    assert len(bad.stderr.splitlines()) == 1, bad.stderr


def main():
    global SURGE
    SURGE = os.path.abspath(sys.argv[1])
    case = sys.argv[2]
    cases = {"solo": case_solo, "grid": case_grid, "refused": case_refused, "resume": case_resume,
             "target": case_target, "pause": case_pause, "compare": case_compare}
    with tempfile.TemporaryDirectory() as tmp:
        cases[case](tmp)
    print(f"check_agents {case}: ok")


if __name__ == "__main__":
    main()
