"""Damaged inputs for fuzz_cli.py: CSV and TOML texts, and HDF5 files made by a real run, then broken.

Everything here is deterministic: byte offsets come from a seeded generator, and h5py edits are listed.
"""

import os
import random
import shutil
import subprocess

# Inputs for `surge step`: (label, bytes). The valid file steps two CartPole states.
STEP_CSV_VALID = b"s_x,s_x_dot,s_theta,s_theta_dot,action\n0.01,0.02,0.03,0.04,1\n-0.01,0,0.02,-0.03,0\n"


def step_csv_cases():
    header = b"s_x,s_x_dot,s_theta,s_theta_dot,action\n"
    row = b"0.01,0.02,0.03,0.04,1\n"
    cases = [
        ("valid", STEP_CSV_VALID),
        ("bom", b"\xef\xbb\xbf" + STEP_CSV_VALID),
        ("crlf", STEP_CSV_VALID.replace(b"\n", b"\r\n")),
        ("cr-only", STEP_CSV_VALID.replace(b"\n", b"\r")),
        ("empty", b""),
        ("header-only", header),
        ("newline-only", b"\n"),
        ("no-trailing-newline", header + row.rstrip(b"\n")),
        ("missing-column", b"s_x,s_x_dot,s_theta,action\n0.01,0.02,0.03,1\n"),
        ("missing-action", b"s_x,s_x_dot,s_theta,s_theta_dot\n0.01,0.02,0.03,0.04\n"),
        ("duplicate-column", b"s_x,s_x,s_x_dot,s_theta,s_theta_dot,action\n0.01,0.01,0.02,0.03,0.04,1\n"),
        ("extra-cells", header + b"0.01,0.02,0.03,0.04,1,7,8\n"),
        ("short-row", header + b"0.01,0.02\n"),
        ("trailing-comma", header + b"0.01,0.02,0.03,0.04,1,\n"),
        ("empty-cell", header + b"0.01,,0.03,0.04,1\n"),
        ("space-cell", header + b"0.01, ,0.03,0.04,1\n"),
        ("quoted-cells", header + b'"0.01","0.02","0.03","0.04","1"\n'),
        ("semicolons", b"s_x;s_x_dot;s_theta;s_theta_dot;action\n0.01;0.02;0.03;0.04;1\n"),
        ("tabs", STEP_CSV_VALID.replace(b",", b"\t")),
        ("blank-lines", header + b"\n\n" + row + b"\n"),
        ("binary-garbage", bytes(random.Random(7).randrange(256) for _ in range(4096))),
        ("nul-bytes", header + b"0.01,0.02\x00,0.03,0.04,1\n"),
        ("nul-header", b"s_x\x00,s_x_dot,s_theta,s_theta_dot,action\n" + row),
        ("huge-line", header + b"0.01" + b"1" * 2_000_000 + b",0.02,0.03,0.04,1\n"),
        ("many-columns", header.rstrip(b"\n") + b"".join(b",c%d" % i for i in range(20000)) + b"\n"),
        ("latin1", header + b"0.01,0.02,0.03,0.04,\xe9\n"),
        ("utf16", STEP_CSV_VALID.decode().encode("utf-16")),
        ("action-fraction", header + b"0.01,0.02,0.03,0.04,0.5\n"),
        ("action-negative", header + b"0.01,0.02,0.03,0.04,-1\n"),
        ("action-large", header + b"0.01,0.02,0.03,0.04,2\n"),
        ("action-huge", header + b"0.01,0.02,0.03,0.04,99999999999999999999\n"),
        ("action-1e300", header + b"0.01,0.02,0.03,0.04,1e300\n"),
        ("action-nan", header + b"0.01,0.02,0.03,0.04,nan\n"),
        ("action-hex", header + b"0.01,0.02,0.03,0.04,0x1\n"),
        ("action-plus", header + b"0.01,0.02,0.03,0.04,+1\n"),
        ("action-minus-zero", header + b"0.01,0.02,0.03,0.04,-0\n"),
        ("state-nan", header + b"nan,0.02,0.03,0.04,1\n"),
        ("state-inf", header + b"0.01,inf,0.03,0.04,1\n"),
        ("state-minus-inf", header + b"0.01,0.02,-inf,0.04,1\n"),
        ("state-1e300", header + b"1e300,0.02,0.03,0.04,1\n"),
        ("state-1e-320", header + b"1e-320,0.02,0.03,0.04,1\n"),
        ("state-hex-float", header + b"0x1p-3,0.02,0.03,0.04,1\n"),
        ("state-text", header + b"abc,0.02,0.03,0.04,1\n"),
        ("state-two-dots", header + b"0.0.1,0.02,0.03,0.04,1\n"),
        ("many-rows", header + row * 50000),
    ]
    return cases


# Pendulum takes a continuous action: the same shapes of damage on its one action column.
def pendulum_csv_cases():
    header = b"s_theta,s_theta_dot,action\n"
    return [
        ("pendulum-valid", header + b"0.5,0.1,1.0\n"),
        ("pendulum-action-nan", header + b"0.5,0.1,nan\n"),
        ("pendulum-action-1e300", header + b"0.5,0.1,1e300\n"),
        ("pendulum-action-0-column", b"s_theta,s_theta_dot,action_0\n0.5,0.1,1.0\n"),
        ("pendulum-action-1-column", b"s_theta,s_theta_dot,action_0,action_1\n0.5,0.1,1.0,2.0\n"),
    ]


# metrics.csv inputs for `surge plot`, built around the header a real run wrote.
def metrics_csv_cases(real_metrics):
    lines = real_metrics.splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    columns = header.rstrip(b"\r\n").split(b",")
    last = rows[-1].rstrip(b"\r\n").split(b",")

    def with_cell(name, value):
        cells = list(last)
        cells[columns.index(name)] = value
        return header + b"".join(rows[:-1]) + b",".join(cells) + b"\n"

    def without_column(name):
        index = columns.index(name)
        keep = lambda line: b",".join(c for i, c in enumerate(line.rstrip(b"\r\n").split(b",")) if i != index) + b"\n"
        return b"".join(keep(line) for line in lines)

    cases = [
        ("valid", real_metrics),
        ("bom", b"\xef\xbb\xbf" + real_metrics),
        ("crlf", real_metrics.replace(b"\n", b"\r\n")),
        ("empty", b""),
        ("header-only", header),
        ("extra-cells", header + b"".join(rows) + b",".join(last) + b",1,2\n"),
        ("short-row", header + b"".join(rows) + b"1,2\n"),
        ("binary-garbage", bytes(random.Random(11).randrange(256) for _ in range(4096))),
        ("huge-line", header + b"1," + b"9" * 2_000_000 + b"\n"),
        ("nul-bytes", real_metrics.replace(b",", b"\x00,", 3)),
        ("all-nan-returns", header + b"".join(b",".join(c if i != columns.index(b"episodic_return_mean") else b"nan"
                                                        for i, c in enumerate(r.rstrip(b"\n").split(b","))) + b"\n"
                                              for r in rows)),
    ]
    for name in (b"global_step", b"wall_time_s", b"episodic_return_mean", b"iteration"):
        cases.append(("missing-" + name.decode(), without_column(name)))
        for label, value in (("nan", b"nan"), ("inf", b"inf"), ("minus-inf", b"-inf"), ("1e300", b"1e300"),
                             ("negative", b"-5"), ("text", b"abc"), ("empty", b"")):
            cases.append((f"{name.decode()}-{label}", with_cell(name, value)))
    cases.append(("steps-backwards", header + b"".join(reversed(rows))))
    cases.append(("one-row", header + rows[-1]))
    cases.append(("many-rows", header + b"".join(rows) * 2000))
    return cases


# TOML configs for `surge train --config`: (label, text). Sizes stay tiny where a config would be accepted.
def toml_cases(builtin_config):
    good = b"num_envs = 4\nnum_steps = 8\ntotal_steps = 64\n"
    cases = [
        ("builtin", builtin_config),
        ("valid-small", good),
        ("empty", b""),
        ("comment-only", b"# nothing\n"),
        ("bom", b"\xef\xbb\xbf" + good),
        ("crlf", good.replace(b"\n", b"\r\n")),
        ("syntax-unclosed-string", b'activation = "tanh\n'),
        ("syntax-unclosed-array", b"hidden = [64, 64\n"),
        ("syntax-no-value", b"num_envs =\n"),
        ("syntax-no-equals", b"num_envs 4\n"),
        ("syntax-duplicate-key", b"num_envs = 4\nnum_envs = 8\n"),
        ("syntax-bad-table", b"[physics\nmasspole = 0.1\n"),
        ("syntax-garbage", bytes(random.Random(13).randrange(256) for _ in range(2048))),
        ("syntax-nul", b"num_envs = 4\x00\n"),
        ("unknown-key", good + b"bogus_key = 1\n"),
        ("unknown-table", good + b"[bogus]\nx = 1\n"),
        ("unknown-physics", good + b"[physics]\nbogus = 1.0\n"),
        ("huge-key", good + b"k" * 100_000 + b" = 1\n"),
        ("huge-string", good + b'activation = "' + b"t" * 1_000_000 + b'"\n'),
        ("deep-nesting", good + b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n"),
        ("deep-inline-tables", good + b"x = " + b"{a=" * 2000 + b"1" + b"}" * 2000 + b"\n"),
    ]
    wrong_values = [
        ("num_envs", [b'"4"', b"4.5", b"-4", b"0", b"true", b"[4]", b"{a=1}", b"99999999999999999999",
                      b"9223372036854775807", b"1e300", b"nan", b"inf", b"0x10", b"2024-01-01"]),
        ("num_steps", [b"-1", b"0", b"4294967296", b'"8"', b"8.0"]),
        ("total_steps", [b"-64", b"0", b"1e3", b"9223372036854775807"]),
        ("seed", [b"-1", b"1.5", b'"one"', b"18446744073709551616"]),
        ("learning_rate", [b"nan", b"inf", b"-1.0", b"0.0", b'"fast"', b"1e300", b"[0.1]"]),
        ("gamma", [b"nan", b"2.0", b"-0.5", b"true"]),
        ("gae_lambda", [b"1.5", b"-inf"]),
        ("num_minibatches", [b"0", b"-1", b"3", b"1000000"]),
        ("update_epochs", [b"0", b"-2", b"1e9"]),
        ("clip_coef", [b"-0.2", b"nan"]),
        ("ent_coef", [b"inf"]),
        ("max_grad_norm", [b"-1.0", b"nan"]),
        ("adam_eps", [b"0.0", b"-1e-5"]),
        ("anneal_lr", [b"1", b'"yes"']),
        ("obs_clip", [b"-10.0", b"nan"]),
        ("hidden", [b"[]", b"[0]", b"[-64]", b"[64.5]", b'["a"]', b"[[64]]", b"64", b"[100000000, 100000000]",
                    b"[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]),
        ("activation", [b'"sigmoid"', b'""', b"1", b"[\"tanh\"]"]),
        ("cpu_threads", [b"-1", b"100000"]),
    ]
    for key, values in wrong_values:
        for value in values:
            label = value.decode(errors="replace").replace(" ", "")[:24]
            cases.append((f"{key}={label}", good + key.encode() + b" = " + value + b"\n"))
    cases += [
        ("scalar-as-table", good + b"[num_envs]\nx = 1\n"),
        ("physics-scalar", good + b"physics = 1\n"),
        ("physics-nested", good + b"[physics]\nmasspole = { low = 0.1 }\n"),
        ("physics-range-reversed", good + b"[physics]\nmasspole = [0.2, 0.05]\n"),
        ("physics-range-three", good + b"[physics]\nmasspole = [0.05, 0.1, 0.2]\n"),
        ("physics-nan", good + b"[physics]\nmasspole = nan\n"),
        ("physics-negative", good + b"[physics]\nmasspole = -1.0\n"),
        ("physics-zero-length", good + b"[physics]\nlength = 0.0\n"),
        ("physics-huge-gravity", good + b"[physics]\ngravity = 1e300\n"),
        ("physics-string", good + b'[physics]\nmasspole = "heavy"\n'),
        ("cuda-scalar", good + b"cuda = 1\n"),
        ("presets-scalar", good + b"presets = 1\n"),
        ("presets-nested-bad", good + b"[presets.x]\nnum_envs = -1\n"),
        ("array-of-tables", good + b"[[physics]]\nmasspole = 0.1\n"),
    ]
    return cases


def run_checked(argv, cwd):
    result = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"fixture command failed ({result.returncode}): {' '.join(argv)}\n{result.stderr.decode()}")


def make_fixtures(surge, folder):
    """A finished short run (run/), a run stopped after one of two iterations (stopped/), their rollout log."""
    os.makedirs(folder, exist_ok=True)
    small = ["--device", "cpu", "--num-envs", "4", "--num-steps", "32"]
    run_checked([surge, "train", *small, "--total-steps", "1024", "--out", "run", "--log-rollouts", "run/rollouts.h5",
                 "--log-every", "1"], folder)
    run_checked([surge, "train", *small, "--total-steps", "256", "--stop-after", "1", "--out", "stopped"], folder)
    return {
        "run": os.path.join(folder, "run"),
        "stopped": os.path.join(folder, "stopped"),
        "checkpoint": os.path.join(folder, "run", "checkpoint.h5"),
        "log": os.path.join(folder, "run", "rollouts.h5"),
    }


def truncations(data):
    """Labels name the cut by position, not by size, so that they stay the same when the format grows."""
    size = len(data)
    cuts = [("0", 0), ("1", 1), ("8", 8), ("96", 96), ("512", 512), ("2048", 2048), ("quarter", size // 4),
            ("half", size // 2), ("three-quarters", 3 * size // 4), ("last-byte", size - 1)]
    return [(f"truncated-{label}", data[:cut]) for label, cut in cuts if cut < size]


def byte_flips(data, count, seed):
    """count copies, each with one run of 1 to 8 bytes inverted at a seeded offset (half in the first 4 KiB,
    where HDF5 keeps its superblock and root structures)."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        limit = min(len(data), 4096) if index % 2 == 0 else len(data)
        offset = rng.randrange(limit)
        length = rng.randint(1, 8)
        damaged = bytearray(data)
        for i in range(offset, min(offset + length, len(damaged))):
            damaged[i] ^= 0xFF
        out.append((f"flip-{index:02d}", bytes(damaged)))  # (offset, length) follow from the seed
    return out


def h5_edits(path):
    """(label, function(h5py.File)) edits for every attribute and dataset of the HDF5 file at path."""
    import h5py
    import numpy as np

    edits = []
    with h5py.File(path, "r") as f:
        objects = [("", f)]
        f.visititems(lambda name, obj: objects.append((name, obj)))
        attributes = [(name, key, obj.attrs[key]) for name, obj in objects for key in obj.attrs.keys()]
        datasets = [(name, obj.shape, obj.dtype) for name, obj in objects if isinstance(obj, h5py.Dataset)]

    def attr_edit(name, key, make):
        def edit(f):
            obj = f[name] if name else f
            value = make(obj.attrs[key])
            del obj.attrs[key]
            if value is not None:
                obj.attrs[key] = value
        return edit

    for name, key, value in attributes:
        where = f"{name or '/'}@{key}"
        edits.append((f"attr-deleted:{where}", attr_edit(name, key, lambda v: None)))
        is_text = isinstance(value, (str, bytes)) or (hasattr(value, "dtype") and value.dtype.kind in "OSU")
        if is_text:
            edits.append((f"attr-as-int:{where}", attr_edit(name, key, lambda v: np.int64(7))))
            edits.append((f"attr-empty:{where}", attr_edit(name, key, lambda v: "")))
            edits.append((f"attr-huge:{where}", attr_edit(name, key, lambda v: "x" * 1_000_000)))
        else:
            edits.append((f"attr-as-text:{where}", attr_edit(name, key, lambda v: "seven")))
            edits.append((f"attr-negative:{where}", attr_edit(name, key, lambda v: np.int64(-1))))
            edits.append((f"attr-huge:{where}", attr_edit(name, key, lambda v: np.int64(2**62))))
            edits.append((f"attr-nan:{where}", attr_edit(name, key, lambda v: np.float64("nan"))))
            edits.append((f"attr-array:{where}", attr_edit(name, key, lambda v: np.array([1, 2, 3], dtype=np.int64))))

    def dataset_edit(name, make):
        def edit(f):
            old = f[name][()]
            del f[name]
            data = make(old)
            if data is not None:
                f.create_dataset(name, data=data)
        return edit

    for name, shape, dtype in datasets:
        edits.append((f"dataset-deleted:{name}", dataset_edit(name, lambda d: None)))
        edits.append((f"dataset-reshaped:{name}", dataset_edit(name, lambda d: np.resize(d, (d.size + 3,)))))
        edits.append((f"dataset-empty:{name}", dataset_edit(name, lambda d: np.zeros((0,) + d.shape[1:], d.dtype))))
        other = np.int8 if dtype.kind == "f" else np.float64
        edits.append((f"dataset-retyped:{name}", dataset_edit(name, lambda d, t=other: d.astype(t))))
        edits.append((f"dataset-as-text:{name}", dataset_edit(name, lambda d: np.bytes_("not numbers"))))
        if dtype.kind == "f":
            edits.append((f"dataset-nan:{name}", dataset_edit(name, lambda d: np.full(d.shape, np.nan, d.dtype))))
    edits.append(("group-as-dataset:parameters", lambda f: (f.__delitem__("parameters"),
                                                           f.create_dataset("parameters", data=[1.0]))
                  if "parameters" in f else None))
    return edits


def apply_edit(source, target, edit):
    import h5py

    shutil.copyfile(source, target)
    with h5py.File(target, "r+") as f:
        edit(f)
