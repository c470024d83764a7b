#!/usr/bin/env python3
"""Data-parallel training under mpirun, two ranks on the CPU.

usage: check_mpi.py equivalence DATA_PARALLEL_CHECK
       check_mpi.py train SURGE

equivalence: runs the check program (tests/support/data_parallel_check.cpp) as two ranks: identical
parameters on both after every iteration, and the same training as one process over both ranks'
environments.
train: `mpirun -np 2 surge train --scenario cartpole --device cpu --target-return 475` solves CartPole;
rank 0 alone writes the run folder, metrics.csv counts the steps of both ranks; then SIGINT to mpirun stops
both ranks at one iteration boundary with metrics.csv and the checkpoint written whole.

Exit 77 (skipped) where mpirun is missing or the program was built without MPI.
"""
import csv
import os
import re
import shutil
import signal
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


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("equivalence", "train"):
        print(__doc__)
        return 2
    (equivalence if sys.argv[1] == "equivalence" else train)(os.path.abspath(sys.argv[2]))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
