#!/usr/bin/env python3
"""The fault matrix of `surge train`: what survives SIGINT, SIGTERM, a double SIGINT, SIGKILL and a full disk.

usage: check_faults.py SURGE

For each fault, the run folder must hold a readable metrics.csv (a header and whole rows, each iteration
once, in order), no half-written file, and a checkpoint that `surge eval` reads wherever one was due. The
full disk is a small tmpfs mounted for the test (root only; the case is skipped, and said so, elsewhere).
"""
import argparse
import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SURGE = None
RUN = ["train", "--device", "cpu", "--set", "hidden=[16,16]", "--total-steps", "2000000", "--checkpoint-every", "20"]


def readable_metrics(folder):
    """metrics.csv parses; iterations run 1, 2, 3, ... with every cell of a row present."""
    with open(os.path.join(folder, "metrics.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == list(range(1, len(rows) + 1)), "iterations out of order"
    for r in rows:
        assert None not in r.values() and r["global_step"] != "", r
    return rows


def no_partial_files(folder):
    leftovers = [n for n in os.listdir(folder) if ".partial." in n]
    assert not leftovers, leftovers


def checkpoint_reads(folder):
    result = subprocess.run([SURGE, "eval", "--checkpoint", os.path.join(folder, "checkpoint.h5"), "--episodes", "2",
                             "--device", "cpu"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result


def start(folder):
    process = subprocess.Popen([SURGE] + RUN + ["--out", folder], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    # Wait until training has begun (the first periodic checkpoint is on disk).
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(folder, "checkpoint.h5")) and time.time() < deadline:
        time.sleep(0.02)
    return process


def case_stop_signal(tmp, sig, name):
    folder = os.path.join(tmp, name)
    process = start(folder)
    time.sleep(random.uniform(0.0, 0.5))
    process.send_signal(sig)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + sig, (process.returncode, err)
    rows = readable_metrics(folder)
    no_partial_files(folder)
    checkpoint_reads(folder)
    return f"exit {process.returncode}, {len(rows)} rows, checkpoint and metrics whole, resumable"


def case_double_sigint(tmp, trial):
    folder = os.path.join(tmp, f"double{trial}")
    process = start(folder)
    time.sleep(random.uniform(0.0, 0.3))
    process.send_signal(signal.SIGINT)
    time.sleep(random.uniform(0.0, 0.05))
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    # Either the second signal came while training (it ends the process at once) or during the final
    # writes (ignored until they are whole): the files are whole either way.
    assert process.returncode in (130, -signal.SIGINT), process.returncode
    rows = readable_metrics(folder)
    checkpoint_reads(folder)
    if process.returncode == 130:
        no_partial_files(folder)
    return process.returncode, len(rows)


def case_sigkill(tmp, trial):
    folder = os.path.join(tmp, f"kill{trial}")
    process = start(folder)
    time.sleep(random.uniform(0.0, 1.0))
    process.kill()
    process.communicate(timeout=60)
    rows = readable_metrics(folder)
    checkpoint_reads(folder)
    return len(rows)


def case_disk_full(tmp):
    mount = os.path.join(tmp, "small")
    os.makedirs(mount)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", mount], capture_output=True).returncode:
        return "skipped (mounting a small tmpfs needs root)"
    try:
        folder = os.path.join(mount, "run")
        result = subprocess.run([SURGE, "train", "--device", "cpu", "--set", "hidden=[16,16]", "--total-steps",
                                 "600000", "--checkpoint-every", "50", "--out", folder], capture_output=True,
                                text=True, timeout=600)
        # The machine's state, not a bug: exit 2, a warning per output that stopped, never a crash.
        assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
        assert "surge train:" in result.stderr and "could not be written" in result.stderr, result.stderr[-3000:]
        assert "TensorBoard events stop here" in result.stderr, result.stderr[-3000:]
        rows = readable_metrics(folder)
        no_partial_files(folder)
        checkpoint_reads(folder)  # the last good one
        return f"exit 2 with warnings; metrics.csv kept {len(rows)} whole rows, the last good checkpoint reads"
    finally:
        subprocess.run(["umount", mount])


def main():
    global SURGE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("surge", help="the surge program")
    SURGE = os.path.abspath(parser.parse_args().surge)
    random.seed(20261201)
    tmp = tempfile.mkdtemp(prefix="surge_faults_")
    try:
        print("SIGINT:", case_stop_signal(tmp, signal.SIGINT, "int"))
        print("SIGTERM:", case_stop_signal(tmp, signal.SIGTERM, "term"))
        doubles = [case_double_sigint(tmp, k) for k in range(4)]
        print("double SIGINT:", ", ".join(f"exit {code} ({rows} rows)" for code, rows in doubles),
              "; files whole every time")
        kills = [case_sigkill(tmp, k) for k in range(4)]
        print("SIGKILL:", ", ".join(f"{rows} rows" for rows in kills), "; metrics.csv and checkpoint read every time")
        print("disk full:", case_disk_full(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
