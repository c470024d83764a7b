"""Hostile flags, config files and CSV input through the real program: each is refused with exit code 2 and
one line on stderr naming the command and the bad value (cut short when it is long), and nothing is
written; or, where the input is fine, accepted the same way however it is spelt (the number rule in
tools/cli/args.hpp: spaces around a number and a leading + are allowed, in flags as in --set and TOML)."""
import os
import shutil
import subprocess
import sys
import tempfile

surge = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="surge_check_hostile_inputs_")


def run(*args):
    return subprocess.run([surge, *args], capture_output=True, cwd=work)


def listing():
    return sorted(os.listdir(work))


def refused(args, needles=(), command=None, max_line=400):
    """Exit 2, exactly one line on stderr (naming `command` when given, and each needle), no file written."""
    command = command or (args[0] if args[0] in ("train", "step", "eval") else None)
    before = listing()
    result = run(*args)
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, (args[:4], result.returncode, err[:300])
    assert err.count("\n") == 1, (args[:4], err[:600])
    assert len(err) <= max_line, (args[:4], len(err), err[:200])
    if command:
        assert err.startswith(f"surge {command}: "), (args[:4], err)
    for needle in needles:
        assert needle in err, (args[:4], needle, err)
    assert listing() == before, (args[:4], "wrote", set(listing()) - set(before))
    return err


def dry_run(*args):
    result = run("train", "--device", "cpu", "--dry-run", *args)
    assert result.returncode == 0, (args, result.stderr)
    # The plan less its last line, which says how much memory is free now.
    return [line for line in result.stdout.decode().splitlines() if not line.strip().startswith("free on")]


try:
    train = ["train", "--device", "cpu", "--out", "out"]
    # Sizes whose product overflows 64 bits: refused, with or without --dry-run, never a crash.
    for extra in ([], ["--dry-run"], ["--set", "norm_adv=false"]):
        refused(train + ["--set", "num_envs=1048576", "--set", "num_steps=17592186044416", *extra],
                ["num_steps = 17592186044416"])
    refused(train + ["--set", "num_envs=4294967296", "--set", "num_steps=4096", "--dry-run"],
            ["num_envs x num_steps = 4294967296 x 4096"])
    refused(["bench", "train", "--device", "cpu", "--set", "num_envs=1048576", "--set", "num_steps=17592186044416"],
            ["num_steps"], "bench train")
    # surge bench train checks its memory plan as surge train does (the plan follows its first line).
    before = listing()
    bench = run("bench", "train", "--device", "cpu", "--num-envs", "4294967296")
    assert bench.returncode == 2, (bench.returncode, bench.stderr[-300:])
    assert bench.stderr.decode().startswith("surge bench train on cpu needs "), bench.stderr[:200]
    assert listing() == before

    # Values that do not fit their key's type, and inf, are refused alike.
    for setting in ("learning_rate=1e300", "obs_clip=inf", "reward_clip=-1e39", "physics.masspole=1e300",
                    "num_envs=1e300", "num_envs=16.5"):
        refused(train + ["--set", setting], [setting.split("=")[0]])
    # One key per --set: a second line would be dropped.
    refused(train + ["--set", "learning_rate=1e-3\nnum_envs=0"], ["one key=value per --set"])
    # A folder as the config file, and a config file of a 10 MB unknown key (echoed cut short).
    os.mkdir(os.path.join(work, "config_dir"))
    refused(train + ["--config", "config_dir"], ["config_dir", "folder"], "train")
    with open(os.path.join(work, "big.toml"), "w") as f:
        f.write("k" * 10_000_000 + " = 1\n")
    refused(train + ["--config", "big.toml"], ["unknown config key 'kkkk", "…"], max_line=2000)
    refused(train + ["--set", "k" * 100_000 + "=1"], ["unknown config key", "…"], max_line=2000)
    refused(train + ["--num-envs", "9" * 100_000], ["is not an integer", "…"], "train")

    # One number rule for flags and --set: spaces around it and a leading + are fine, nothing else.
    plan = dry_run("--num-envs", "16")
    for spelling in (" 16", "16 ", "+16", "\t16"):
        assert dry_run("--num-envs", spelling) == plan, spelling
        assert dry_run("--set", "num_envs=" + spelling) == plan, spelling
    for spelling in ("1 6", "16x", "0x10", "16e0", "", " "):
        refused(train + ["--num-envs", spelling, "--dry-run"], ["--num-envs"], "train")

    # surge step: a byte order mark before the header is not part of the first column's name.
    header = "s_x,s_x_dot,s_theta,s_theta_dot,action\n"
    with open(os.path.join(work, "plain.csv"), "w") as f:
        f.write(header + "0.01,0,0.02,0,1\n")
    with open(os.path.join(work, "bom.csv"), "w", encoding="utf-8-sig") as f:
        f.write(header + "0.01,0,0.02,0,1\n")
    step = ["step", "--scenario", "cartpole", "--device", "cpu"]
    for name in ("plain", "bom"):
        result = run(*step, "--input", name + ".csv", "--output", name + "_next.csv")
        assert result.returncode == 0, result.stderr
    with open(os.path.join(work, "plain_next.csv")) as a, open(os.path.join(work, "bom_next.csv")) as b:
        assert a.read() == b.read()
    # A NUL inside a number does not cut it short; hex and inf are not decimal numbers.
    for cell in ("0\x005", "0x1p3", "inf", "1e999"):
        with open(os.path.join(work, "bad.csv"), "w") as f:
            f.write(header + cell + ",0,0,0,1\n")
        refused(step + ["--input", "bad.csv", "--output", "next.csv"], ["bad.csv", "row 1", "s_x"], "step")
        os.remove(os.path.join(work, "bad.csv"))
    refused(step + ["--input", "plain.csv", "--output", ""], ["''"], "step")
    refused(step + ["--input", "config_dir", "--output", "next.csv"], ["folder"], "step")
    refused(["eval", "--checkpoint", "config_dir"], ["config_dir"], "eval")
    if "this build has no HDF5" not in run("eval", "--checkpoint", "plain.csv").stderr.decode():
        refused(["eval", "--checkpoint", "plain.csv"], ["not an HDF5 file"], "eval")
    print("hostile inputs: every one refused with one line and exit 2, nothing written; numbers read by one rule")
finally:
    shutil.rmtree(work)
