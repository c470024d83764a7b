#!/usr/bin/env python3
"""Data-parallel training under mpirun, two ranks on the CPU.

usage: check_mpi.py equivalence DATA_PARALLEL_CHECK
       check_mpi.py train SURGE
       check_mpi.py resume SURGE
       check_mpi.py stall SURGE
       check_mpi.py logs SURGE

equivalence: runs the check program (tests/support/data_parallel_check.cpp) as two ranks: identical
parameters on both after every iteration, and the same training as one process over both ranks'
environments.
train: `mpirun -np 2 surge train --scenario cartpole --device cpu --target-return 475` solves CartPole;
rank 0 alone writes the run folder, metrics.csv counts the steps of both ranks; then SIGINT to mpirun stops
both ranks at one iteration boundary with metrics.csv and the checkpoint written whole, and the run goes on
from that checkpoint on 2 ranks.
resume: a 2-rank run stopped half way (with a periodic checkpoint and evaluations on the way) and resumed
on 2 ranks writes the metrics.csv of an uninterrupted 2-rank run, cell for cell but the timings; the
checkpoint counts both ranks' steps for `surge eval`; resuming it in one process is refused with one line.
stall: with rank_timeout_s = 3, SIGSTOP on rank 1's process ends the job soon after, with one line from
rank 0 naming rank 1 and its host; a healthy job whose rank 0 evaluates and writes checkpoints for
longer than rank_timeout_s is not stopped (the others wait for that without the timeout).
logs: --log-ranks all writes FILE.h5 (rank 0) and FILE.rank1.h5, each holding its own rank's global
environment numbers; --log-ranks 1 writes rank 1's alone, and continues it on --resume.

Exit 77 (skipped) where mpirun is missing or the program was built without MPI.
"""
import csv
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77


def mpirun(ranks):
    # Containers without ptrace refuse Open MPI's single-copy transfers between processes; copying
    # through shared memory works everywhere.
    os.environ.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    launcher = shutil.which("mpirun")
    if launcher is None:
        print("mpirun not found: skipped (Debian: apt-get install openmpi-bin libopenmpi-dev)")
        sys.exit(SKIP)
    command = [launcher, "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def built_with_mpi(surge):
    doctor = subprocess.run([surge, "doctor"], capture_output=True, text=True)
    return re.search(r"^\s*MPI\s+(?!none)\S", doctor.stdout, re.MULTILINE) is not None


def equivalence(program):
    result = subprocess.run(mpirun(2) + [program], capture_output=True, text=True, timeout=600)
    print(result.stdout + result.stderr)
    if "run it under mpirun -np 2" in result.stdout:
        print("this build has no MPI: skipped")
        sys.exit(SKIP)
    assert result.returncode == 0, f"the check exited {result.returncode}"
    for scenario in ("cartpole", "pendulum"):
        assert f"{scenario}: 3 iterations of 2 ranks x 8 envs against 1 x 16 envs: the same" in result.stdout, scenario


def read_metrics(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def train(surge):
    if not built_with_mpi(surge):
        print("surge was built without MPI: skipped")
        sys.exit(SKIP)
    envs, steps = 16, 16  # cartpole's built-in config
    with tempfile.TemporaryDirectory() as cwd:
        args = ["train", "--scenario", "cartpole", "--device", "cpu", "--target-return", "475", "--out", "run"]
        result = subprocess.run(mpirun(2) + [surge] + args, cwd=cwd, capture_output=True, text=True, timeout=900)
        print(result.stdout + result.stderr)
        assert result.returncode == 0, f"mpirun exited {result.returncode}"
        assert "2 ranks x 16 envs x 16 steps" in result.stderr, "the start line names the ranks"
        assert re.search(r"target 475(\.0)? reached", result.stdout), "CartPole solved"
        assert result.stdout.count("surge train: cartpole") == 1, "one summary: rank 0's"
        assert sorted(os.listdir(cwd)) == ["run"], f"only rank 0's run folder: {os.listdir(cwd)}"
        rows = read_metrics(os.path.join(cwd, "run", "metrics.csv"))
        assert rows and float(rows[-1]["return_last100"]) >= 475, rows[-1]
        for row in rows:
            assert int(row["global_step"]) == int(row["iteration"]) * 2 * envs * steps, row
        sps = float(rows[-1]["sps"])
        wall = float(rows[-1]["wall_time_s"])
        assert abs(sps * wall - int(rows[-1]["global_step"])) <= 1e-6 * int(rows[-1]["global_step"]) + 1, rows[-1]

        # Ctrl-C: mpirun passes it on to every rank as SIGTERM; both stop after the same iteration.
        args = ["train", "--scenario", "cartpole", "--device", "cpu", "--set", "total_steps=100000000", "--out", "stop"]
        process = subprocess.Popen(mpirun(2) + [surge] + args, cwd=cwd, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        metrics = os.path.join(cwd, "stop", "metrics.csv")
        deadline = time.time() + 120
        while time.time() < deadline and (not os.path.exists(metrics) or len(read_metrics(metrics)) < 5):
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        print(out + err)
        assert "stopped by SIGTERM" in err or "stopped by SIGINT" in err, "rank 0 stopped at an iteration boundary"
        rows = read_metrics(metrics)
        assert len(rows) >= 5 and int(rows[-1]["iteration"]) == len(rows), "metrics.csv holds whole rows"
        assert os.path.exists(os.path.join(cwd, "stop", "checkpoint.h5")) or "no HDF5" in err, "the checkpoint"
        assert sorted(os.listdir(cwd)) == ["run", "stop"], os.listdir(cwd)
        if "no HDF5" not in err:  # the checkpoint holds both ranks: the run goes on from it
            again = run(mpirun(2) + [surge, "train", "--resume", "stop/checkpoint.h5", "--stop-after", "1"], cwd)
            assert again.returncode == 0, f"the resumed run exited {again.returncode}"
            assert f"resumed after iteration {len(rows)}" in again.stderr, again.stderr


def run(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    print(" ".join(command[-8:]) + "\n" + result.stdout + result.stderr)
    return result


def resume(surge):
    if not built_with_mpi(surge):
        print("surge was built without MPI: skipped")
        sys.exit(SKIP)
    envs, steps, iterations = 16, 16, 10
    start = ["train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", str(iterations * 2 * envs * steps),
             "--set", "eval_every=2", "--set", "eval_episodes=4", "--checkpoint-every", "3"]
    with tempfile.TemporaryDirectory() as cwd:
        whole = run(mpirun(2) + [surge] + start + ["--out", "whole"], cwd)
        assert whole.returncode == 0, f"mpirun exited {whole.returncode}"
        half = run(mpirun(2) + [surge] + start + ["--out", "half", "--stop-after", "6"], cwd)
        assert half.returncode == 0 and "after iteration 6 of 10" in half.stderr, "stopped half way"
        checkpoint = os.path.join("half", "checkpoint.h5")
        alone = run([surge, "train", "--resume", checkpoint], cwd)
        assert alone.returncode == 2, f"one process resuming a 2-rank checkpoint exited {alone.returncode}"
        assert alone.stderr.count("\n") == 1 and "surge train: " in alone.stderr, alone.stderr
        assert "written by 2 ranks" in alone.stderr and "this run has 1" in alone.stderr, alone.stderr
        evaluated = run([surge, "eval", "--checkpoint", checkpoint, "--episodes", "2", "--device", "cpu"], cwd)
        assert evaluated.returncode == 0, evaluated.returncode
        assert f"after {6 * 2 * envs * steps} training steps" in evaluated.stdout, "the steps of both ranks"
        resumed = run(mpirun(2) + [surge, "train", "--resume", checkpoint], cwd)
        assert resumed.returncode == 0, f"the resumed run exited {resumed.returncode}"
        assert "resumed after iteration 6" in resumed.stderr, resumed.stderr
        expected = read_metrics(os.path.join(cwd, "whole", "metrics.csv"))
        got = read_metrics(os.path.join(cwd, "half", "metrics.csv"))
        assert len(expected) == iterations and len(got) == iterations, (len(expected), len(got))
        timings = {"wall_time_s", "sps"}
        for want, row in zip(expected, got):
            assert want.keys() == row.keys(), "the same columns"
            for column in want.keys() - timings:
                assert want[column] == row[column], f"iteration {want['iteration']}: {column} {row[column]} != {want[column]}"
        assert any(row["eval_return_mean"] for row in got), "evaluations ran"


def rank_process(rank, marker):
    """The pid of the surge process of rank `rank` whose command line holds `marker`, or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().split(b"\0")
            with open(f"/proc/{entry}/environ", "rb") as f:
                environment = f.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in command and f"OMPI_COMM_WORLD_RANK={rank}".encode() in environment:
            return int(entry)
    return None


def stall(surge):
    if not built_with_mpi(surge):
        print("surge was built without MPI: skipped")
        sys.exit(SKIP)
    if shutil.which("mpirun") and "Open MPI" not in subprocess.run(["mpirun", "--version"], capture_output=True,
                                                                   text=True).stdout:
        print("finding rank 1's process needs Open MPI's OMPI_COMM_WORLD_RANK: skipped")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as cwd:
        out = os.path.join(cwd, "stalled-run")
        args = ["train", "--scenario", "cartpole", "--device", "cpu", "--set", "total_steps=100000000",
                "--set", "rank_timeout_s=3", "--out", out]
        process = subprocess.Popen(mpirun(2) + [surge] + args, cwd=cwd, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        metrics = os.path.join(out, "metrics.csv")
        deadline = time.time() + 120
        while time.time() < deadline and (not os.path.exists(metrics) or len(read_metrics(metrics)) < 3):
            time.sleep(0.2)
        stopped = rank_process(1, out)
        assert stopped is not None, "rank 1's process"
        os.kill(stopped, signal.SIGSTOP)
        try:
            out_text, err = process.communicate(timeout=120)
        finally:
            if rank_process(1, out) == stopped:
                os.kill(stopped, signal.SIGKILL)
                os.kill(stopped, signal.SIGCONT)
        print(out_text + err)
        assert process.returncode != 0, "the job failed"
        pattern = (r"^surge train: rank 1 \((\S+)\) did not arrive at [^\n]* within 3 s \(rank_timeout_s\); "
                   r"rank 0 \((\S+)\) stops the job$")
        lines = re.findall(pattern, err, re.MULTILINE)
        assert len(lines) == 1, "one line names the rank that stalled"
        assert lines[0][0] == socket.gethostname() == lines[0][1], lines
        # Rank 0 alone evaluates (4096 Acrobot episodes, seconds) and writes checkpoints: not a stall.
        slow = os.path.join(cwd, "slow-rank0")
        healthy = subprocess.run(mpirun(2) + [surge, "train", "--scenario", "acrobot", "--device", "cpu",
                                              "--total-steps", "8192", "--set", "eval_every=2", "--set",
                                              "eval_episodes=4096", "--checkpoint-every", "1", "--set",
                                              "rank_timeout_s=0.2", "--out", slow],
                                 cwd=cwd, capture_output=True, text=True, timeout=600)
        assert healthy.returncode == 0, healthy.stderr
        assert "did not arrive" not in healthy.stderr, healthy.stderr


def logged(surge, path, cwd):
    """(iteration count, env range) as `surge h5 info` reports them."""
    info = run([surge, "h5", "info", path], cwd)
    assert info.returncode == 0, info.returncode
    iterations = re.search(r"^logged iterations: (\d+)", info.stdout, re.MULTILINE)
    envs = re.search(r"^logged environments: \d+ \(env ([^)]*)\)", info.stdout, re.MULTILINE)
    assert iterations and envs, info.stdout
    return int(iterations.group(1)), envs.group(1)


def logs(surge):
    if not built_with_mpi(surge):
        print("surge was built without MPI: skipped")
        sys.exit(SKIP)
    start = ["train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", str(8 * 2 * 16 * 16),
             "--log-every", "1", "--log-envs", "4"]
    with tempfile.TemporaryDirectory() as cwd:
        both = run(mpirun(2) + [surge] + start + ["--out", "both", "--log-rollouts", "both/roll.h5", "--log-ranks", "all"],
                   cwd)
        assert both.returncode == 0, both.returncode
        assert logged(surge, "both/roll.h5", cwd) == (8, "0-3"), "rank 0: environments 0..3"
        assert logged(surge, "both/roll.rank1.h5", cwd) == (8, "16-19"), "rank 1: its global environments 16..19"

        half = run(mpirun(2) + [surge] + start + ["--out", "one", "--log-rollouts", "one/roll.h5", "--log-ranks", "1",
                                                   "--stop-after", "3"], cwd)
        assert half.returncode == 0, half.returncode
        assert logged(surge, "one/roll.rank1.h5", cwd) == (3, "16-19")
        resumed = run(mpirun(2) + [surge, "train", "--resume", "one/checkpoint.h5", "--log-rollouts", "one/roll.h5",
                                   "--log-ranks", "1", "--log-every", "1", "--log-envs", "4"], cwd)
        assert resumed.returncode == 0, resumed.returncode
        assert logged(surge, "one/roll.rank1.h5", cwd) == (8, "16-19"), "rank 1's log continued"
        assert not os.path.exists(os.path.join(cwd, "one", "roll.h5")), "rank 0 logs nothing when not chosen"

        refused = run(mpirun(2) + [surge] + start + ["--out", "bad", "--log-rollouts", "x.h5", "--log-ranks", "2"], cwd)
        assert refused.returncode != 0 and "--log-ranks 2: '2' is not one of the 2 ranks" in refused.stderr

        # Rank 1's log path is a folder: refused on every rank before rank 0 makes anything.
        os.mkdir(os.path.join(cwd, "lg.rank1.h5"))
        blocked = run(mpirun(2) + [surge] + start + ["--out", "blocked", "--log-rollouts", "lg.h5", "--log-ranks", "all"],
                      cwd)
        assert blocked.returncode != 0 and "lg.rank1.h5 is not a regular file" in blocked.stderr, blocked.stderr
        assert not os.path.exists(os.path.join(cwd, "blocked")) and not os.path.exists(os.path.join(cwd, "lg.h5"))


def main():
    modes = {"equivalence": equivalence, "train": train, "resume": resume, "stall": stall, "logs": logs}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        print(__doc__)
        return 2
    modes[sys.argv[1]](os.path.abspath(sys.argv[2]))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
