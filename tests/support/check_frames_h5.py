#!/usr/bin/env python3
"""`surge step --observation pixels --frames FILE.h5` read back with h5py.

Usage: check_frames_h5.py PATH/TO/surge SCRATCH_DIR

Steps random CartPole states once, writing the frames both as PNGs (--frames DIR) and as one HDF5 file
(--frames FILE.h5), grey and RGB; the HDF5 dataset must equal the PNGs frame for frame, be chunked
a few frames at a time and compressed with deflate; `surge h5 info` must list it with its stored
size. Also: a path in a missing folder is refused (exit 2, one line) and nothing is written. Prints the
compression ratio. Exits 77 (skipped) when h5py, NumPy or Pillow is missing.
"""
import os
import shutil
import subprocess
import sys

try:
    import h5py
    import numpy as np
    from PIL import Image
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)

surge, scratch = sys.argv[1], sys.argv[2]
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
ROWS = 64
rng = np.random.default_rng(16)
states = os.path.join(scratch, "in.csv")
with open(states, "w") as f:
    f.write("s_x,s_x_dot,s_theta,s_theta_dot,action\n")
    for _ in range(ROWS):
        f.write(f"{rng.uniform(-2.4, 2.4)},{rng.uniform(-1, 1)},{rng.uniform(-0.2, 0.2)},{rng.uniform(-1, 1)},"
                f"{rng.integers(0, 2)}\n")


def step(frames, *extra):
    return subprocess.run([surge, "step", "--scenario", "cartpole", "--input", states, "--output",
                           os.path.join(scratch, "next.csv"), "--device", "cpu", "--observation", "pixels",
                           "--frames", frames, *extra], capture_output=True, text=True)


for grey in (True, False):
    flags = ["--grayscale"] if grey else []
    channels = 1 if grey else 3
    folder, path = os.path.join(scratch, f"png{channels}"), os.path.join(scratch, f"frames{channels}.h5")
    for target in (folder, path):
        done = step(target, *flags)
        assert done.returncode == 0, done.stderr
    with h5py.File(path, "r") as f:
        frames = f["frames"]
        assert frames.shape == (1, ROWS, 84, 84, channels), frames.shape
        assert frames.dtype == np.uint8, frames.dtype
        assert frames.compression == "gzip", frames.compression
        assert frames.chunks == (1, 4, 84, 84, channels), frames.chunks
        values = frames[0]
        ratio = frames.id.get_storage_size() / frames.nbytes
        assert f.attrs["frame_shape"].tolist() == [84, 84, channels]
    for row in range(ROWS):
        png = np.asarray(Image.open(os.path.join(folder, f"row_{row + 1:06d}.png")))
        assert np.array_equal(values[row], png.reshape(84, 84, channels)), f"row {row + 1} differs from its PNG"
    assert len(np.unique(values)) > 2, "blank frames"
    print(f"{ROWS} CartPole frames 84x84x{channels}: stored {100 * ratio:.2f}% of raw")
    assert ratio < 0.15, ratio
    info = subprocess.run([surge, "h5", "info", path], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    line = next(line for line in info.stdout.splitlines() if line.strip().startswith("frames"))
    assert "deflate(1)" in line and "% of" in line, line

# A file in a folder that does not exist: one line, exit 2, nothing written (not even the CSV).
os.remove(os.path.join(scratch, "next.csv"))
missing = os.path.join(scratch, "no_such_folder", "frames.h5")
refused = step(missing, "--grayscale")
assert refused.returncode == 2, (refused.returncode, refused.stderr)
lines = refused.stderr.strip().splitlines()
assert len(lines) == 1 and lines[0].startswith("surge step: --frames") and "folder" in lines[0], refused.stderr
assert not os.path.exists(os.path.join(scratch, "next.csv")) and not os.path.exists(os.path.dirname(missing))
print("ok")
