#!/usr/bin/env python3
"""`surge train` run folders, config show, seeds, evaluation and the progress line, through the real program.

usage: check_run_folders.py SURGE

Every case runs SURGE in a fresh temporary working folder and reads what it wrote.
"""
import csv
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_cli import snapshot as listing  # noqa: E402  every entry with its kind, size and time

SURGE = None
SMALL = ["--device", "cpu", "--set", "hidden=[16,16]"]


def run(args, cwd, check_ok=True):
    result = subprocess.run([SURGE] + args, cwd=cwd, capture_output=True, text=True)
    if check_ok and result.returncode != 0:
        raise AssertionError(f"surge {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


def refused(result, *words):
    """Exit 2 with one line on stderr, starting with the command's name and holding each of `words`."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("surge "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


def metrics(folder):
    """metrics.csv as rows of cells, without the columns that time the run."""
    with open(os.path.join(folder, "metrics.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in r.items() if k not in ("wall_time_s", "sps")} for r in rows]


def case_config_reproduces(tmp):
    """config.toml names the scenario, and --config alone repeats the run bit for bit (on the CPU)."""
    first = run(["train", "--scenario", "acrobot", "--total-steps", "4096", "--seed", "7", "--out", "a"] + SMALL, tmp)
    config = tomllib.loads(open(os.path.join(tmp, "a", "config.toml")).read())
    assert config["scenario"] == "acrobot" and config["seed"] == 7, config
    run(["train", "--config", "a/config.toml", "--out", "b", "--device", "cpu"], tmp)
    assert metrics(os.path.join(tmp, "a")) == metrics(os.path.join(tmp, "b"))
    assert "acrobot" in first.stdout
    # A --scenario that disagrees with the file is refused, before anything is written.
    before = listing(tmp)
    refused(run(["train", "--config", "a/config.toml", "--scenario", "cartpole", "--out", "c", "--device", "cpu"], tmp,
                False),
            "surge train:", "--scenario cartpole", "acrobot")
    assert listing(tmp) == before


def case_default_folder(tmp):
    """Without --out, each run gets a new folder runs/<scenario>/<date>-<time>-seed<K>, named at the start."""
    made = []
    for _ in range(2):
        result = run(["train", "--total-steps", "512"] + SMALL, tmp)
        match = re.search(r"into (runs/cartpole/\d{8}-\d{6}-seed1(-\d+)?)\n", result.stderr)
        assert match, result.stderr
        made.append(match.group(1))
    assert made[0] != made[1], made
    for folder in made:
        assert os.path.exists(os.path.join(tmp, folder, "metrics.csv")), folder


def case_out_reuse(tmp):
    """An --out that holds a run is refused untouched; --overwrite replaces it, with one event file."""
    run(["train", "--total-steps", "512", "--out", "r"] + SMALL, tmp)
    before = listing(tmp)
    refused(run(["train", "--scenario", "acrobot", "--total-steps", "512", "--out", "r"] + SMALL, tmp, False),
            "--out r", "--overwrite")
    assert listing(tmp) == before
    run(["train", "--scenario", "acrobot", "--total-steps", "1024", "--out", "r", "--overwrite"] + SMALL, tmp)
    assert tomllib.loads(open(os.path.join(tmp, "r", "config.toml")).read())["scenario"] == "acrobot"
    assert len(os.listdir(os.path.join(tmp, "r", "tb"))) == 1
    assert len(metrics(os.path.join(tmp, "r"))) == 2


def case_failed_start_leaves_nothing(tmp):
    """Inputs are checked before the first byte is written: a failed start leaves no folder behind."""
    before = listing(tmp)
    refused(run(["train", "--out", "x", "--log-rollouts", "missing/log.h5"] + SMALL, tmp, False), "missing")
    refused(run(["train", "--out", "x", "--log-rollouts", "x/metrics.csv"] + SMALL, tmp, False), "metrics.csv")
    refused(run(["train", "--out", "x", "--set", "learning_rate=-1"] + SMALL, tmp, False), "learning_rate")
    refused(run(["train", "--out", "x/y/z", "--seeds", "3-1"] + SMALL, tmp, False), "--seeds")
    assert listing(tmp) == before, listing(tmp)


def case_owned_folder(tmp):
    """A second run on a folder a running one owns is refused, naming it; the first finishes whole."""
    first = subprocess.Popen([SURGE, "train", "--total-steps", "400000", "--out", "busy"] + SMALL, cwd=tmp,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not os.path.exists(os.path.join(tmp, "busy", "config.toml")) and time.time() < deadline:
        time.sleep(0.05)
    second = run(["train", "--total-steps", "512", "--out", "busy", "--overwrite"] + SMALL, tmp, False)
    refused(second, "in use", f"process {first.pid}")
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert len(metrics(os.path.join(tmp, "busy"))) == 400000 // 256


def case_dry_run(tmp):
    """--dry-run exits 0 when the plan fits and 2 when it does not, writing nothing either way."""
    before = listing(tmp)
    fits = run(["train", "--dry-run", "--out", "d"] + SMALL, tmp, False)
    assert fits.returncode == 0 and "total" in fits.stdout.lower(), fits
    huge = run(["train", "--dry-run", "--num-envs", "4294967296", "--total-steps", "1125899906842624",
                "--set", "num_minibatches=1", "--out", "d"] + SMALL, tmp, False)
    assert huge.returncode == 2, (huge.returncode, huge.stdout, huge.stderr)
    assert listing(tmp) == before


def case_config_show(tmp):
    """config show prints TOML with each value's origin; training with it equals training with the flags."""
    shown = run(["config", "show", "--scenario", "cartpole", "--device", "cpu", "--num-envs", "8",
                 "--set", "learning_rate=0.001", "--total-steps", "1024", "--set", "hidden=[16,16]"], tmp)
    config = tomllib.loads(shown.stdout)
    assert config["num_envs"] == 8 and config["learning_rate"] == 0.001 and config["scenario"] == "cartpole"
    origins = dict(re.findall(r"^(\w+) = .*# (.+)$", shown.stdout, re.M))
    assert origins["num_envs"] == "--num-envs" and origins["learning_rate"] == "--set", origins
    assert origins["gamma"] == "built-in default" and origins["num_steps"] == "cartpole.toml", origins
    with open(os.path.join(tmp, "shown.toml"), "w") as f:
        f.write(shown.stdout)
    run(["train", "--config", "shown.toml", "--device", "cpu", "--out", "from_show"], tmp)
    run(["train", "--device", "cpu", "--num-envs", "8", "--set", "learning_rate=0.001", "--total-steps", "1024",
         "--set", "hidden=[16,16]", "--out", "from_flags"], tmp)
    assert metrics(os.path.join(tmp, "from_show")) == metrics(os.path.join(tmp, "from_flags"))


def case_seeds(tmp):
    """--seeds trains each seed into DIR/seed<K>, as --seed K alone would, and ends with a table."""
    result = run(["train", "--scenario", "acrobot", "--total-steps", "2048", "--seeds", "1-2", "--out", "s"] + SMALL,
                 tmp)
    assert "2 seeds of acrobot" in result.stdout and "mean ± std" in result.stdout, result.stdout
    run(["train", "--scenario", "acrobot", "--total-steps", "2048", "--seed", "2", "--out", "alone"] + SMALL, tmp)
    assert metrics(os.path.join(tmp, "s", "seed2")) == metrics(os.path.join(tmp, "alone"))
    with open(os.path.join(tmp, "s", "seeds.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["seed"] for r in rows] == ["1", "2"]
    alone = metrics(os.path.join(tmp, "alone"))[-1]["return_last100"]  # empty: no episode ended yet
    assert rows[1]["return_last100"] == alone or float(rows[1]["return_last100"]) == float(alone)


def case_eval(tmp):
    """eval_every adds eval columns at its iterations; best.h5 is the best one and surge eval loads it."""
    run(["train", "--total-steps", "2560", "--set", "eval_every=4", "--set", "eval_episodes=5", "--out", "e"] + SMALL,
        tmp)
    rows = metrics(os.path.join(tmp, "e"))
    evaluated = [int(r["iteration"]) for r in rows if r["eval_return_mean"] != ""]
    assert evaluated == [4, 8], evaluated
    assert all(r["eval_return_mean"] != "nan" and r["episodic_return_mean"] != "nan" for r in rows)
    result = run(["eval", "--checkpoint", "e/best.h5", "--episodes", "5", "--device", "cpu"], tmp)
    assert "surge eval: cartpole" in result.stdout


def case_progress_line(tmp):
    """On a 60-column terminal: every redraw fits, at most ten a second, and no `nan`."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp)
        os.execv(SURGE, [SURGE, "train", "--total-steps", "200000", "--out", "p", "--device", "cpu"])
    import fcntl
    import termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    start, output = time.time(), b""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    elapsed = time.time() - start
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, output[-2000:]
    text = output.decode()
    redraws = [part for part in re.split(r"\r\x1b\[K", text) if part.startswith("iter ")]
    assert redraws, text[:500]
    for part in redraws:
        line = part.split("\r")[0].split("\n")[0]
        assert len(line) <= 59, (len(line), line)
    assert len(redraws) <= 10 * elapsed + 3, (len(redraws), elapsed)
    assert "nan" not in text, text


def case_help_lists_every_command(tmp):
    """surge --help lists every command and subcommand, and each answers --help."""
    text = run(["--help"], tmp).stdout
    listed = re.findall(r"^  ([a-z0-9]+(?: [a-z]+)?)\s{2,}", text.split("Commands:")[1].split("Options:")[0], re.M)
    for expected in ["train", "config show", "eval", "plot", "step", "bench env", "bench train", "bench sweep",
                     "bench roofline", "h5 info", "h5 episodes", "h5 export", "doctor"]:
        assert expected in listed, (expected, listed)
    for command in listed:
        result = run(command.split() + ["--help"], tmp, False)
        assert result.returncode == 0 and "Usage" in result.stdout, (command, result.returncode)


def main(argv):
    global SURGE
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    SURGE = os.path.abspath(argv[0])
    cases = [v for k, v in globals().items() if k.startswith("case_")]
    for case in cases:
        tmp = tempfile.mkdtemp(prefix="surge_run_folders_")
        try:
            case(tmp)
            print(f"ok: {case.__name__[5:]}: {case.__doc__.splitlines()[0]}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(cases)} cases passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
