#!/usr/bin/env python3
"""`surge train --agents K --learner batched` through the real program (docs/agents.md).

usage: check_agents_batched.py SURGE CASE

With cpu_fused_mlp = false (the batched learner's GEMM path, which a run alone then takes too):
  solo     agent k of 3, and an agent of a grid, equal `surge train --seed s_k` alone: every metrics.csv
           cell but wall_time_s and sps, config.toml, the checkpoint's parameters, Adam moments and resume
           state, bit for bit; `surge eval` reads an agent's checkpoint
  resume   stopped (--stop-after) and resumed (--resume DIR --learner batched), every agent equals the
           whole run; the separate learners resume a batched run to the same end; after SIGINT every
           agent's checkpoint is there and the run goes on from it; a later agent's checkpoint sized for
           another run is refused (one line) by either learner before any agent's file is rewritten
  pause    with --target-return (and eval_every), each agent equals its run alone with the target to its
           last row (metrics.csv, checkpoint.h5, best.h5); --target-mode any ends where the separate
           learners end; a run cut while some agents are paused resumes to the same end
  refused  --learner's bad values, batched where the batched learner does not cover the config, --learner
           without agents: exit 2, one line, nothing written; the dry run lists the batched plan

Every case runs in a fresh temporary folder; the comparisons are check_agents.py's.
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_agents as ca  # noqa: E402

GEMM = ["--set", "cpu_fused_mlp=false"]
SMALL = ca.SMALL + GEMM
BATCHED = ["--learner", "batched"]


def same_agent(run_dir, k, solo, what):
    agent = os.path.join(run_dir, "agents", str(k))
    ca.same_metrics(ca.agent_rows(run_dir, k), ca.rows(os.path.join(solo, "metrics.csv")), what)
    ca.same_metrics(ca.rows(os.path.join(agent, "metrics.csv")), ca.rows(os.path.join(solo, "metrics.csv")),
                    f"{what}'s own metrics.csv")
    assert ca.config_text(os.path.join(agent, "config.toml")) == ca.config_text(os.path.join(solo, "config.toml"))
    ca.same_checkpoints(os.path.join(agent, "checkpoint.h5"), os.path.join(solo, "checkpoint.h5"), what)


def case_solo(tmp):
    started = ca.run(SMALL + BATCHED + ["--agents", "3", "--seed", "5", "--out", "batch"], tmp)
    assert "one batched learner" in started.stderr, started.stderr
    assert len(ca.rows(os.path.join(tmp, "batch", "metrics.csv"))) == 3 * 30
    for k in range(3):
        ca.run(SMALL + ["--seed", str(5 + k), "--out", f"solo{k}"], tmp)
        same_agent(os.path.join(tmp, "batch"), k, os.path.join(tmp, f"solo{k}"), f"agent {k}")
        assert os.path.isdir(os.path.join(tmp, "batch", "tb", f"agent_{k}")), k
    for name in ("agents.csv", "agents_summary.csv"):
        assert len(ca.rows(os.path.join(tmp, "batch", name))) == 3, name
    # The comparison can fail: agent 1 is not agent 0's run alone.
    try:
        ca.same_metrics(ca.agent_rows(os.path.join(tmp, "batch"), 1), ca.rows(os.path.join(tmp, "solo0", "metrics.csv")),
                        "agent 1 against agent 0's run")
    except AssertionError:
        pass
    else:
        raise AssertionError("agent 1 equals agent 0's run alone")
    evaluated = ca.run(["eval", "--device", "cpu", "--checkpoint", "batch/agents/2/checkpoint.h5", "--episodes", "4"],
                       tmp)
    assert "4 episodes" in evaluated.stdout, evaluated.stdout
    # Pendulum: a Gaussian policy with observation and reward normalisation, evaluated every 2 iterations
    # (best.h5 too): each agent's metrics and checkpoints (the statistics among them) are its run alone's.
    pendulum = ["train", "--device", "cpu", "--scenario", "pendulum", "--num-envs", "4", "--num-steps", "32",
                "--total-steps", "768", "--set", "normalize_obs=true", "--set", "normalize_reward=true",
                "--set", "eval_every=2", "--set", "eval_episodes=2"] + GEMM
    ca.run(pendulum + BATCHED + ["--agents", "2", "--seed", "3", "--out", "pend"], tmp)
    for k in range(2):
        ca.run(pendulum + ["--seed", str(3 + k), "--out", f"pend{k}"], tmp)
        same_agent(os.path.join(tmp, "pend"), k, os.path.join(tmp, f"pend{k}"), f"Pendulum agent {k}")
        ca.same_checkpoints(os.path.join(tmp, "pend", "agents", str(k), "best.h5"),
                            os.path.join(tmp, f"pend{k}", "best.h5"), f"Pendulum agent {k}'s best.h5")
    # A grid: agent 3 (lr 3e-3, ent_coef 0.01, seed 1) is that run alone.
    ca.run(SMALL + BATCHED + ["--grid", "lr=1e-3,3e-3", "--grid", "ent_coef=0,0.01", "--out", "g"], tmp)
    ca.run(SMALL + ["--seed", "1", "--set", "learning_rate=3e-3", "--set", "ent_coef=0.01", "--out", "alone"], tmp)
    same_agent(os.path.join(tmp, "g"), 3, os.path.join(tmp, "alone"), "grid agent 3")
    assert {r["grid.learning_rate"] for r in ca.agent_rows(os.path.join(tmp, "g"), 3)} == {"3e-3"}


def files_of(run_dir):
    """Every file under run_dir: its bytes and modification time."""
    found = {}
    for root, _, names in os.walk(run_dir):
        for name in names:
            path = os.path.join(root, name)
            if name == ".lock":  # the run folder's lock, taken by every run
                continue
            with open(path, "rb") as f:
                found[os.path.relpath(path, run_dir)] = (f.read(), os.stat(path).st_mtime_ns)
    return found


def refused_resume(tmp, side, learner):
    """A later agent's checkpoint whose environment state is sized for another run is refused with one line
    before any agent's file is rewritten (its files are read whole first, then its state restored)."""
    if ca.h5py is None:
        print("check_agents_batched resume: h5py missing, the damaged checkpoint is not made")
        return
    damaged = os.path.join(tmp, side + "_damaged")
    shutil.copytree(os.path.join(tmp, side), damaged)
    with ca.h5py.File(os.path.join(damaged, "agents", "4", "checkpoint.h5"), "r+") as f:
        state = f["resume/env_state"][...]
        del f["resume/env_state"]
        f["resume/env_state"] = state[: len(state) // 2]
    before = files_of(damaged)
    time.sleep(0.01)  # a rewrite would show in the modification times
    ca.refused(ca.run(["train", "--resume", side + "_damaged", "--learner", learner], tmp, False), "checkpoint")
    after = files_of(damaged)
    assert after.keys() == before.keys(), sorted(set(after) ^ set(before))
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, f"{learner}: a refused resume rewrote {changed}"


def case_resume(tmp):
    whole = SMALL + BATCHED + ["--agents", "3", "--grid", "clip_coef=0.1,0.3"]
    ca.run(whole + ["--out", "whole"], tmp)
    for side, learner in (("part", "batched"), ("part_separate", "separate")):
        stopped = ca.run(whole + ["--out", side, "--stop-after", "11"], tmp)
        assert f"surge train --resume {side}" in stopped.stderr, stopped.stderr
        assert len(ca.rows(os.path.join(tmp, side, "metrics.csv"))) == 6 * 11
        refused_resume(tmp, side, learner)
        ca.run(["train", "--resume", side, "--learner", learner], tmp)
        for k in range(6):
            what = f"agent {k} resumed by the {learner} learner"
            ca.same_metrics(ca.agent_rows(os.path.join(tmp, side), k), ca.agent_rows(os.path.join(tmp, "whole"), k),
                            what)
            ca.same_checkpoints(os.path.join(tmp, side, "agents", str(k), "checkpoint.h5"),
                                os.path.join(tmp, "whole", "agents", str(k), "checkpoint.h5"), what)
    # --checkpoint-every writes checkpoints along the way and changes nothing else.
    ca.run(whole + ["--out", "every", "--checkpoint-every", "7"], tmp)
    for k in range(6):
        ca.same_metrics(ca.agent_rows(os.path.join(tmp, "every"), k), ca.agent_rows(os.path.join(tmp, "whole"), k),
                        f"agent {k} with --checkpoint-every")
    # SIGINT: the batched run stops at an iteration boundary with every agent's checkpoint, and goes on.
    done = ca.interrupt(tmp, ca.SMALL[:5] + GEMM + BATCHED + ["--agents", "3", "--total-steps", "2560000", "--out",
                                                              "cut"], "cut", 3)
    ca.run(["train", "--resume", "cut", "--learner", "batched", "--stop-after", "2"], tmp)
    assert all(len(ca.agent_rows(os.path.join(tmp, "cut"), k)) == done + 2 for k in range(3))


def case_pause(tmp):
    common = ca.SMALL[:5] + GEMM + ["--total-steps", "256000", "--target-return", "60", "--set", "eval_every=8",
                                    "--set", "eval_episodes=2"]
    ca.run(common + BATCHED + ["--agents", "4", "--seed", "3", "--out", "batch"], tmp)
    summary = ca.rows(os.path.join(tmp, "batch", "agents_summary.csv"))
    lengths = [len(ca.agent_rows(os.path.join(tmp, "batch"), k)) for k in range(4)]
    assert len(set(lengths)) > 1, lengths  # they did stop at different iterations
    for k in range(4):
        solo = os.path.join(tmp, f"solo{k}")
        ca.run(common + ["--seed", str(3 + k), "--out", solo], tmp)
        agent = os.path.join(tmp, "batch", "agents", str(k))
        assert lengths[k] * 256 == float(summary[k]["threshold_step"]), (k, lengths, summary[k])
        same_agent(os.path.join(tmp, "batch"), k, solo, f"paused agent {k}")
        assert os.path.isfile(os.path.join(solo, "best.h5")) and os.path.isfile(os.path.join(agent, "best.h5"))
        ca.same_checkpoints(os.path.join(agent, "best.h5"), os.path.join(solo, "best.h5"), f"paused agent {k} best.h5")
    # --target-mode any: the run ends where the separate learners' run ends, every row the same.
    for learner in ("batched", "separate"):
        ended = ca.run(common + ["--learner", learner, "--agents", "4", "--seed", "3", "--target-mode", "any", "--out",
                                 f"any_{learner}"], tmp)
        assert "(--target-mode any) met" in ended.stdout, ended.stdout
    for k in range(4):
        ca.same_metrics(ca.agent_rows(os.path.join(tmp, "any_batched"), k),
                        ca.agent_rows(os.path.join(tmp, "any_separate"), k), f"agent {k} with --target-mode any")
    cut = (min(lengths) + max(lengths)) // 2
    stopped = ca.run(common + BATCHED + ["--agents", "4", "--seed", "3", "--out", "part", "--stop-after", str(cut)], tmp)
    assert "--resume part" in stopped.stderr, stopped.stderr
    resumed = ca.run(["train", "--resume", "part", "--target-return", "60"] + BATCHED, tmp)
    assert "already at the target" in resumed.stderr, resumed.stderr
    for k in range(4):
        what = f"resumed paused agent {k}"
        ca.same_metrics(ca.agent_rows(os.path.join(tmp, "part"), k), ca.agent_rows(os.path.join(tmp, "batch"), k), what)
        ca.same_checkpoints(os.path.join(tmp, "part", "agents", str(k), "checkpoint.h5"),
                            os.path.join(tmp, "batch", "agents", str(k), "checkpoint.h5"), what)


def case_refused(tmp):
    agents = SMALL + ["--agents", "2", "--out", "x"]
    ca.refused(ca.run(agents + ["--learner", "fast"], tmp, False), "--learner 'fast'", "separate, batched or auto")
    ca.refused(ca.run(agents + BATCHED + ["--set", "observation=pixels"], tmp, False), "pixel observations",
               "--learner separate")
    ca.refused(ca.run(agents + BATCHED + ["--set", "precision=bf16"], tmp, False), "precision", "--learner separate")
    ca.refused(ca.run(SMALL + BATCHED + ["--out", "x"], tmp, False), "--learner", "--agents")
    ca.refused(ca.run(SMALL + ["--learner", "separate", "--out", "x"], tmp, False), "--learner", "--agents")
    assert os.listdir(tmp) == [], os.listdir(tmp)
    plan = ca.run(SMALL + BATCHED + ["--agents", "3", "--dry-run"], tmp)
    assert "one batched learner of 3 agents:" in plan.stdout and "all 3 agents: " in plan.stdout, plan.stdout
    assert "(one batched learner)" in plan.stdout and "learner.params" in plan.stdout, plan.stdout
    huge = ca.SMALL[:5] + BATCHED + ["--agents", "65535", "--num-envs", "65536", "--total-steps", str(1 << 30)]
    plan = ca.run(huge + ["--dry-run"], tmp, False)
    assert plan.returncode == 2 and "all 65535 agents: " in plan.stdout and "does not fit" in plan.stdout, plan.stdout
    ca.refused(ca.run(huge + ["--out", "x"], tmp, False), "does not fit")
    too_many = ca.SMALL[:5] + BATCHED + ["--agents", "65536", "--out", "x"]
    ca.refused(ca.run(too_many, tmp, False), "at most 65535 agents", "--learner separate")
    assert os.listdir(tmp) == [], os.listdir(tmp)


def main():
    ca.SURGE = os.path.abspath(sys.argv[1])
    cases = {"solo": case_solo, "resume": case_resume, "pause": case_pause, "refused": case_refused}
    with tempfile.TemporaryDirectory() as tmp:
        cases[sys.argv[2]](tmp)
    print(f"check_agents_batched {sys.argv[2]}: ok")


if __name__ == "__main__":
    main()
