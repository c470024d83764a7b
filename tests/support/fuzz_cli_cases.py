"""The case tables of fuzz_cli.py: every command and subcommand of `surge` with bad flags, numbers, paths,
CSV, TOML and HDF5 inputs.

A case runs in its own empty folder, which holds only the files the case lists. Files are given as
bytes, or as ("dir",), ("ro-dir",), ("fifo",), ("symlink", target), ("copy", path), ("copytree", path).
Output paths are never system files: AtomicFile renames over its target, so an output of /dev/null would
replace /dev/null for everyone; a symlink in the case folder stands for such a target instead.
"""

import os
import random
from dataclasses import dataclass, field

import fuzz_cli_files as files

SCENARIOS = ["cartpole", "mountain_car", "acrobot", "pendulum", "mountain_car_continuous"]


@dataclass
class Case:
    id: str  # category/command/label, unique
    argv: list
    files: dict = field(default_factory=dict)
    outputs: tuple = ()  # paths (relative) a successful run may create or change, folders included whole

    @property
    def category(self):
        return self.id.split("/", 1)[0]


# The cheap valid form of every command: (argv, files, outputs). A case changes one thing in it.
TRAIN = ["train", "--device", "cpu", "--num-envs", "4", "--num-steps", "8", "--total-steps", "64", "--out", "out"]
STEP_FILES = {"in.csv": files.STEP_CSV_VALID}


def bases(fx):
    run = ("copytree", fx["run"])
    return {
        "step": (["step", "--scenario", "cartpole", "--input", "in.csv", "--output", "out.csv", "--device", "cpu"],
                 dict(STEP_FILES), ("out.csv",)),
        "train": (list(TRAIN), {}, ("out",)),
        "eval": (["eval", "--checkpoint", "ck.h5", "--episodes", "2", "--device", "cpu"],
                 {"ck.h5": ("copy", fx["checkpoint"])}, ()),
        "h5 info": (["h5", "info", "log.h5"], {"log.h5": ("copy", fx["log"])}, ()),
        "h5 episodes": (["h5", "episodes", "log.h5", "--out", "ep.csv"], {"log.h5": ("copy", fx["log"])},
                        ("ep.csv",)),
        "h5 export": (["h5", "export", "log.h5", "--dataset", "reward", "--out", "x.csv"],
                      {"log.h5": ("copy", fx["log"])}, ("x.csv",)),
        "doctor": (["doctor", "--json"], {}, ()),
        "plot": (["plot", "run", "--out", "fig.svg"], {"run": run}, ("fig.svg",)),
        "bench env": (["bench", "env", "--device", "cpu", "--num-envs", "64", "--steps", "4", "--repeats", "1"], {},
                      ()),
        "bench train": (["bench", "train", "--device", "cpu", "--num-envs", "8", "--num-steps", "4", "--repeats", "1",
                         "--iterations", "1"], {}, ()),
        "bench sweep": (["bench", "sweep", "--device", "cpu", "--from", "64", "--to", "128", "--steps", "4",
                         "--repeats", "1", "--min-env-steps", "256"], {}, ()),
        "bench roofline": (["bench", "roofline", "--device", "cpu", "--num-envs", "64", "--steps", "4", "--repeats",
                            "1", "--gemm-size", "64", "--min-env-steps", "256"], {}, ()),
    }


def with_value(argv, flag, value):
    """argv with flag's value replaced (or flag and value appended when argv lacks it)."""
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
    else:
        out += [flag, value]
    return out


def without(argv, flag, takes_value=True):
    out = list(argv)
    if flag in out:
        index = out.index(flag)
        del out[index:index + (2 if takes_value else 1)]
    return out


# Number-shaped values for an integer flag: none of these is a small positive integer in plain digits.
BAD_NUMBERS = ["", " ", " 4", "4 ", "+4", "-4", "0x10", "1e300", "1e3", "inf", "-inf", "nan", "-0", "0",
               "99999999999999999999", "18446744073709551616", "9223372036854775808", "-1", "2.5", "4abc", "4,4",
               "\u0664", "\x7f"]
# For the benchmarks: only values that must be refused before anything is measured.
BAD_BENCH_NUMBERS = ["", "abc", "-1", "1e300", "nan", "2.5", "0x10", "99999999999999999999"]
NUMERIC_FLAGS = {
    "train": ["--num-envs", "--num-steps", "--total-steps", "--seed", "--checkpoint-every", "--stop-after",
              "--log-every", "--log-envs", "--log-queue"],
    "eval": ["--episodes", "--seed"],
    "h5 export": ["--iteration"],
    "bench env": ["--num-envs", "--steps", "--repeats", "--seed"],
    "bench train": ["--num-envs", "--num-steps", "--repeats", "--iterations"],
    "bench sweep": ["--from", "--to", "--steps", "--min-gain", "--recommend-fraction", "--repeats",
                    "--min-env-steps"],
    "bench roofline": ["--num-envs", "--steps", "--repeats", "--gemm-size", "--min-env-steps"],
}
# Flags whose value is a name from a fixed list.
NAME_FLAGS = {
    "step": ["--scenario", "--device"],
    "train": ["--scenario", "--device", "--preset"],
    "eval": ["--device"],
    "h5 export": ["--dataset"],
    "bench env": ["--scenario", "--device", "--mode"],
    "bench train": ["--scenario", "--device"],
    "bench sweep": ["--what", "--scenario", "--device", "--mode"],
    "bench roofline": ["--what", "--scenario", "--device"],
}
BAD_NAMES = ["", "nope", "CARTPOLE", "cartpole ", "cuda:99", "cuda:-1", "cuda:", "cpu,cuda", "../cartpole", "x" * 5000]


def flag_cases(fx):
    cases = []
    for command, (argv, fls, outs) in bases(fx).items():
        tag = command.replace(" ", "-")
        add = lambda label, args: cases.append(Case(f"flags/{tag}/{label}", args, dict(fls), outs))
        add("unknown-flag", argv + ["--bogus"])
        add("unknown-flag-with-value", argv + ["--bogus", "1"])
        add("unknown-flag-equals", argv + ["--bogus=1"])
        add("single-dash", argv + ["-x"])
        add("triple-dash", argv + ["---device", "cpu"])
        add("bare-double-dash", argv + ["--"])
        add("stray-positional", argv + ["stray"])
        add("empty-argument", argv + [""])
        add("help-after-bad-flag", argv + ["--bogus", "--help"])
        add("flag-without-dashes", argv + ["device", "cpu"])
        add("flag-equals-empty", argv + ["--device="] if "--device" in argv else argv + ["--out="])
        value_flags = [a for a in argv[1:] if a.startswith("--")]
        for flag in value_flags:
            index = argv.index(flag)
            takes_value = index + 1 < len(argv) and not argv[index + 1].startswith("--")
            if not takes_value:
                continue
            name = flag[2:]
            add(f"missing-value{flag}", without(argv, flag) + [flag])
            add(f"value-is-flag{flag}", with_value(argv, flag, "--help"))
            add(f"duplicated{flag}", argv + [flag, argv[index + 1]])
            add(f"equals-and-space{flag}", argv + [f"{flag}={argv[index + 1]}"])
            if name in ("input", "checkpoint", "dataset"):
                add(f"required-missing{flag}", without(argv, flag))
    for label, args in [("no-command", []), ("unknown-command", ["nope"]), ("bench-alone", ["bench"]),
                        ("bench-unknown", ["bench", "nope"]), ("h5-alone", ["h5"]), ("h5-unknown", ["h5", "nope"]),
                        ("h5-info-no-file", ["h5", "info"]), ("h5-info-two-files", ["h5", "info", "a.h5", "b.h5"]),
                        ("plot-no-dir", ["plot"]), ("version-extra", ["--version", "extra"]),
                        ("command-case", ["TRAIN"]), ("command-prefix", ["tra"])]:
        cases.append(Case(f"flags/top/{label}", args))
    # Without --device cpu a CPU-only build says once that it has no GPU: that line must not make an
    # error's stderr two lines.
    cases.append(Case("flags/train/auto-device-bad-seed", without(TRAIN, "--device") + ["--seed", "-1"]))
    cases.append(Case("flags/step/auto-device-bad-input", ["step", "--scenario", "cartpole", "--input", "no.csv",
                                                           "--output", "out.csv"]))
    return cases


def number_cases(fx):
    cases = []
    all_bases = bases(fx)
    for command, flags in NUMERIC_FLAGS.items():
        argv, fls, outs = all_bases[command]
        values = BAD_BENCH_NUMBERS if command.startswith("bench") else BAD_NUMBERS
        for flag in flags:
            for value in values:
                label = f"{flag}={value!r}"[:60]
                cases.append(Case(f"numbers/{command.replace(' ', '-')}/{label}", with_value(argv, flag, value),
                                  dict(fls), outs))
    # Real-valued flags, and values with a newline (argv cannot carry NUL; files do, see csv and toml).
    argv, fls, outs = all_bases["train"]
    for value in ["nan", "inf", "-inf", "1e308", "1e309", "", "abc", "-0", "0x1p4"]:
        cases.append(Case(f"numbers/train/--target-return={value!r}", argv + ["--target-return", value], {}, outs))
    for command in ("train", "eval", "bench env"):
        argv, fls, outs = all_bases[command]
        flag = NUMERIC_FLAGS[command][1]
        cases.append(Case(f"numbers/{command.replace(' ', '-')}/newline{flag}", with_value(argv, flag, "4\n5"),
                          dict(fls), outs))
    for command, flags in NAME_FLAGS.items():
        argv, fls, outs = all_bases[command]
        for flag in flags:
            for value in BAD_NAMES:
                cases.append(Case(f"names/{command.replace(' ', '-')}/{flag}={value[:20]!r}", with_value(argv, flag, value),
                                  dict(fls), outs))
    # --physics and --set: parsed by the same code in several commands.
    physics = ["", "masspole", "masspole=", "=0.1", "masspole=abc", "masspole=nan", "masspole=inf", "masspole=-1",
               "masspole=0", "masspole=0.2:0.05", "masspole=0.1:", "masspole=:0.2", "masspole=0.1:0.2:0.3",
               "masspole=1e300", "bogus=1", "masspole=0.1,,length=0.5", "masspole=0.1,masspole=0.2", ",",
               "masspole=0.1;length=0.5", "gravity=0x10"]
    for command in ("step", "train", "eval", "bench env", "bench train", "bench sweep"):
        argv, fls, outs = all_bases[command]
        for index, value in enumerate(physics if command in ("train", "step") else physics[::4]):
            cases.append(Case(f"physics/{command.replace(' ', '-')}/{index}:{value[:30]}", argv + ["--physics", value],
                              dict(fls), outs))
    sets = ["", "=", "learning_rate", "learning_rate=", "learning_rate=abc", "learning_rate=nan", "bogus=1",
            "hidden=[", "hidden=[64,", "hidden=[0]", "hidden=[-1]", 'hidden="64"', "num_envs=-4", "num_envs=4.5",
            "num_envs=99999999999999999999", "gamma=2", "activation=relu", "activation=\"nope\"", "cuda.num_envs=4",
            "physics.masspole=[0.2,0.05]", "physics.bogus=1", "physics=1", "presets.cleanrl.num_envs=1",
            "seed=-1", "a.b.c.d=1", "learning_rate=1e-3=2", "total_steps=0", "update_epochs=0",
            "num_minibatches=0", "num_minibatches=1000"]
    argv, fls, outs = all_bases["train"]
    for index, value in enumerate(sets):
        cases.append(Case(f"set/train/{index}:{value[:30]}", argv + ["--set", value], {}, outs))
    argv, fls, outs = all_bases["bench train"]
    for index, value in enumerate(sets[::3]):
        cases.append(Case(f"set/bench-train/{index}:{value[:30]}", argv + ["--set", value], {}, outs))
    return cases


# Paths: each kind of bad path in each place a command reads or writes one.
LONG_NAME = "n" * 300
DEEP_PATH = "/".join(["d" * 200] * 25)


def path_kinds(role):
    """(label, value, files) for a path that should be read (role 'in') or written ('out')."""
    kinds = [
        ("missing", "missing.x", {}),
        ("missing-folder", "nofolder/file.x", {}),
        ("folder", "adir", {"adir": ("dir",)}),
        ("fifo", "fifo", {"fifo": ("fifo",)}),
        ("dangling-symlink", "dangling", {"dangling": ("symlink", "nowhere.x")}),
        ("symlink-loop", "loop", {"loop": ("symlink", "loop")}),
        ("long-name", LONG_NAME, {}),
        ("deep-path", DEEP_PATH, {}),
        ("empty", "", {}),
        ("trailing-slash", "file.x/", {"file.x": b"x"}),
        ("newline-in-name", "a\nb.x", {}),
        ("file-as-folder", "afile/inner.x", {"afile": b"x"}),
        ("unwritable-folder", "ro/file.x", {"ro": ("ro-dir",)}),
        ("proc", "/proc/surge-fuzz.x", {}),
    ]
    if role == "in":
        kinds += [("dev-null", "/dev/null", {}), ("dev-full", "/dev/full", {}), ("dev-zero", "/dev/zero", {}),
                  ("empty-file", "empty.x", {"empty.x": b""}), ("proc-self-mem", "/proc/self/mem", {})]
    else:
        kinds += [("link-to-dev-null", "null.x", {"null.x": ("symlink", "/dev/null")}),
                  ("link-to-dev-full", "full.x", {"full.x": ("symlink", "/dev/full")}),
                  ("dash", "-", {})]
    return kinds


def path_cases(fx):
    cases = []
    all_bases = bases(fx)
    slots = [("step", "--input", "in"), ("step", "--output", "out"), ("train", "--config", "in"),
             ("train", "--out", "out"), ("train", "--resume", "in"), ("train", "--log-rollouts", "out"),
             ("eval", "--checkpoint", "in"), ("h5 info", None, "in"), ("h5 episodes", "--out", "out"),
             ("h5 export", "--out", "out"), ("plot", None, "in"), ("plot", "--out", "out"),
             ("bench env", "--json", "out"), ("bench sweep", "--svg", "out")]
    for command, flag, role in slots:
        argv, fls, outs = all_bases[command]
        for label, value, extra in path_kinds(role):
            if flag is None:
                args = list(argv)
                args[2 if command.startswith("h5") else 1] = value
            else:
                args = with_value(argv, flag, value)
            name = f"paths/{command.replace(' ', '-')}/{flag or 'positional'}:{label}"
            outputs = outs
            if role == "out":
                # A successful run writes where it was told, except through a FIFO or a link to a device,
                # which must not be replaced by a file.
                replaced = argv[argv.index(flag) + 1] if flag in argv else None
                outputs = tuple(o for o in outs if o != replaced)
                if label not in ("fifo", "link-to-dev-null", "link-to-dev-full"):
                    outputs += (value,)
                if label == "dangling-symlink":
                    outputs += ("nowhere.x",)  # written through the link, as a shell's > would
            cases.append(Case(name, args, {**fls, **extra}, outputs))
    return cases


def csv_cases(fx):
    cases = []
    argv, _, outs = bases(fx)["step"]
    for label, data in files.step_csv_cases():
        cases.append(Case(f"csv/step/{label}", argv, {"in.csv": data}, outs))
    pendulum = with_value(argv, "--scenario", "pendulum")
    for label, data in files.pendulum_csv_cases():
        cases.append(Case(f"csv/step/{label}", pendulum, {"in.csv": data}, outs))
    with open(os.path.join(fx["run"], "metrics.csv"), "rb") as f:
        metrics = f.read()
    for label, data in files.metrics_csv_cases(metrics):
        cases.append(Case(f"csv/plot/{label}", ["plot", "run", "--out", "fig.svg"],
                          {"run": ("dir",), "run/metrics.csv": data}, ("fig.svg",)))
    return cases


def toml_cases(fx, source_dir):
    cases = []
    with open(os.path.join(source_dir, "scenarios", "configs", "cartpole.toml"), "rb") as f:
        builtin = f.read()
    for label, data in files.toml_cases(builtin):
        cases.append(Case(f"toml/train/{label}", TRAIN + ["--config", "c.toml"], {"c.toml": data}, ("out",)))
    cases.append(Case("toml/train/folder-as-config", TRAIN + ["--config", "cdir"], {"cdir": ("dir",)}, ("out",)))
    cases.append(Case("toml/train/config-and-resume", TRAIN + ["--config", "c.toml", "--resume", "stopped/checkpoint.h5"],
                      {"c.toml": b"num_envs = 4\n", "stopped": ("copytree", fx["stopped"])}, ("out",)))
    return cases


def hdf5_cases(fx, scratch):
    """Checkpoints and rollout logs truncated, with bytes inverted, and with attributes and datasets edited."""
    cases = []
    os.makedirs(scratch, exist_ok=True)
    checkpoint = os.path.join(fx["stopped"], "checkpoint.h5")
    with open(checkpoint, "rb") as f:
        checkpoint_bytes = f.read()
    with open(fx["log"], "rb") as f:
        log_bytes = f.read()
    stopped = ("copytree", fx["stopped"])
    resume = TRAIN[:-2] + ["--resume", "stopped/checkpoint.h5"]
    evaluate = ["eval", "--checkpoint", "stopped/checkpoint.h5", "--episodes", "2", "--device", "cpu"]
    readers = [("h5-info", ["h5", "info", "log.h5"], ()),
               ("h5-episodes", ["h5", "episodes", "log.h5", "--out", "ep.csv"], ("ep.csv",)),
               ("h5-export", ["h5", "export", "log.h5", "--dataset", "obs", "--out", "x.csv"], ("x.csv",))]

    def checkpoint_case(label, data_or_path, index):
        spec = ("copy", data_or_path) if isinstance(data_or_path, str) else data_or_path
        damaged = {"stopped": stopped, "stopped/checkpoint.h5": spec}
        # Alternate between the two readers of a checkpoint; truncations go to both.
        if index is None or index % 2 == 0:
            cases.append(Case(f"hdf5/eval/{label}", evaluate, dict(damaged), ()))
        if index is None or index % 2 == 1:
            cases.append(Case(f"hdf5/train-resume/{label}", resume, dict(damaged), ("stopped",)))

    def log_case(label, data_or_path, index):
        spec = ("copy", data_or_path) if isinstance(data_or_path, str) else data_or_path
        subset = readers if index is None else [readers[index % len(readers)]]
        for name, argv, outs in subset:
            cases.append(Case(f"hdf5/{name}/{label}", argv, {"log.h5": spec}, outs))

    for label, data in files.truncations(checkpoint_bytes):
        checkpoint_case(label, data, None)
    for index, (label, data) in enumerate(files.byte_flips(checkpoint_bytes, 40, seed=1)):
        checkpoint_case(label, data, index)
    for label, data in files.truncations(log_bytes):
        log_case(label, data, None)
    for index, (label, data) in enumerate(files.byte_flips(log_bytes, 36, seed=2)):
        log_case(label, data, index)
    checkpoint_case("not-hdf5", b"\x89HDF\r\n\x1a\n" + b"\x00" * 4000, None)
    log_case("not-hdf5", b"\x89HDF\r\n\x1a\n" + b"\x00" * 4000, None)
    log_case("checkpoint-as-log", checkpoint, None)
    checkpoint_case("log-as-checkpoint", fx["log"], None)

    try:
        import h5py  # noqa: F401
    except ImportError:
        return cases
    rng = random.Random(3)
    for source, limit, make_case in ((checkpoint, 130, checkpoint_case), (fx["log"], 90, log_case)):
        edits = files.h5_edits(source)
        chosen = sorted(rng.sample(range(len(edits)), min(limit, len(edits))))
        for index in chosen:
            label, edit = edits[index]
            target = os.path.join(scratch, f"{os.path.basename(source)}.{index}.h5")
            files.apply_edit(source, target, edit)
            make_case(label, target, index)
    # --resume DIR: a run's folder stands for its checkpoint.h5; a folder without one is refused.
    cases.append(Case("hdf5/train-resume/run-folder", TRAIN[:-2] + ["--resume", "stopped"], {"stopped": stopped},
                      ("stopped",)))
    cases.append(Case("hdf5/train-resume/folder-without-checkpoint", TRAIN[:-2] + ["--resume", "emptydir"],
                      {"emptydir": ("dir",)}, ()))
    return cases


def run_cases(fx):
    """The run-folder inputs (--seeds, --overwrite, the evaluation keys, surge config show), the rank and MLP
    keys, --log-ranks, surge render and eval --video."""
    cases = []
    for value in ["", "a", "-1", "3-1", "1-", "-5", "1,1", "1-2000", "1,,2", "0x1", "1.5", " 1-2"]:
        cases.append(Case(f"run/train/--seeds={value!r}", TRAIN + ["--seeds", value], {}, ("out",)))
    cases.append(Case("run/train/--seeds-with-seed", TRAIN + ["--seeds", "1-2", "--seed", "3"], {}, ("out",)))
    cases.append(Case("run/train/--overwrite-file", TRAIN + ["--overwrite"], {"out": b"a file"}, ()))
    cases.append(Case("run/train/--out-holds-files", TRAIN, {"out": ("dir",), "out/x": b"x"}, ()))
    for value in ["eval_every=-1", "eval_every=x", "eval_episodes=0", "eval_episodes=1e12", "scenario=1",
                  "scenario=\"nope\""]:
        cases.append(Case(f"run/train/--set={value}", TRAIN + ["--set", value], {}, ("out",)))
    # This stop's inputs: the rank and MLP keys, --log-ranks, surge render and eval --video.
    for value in ["rank_timeout_s=0", "rank_timeout_s=-1", "rank_timeout_s=x", "rank_timeout_s=1e300",
                  "cpu_fused_mlp=maybe", "cpu_fused_mlp=2", "cuda_fused_mlp=maybe", "cuda_fused_mlp=1"]:
        cases.append(Case(f"run/train/--set={value}", TRAIN + ["--set", value], {}, ("out",)))
    for value in ["5", "", "x", "0,,1", "-1", "all"]:
        cases.append(Case(f"run/train/--log-ranks={value!r}",
                          TRAIN + ["--log-rollouts", "out/log.h5", "--log-ranks", value], {}, ("out",)))
    cases.append(Case("run/train/--log-ranks-without-log", TRAIN + ["--log-ranks", "0"], {}, ("out",)))
    # This stop's inputs: agents and grids, precision, pixel observations.
    for value in ["precision=fp16", "precision=1", "observation=rgb", "frame_size=0", "frame_size=100000",
                  "frame_stack=0", "frame_stack=x", "grayscale=2", "num_agents=0", "num_agents=-3", "encoder=huge",
                  "encoder=1"]:
        cases.append(Case(f"run/train/--set={value}", TRAIN + ["--set", value], {}, ("out",)))
    for label, args in [("agents-0", ["--agents", "0"]), ("agents-text", ["--agents", "x"]),
                        ("grid-bogus-key", ["--grid", "bogus=1,2"]), ("grid-shape-key", ["--grid", "num_envs=4,8"]),
                        ("grid-empty", ["--grid", "lr="]), ("grid-no-equals", ["--grid", "lr"]),
                        ("target-mode", ["--agents", "2", "--target-mode", "most"]),
                        ("learner-bogus", ["--agents", "2", "--learner", "fast"]),
                        ("learner-empty", ["--agents", "2", "--learner", ""]),
                        ("learner-without-agents", ["--learner", "batched"]),
                        ("learner-batched-pixels", ["--agents", "2", "--learner", "batched", "--set",
                                                    "observation=pixels"])]:
        cases.append(Case(f"run/train/{label}", TRAIN + args, {}, ("out",)))
    for label, args in [("precision", ["--precision", "fp8"]), ("precision-empty", ["--precision", ","]),
                        ("agents-0", ["--agents", "0"]), ("learner-bogus", ["--agents", "2", "--learner", "fast"]),
                        ("learner-empty", ["--agents", "2", "--learner", ""]),
                        ("learner-batched-pixels", ["--agents", "2", "--learner", "batched", "--set",
                                                    "observation=pixels"])]:
        cases.append(Case(f"run/bench-train/{label}", ["bench", "train", "--device", "cpu"] + args, {}, ()))
    # Pixel runs that are no longer refused as a whole (rollout logs, agents, bench train): their inputs.
    pixels = ["--set", "observation=pixels", "--set", "frame_size=36", "--set", "encoder=small"]
    for label, args, fls in [("log-no-folder", ["--log-rollouts", "nowhere/log.h5"], {}),
                             ("log-is-folder", ["--log-rollouts", "d.h5"], {"d.h5": ("dir",)}),
                             ("agents-frame-size-0", ["--agents", "2", "--set", "frame_size=0"], {}),
                             ("agents-grid-encoder", ["--grid", "encoder=small,huge"], {}),
                             ("agents-batched", ["--agents", "2", "--learner", "batched"], {})]:
        cases.append(Case(f"run/train/pixels-{label}", TRAIN + pixels + args, fls, ("out",)))
    for label, args in [("frame-size-0", ["--set", "frame_size=0"]), ("encoder", ["--set", "encoder=huge"]),
                        ("frame-stack-0", ["--set", "frame_stack=0"]), ("agents-0", ["--agents", "0"])]:
        cases.append(Case(f"run/bench-train/pixels-{label}", ["bench", "train", "--device", "cpu"] + pixels + args, {},
                          ()))
    for label, args in [("observation", ["--observation", "rgb"]), ("frame-size", ["--frame-size", "0"]),
                        ("frame-stack", ["--observation", "pixels", "--frame-stack", "99"])]:
        cases.append(Case(f"run/bench-env/{label}", ["bench", "env", "--device", "cpu", "--scenario", "cartpole"] + args,
                          {}, ()))
    render = ["render", "--scenario", "cartpole", "--device", "cpu"]
    for label, args in [("size-0x0", ["--size", "0x0", "--out", "o.png"]),
                        ("size-huge", ["--size", "100000x100000", "--out", "o.png"]),
                        ("size-text", ["--size", "abc", "--out", "o.png"]), ("format", ["--out", "o.bmp"]),
                        ("envs-0", ["--envs", "0", "--out", "o.gif"]), ("envs-17", ["--envs", "17", "--out", "o.gif"]),
                        ("state-short", ["--state", "1,2", "--out", "o.png"]),
                        ("state-trailing-comma", ["--state", "1,2,3,4,", "--out", "o.png"]),
                        ("state-nan", ["--state", "nan,0,0,0", "--out", "o.png"]),
                        ("state-far", ["--state", "1e7,0,0,0", "--out", "o.png"]),
                        ("steps-negative", ["--steps", "-1", "--out", "o.gif"]),
                        ("no-folder", ["--steps", "2", "--out", "nowhere/o.gif"]),
                        ("checkpoint-missing", ["--checkpoint", "no.h5", "--out", "o.gif"]),
                        ("png-envs", ["--envs", "4", "--out", "o.png"]),
                        ("checkpoint-with-scenario", ["--checkpoint", "ck.h5", "--out", "o.gif"]),
                        ("checkpoint-with-grayscale", ["--checkpoint", "ck.h5", "--grayscale", "--out", "o.gif"])]:
        fls = {"ck.h5": ("copy", fx["checkpoint"])} if "ck.h5" in args else {}
        base = render if "--checkpoint" not in args or label == "checkpoint-with-scenario" else render[:1] + render[3:]
        cases.append(Case(f"run/render/{label}", base + args, fls, ("o.png", "o.gif")))
    step_argv, step_files, _ = bases(fx)["step"]
    for label, target in [("frames-h5-no-folder", "nowhere/f.h5"), ("frames-h5-is-folder", "d.h5"),
                          ("frames-h5", "f.h5"), ("frames-hdf5-empty-name", ".h5")]:
        fls = dict(step_files, **({"d.h5": ("dir",)} if target == "d.h5" else {}))
        cases.append(Case(f"run/step/{label}", step_argv + ["--observation", "pixels", "--frames", target], fls,
                          ("out.csv", "f.h5", ".h5")))
    for label, value in [("format", "v.bmp"), ("no-folder", "nowhere/v.gif"), ("empty", "")]:
        cases.append(Case(f"run/eval/--video-{label}",
                          ["eval", "--checkpoint", "ck.h5", "--episodes", "1", "--device", "cpu", "--video", value],
                          {"ck.h5": ("copy", fx["checkpoint"])}, ()))
    cases.append(Case("run/eval/--video-size-without-video",
                      ["eval", "--checkpoint", "ck.h5", "--episodes", "1", "--device", "cpu", "--video-size", "64x64"],
                      {"ck.h5": ("copy", fx["checkpoint"])}, ()))
    show = ["config", "show", "--device", "cpu"]
    for label, args in [("bad-scenario", ["--scenario", "nope"]), ("bad-preset", ["--preset", "nope"]),
                        ("bad-set", ["--set", "bogus=1"]), ("no-subcommand", []), ("unknown-subcommand", None),
                        ("missing-config", ["--config", "no.toml"]), ("scenario-disagrees", ["--config", "c.toml"])]:
        argv = ["config", "nope"] if args is None else (["config"] if not args else show + args)
        fls = {"c.toml": b'scenario = "acrobot"\n'} if label == "scenario-disagrees" else {}
        if label == "scenario-disagrees":
            argv = argv + ["--scenario", "cartpole"]
        cases.append(Case(f"run/config-show/{label}", argv, fls, ()))
    return cases


def all_cases(fx, source_dir, scratch):
    cases = (flag_cases(fx) + number_cases(fx) + path_cases(fx) + csv_cases(fx) + toml_cases(fx, source_dir) +
             hdf5_cases(fx, scratch) + run_cases(fx))
    ids = [case.id for case in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise RuntimeError(f"case ids are not unique: {duplicates[:5]}")
    return cases
