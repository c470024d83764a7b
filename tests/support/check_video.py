#!/usr/bin/env python3
"""Videos from `surge render` and `surge eval --video`, decoded by independent readers.

Usage: check_video.py PATH/TO/surge

GIF (Surge's own encoder) decoded by Pillow: the frame count (one per step, plus the first state), the
size of the tiled frame, and the pictures themselves: the first frame of a one-environment video
against `surge render`'s PNG of the same reset state (the palette's rounding aside, and away from the
return drawn in the corner). MP4 through ffmpeg, counted by ffprobe (skipped, saying so, where ffmpeg
is not installed); without ffmpeg on PATH an .mp4 request is refused in one line that points to .gif.
A policy video: a short CartPole training run's checkpoint played by `surge eval --video` and by
`surge render --checkpoint`, as many frames as the evaluation stepped. SIGTERM while recording keeps
the frames so far as a whole video. Exits 77 (skipped) without
Pillow or NumPy.
"""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from PIL import Image
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)

surge = sys.argv[1]


def run(*args, env=None):
    result = subprocess.run([surge, *args, "--device", "cpu"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout


def gif_frames(path):
    with Image.open(path) as image:
        frames = []
        for index in range(image.n_frames):
            image.seek(index)
            frames.append(np.array(image.convert("RGB")))
        return frames


def check_random_videos(folder):
    tiled = os.path.join(folder, "tiled.gif")
    run("render", "--scenario", "cartpole", "--steps", "30", "--envs", "4", "--out", tiled)
    frames = gif_frames(tiled)
    assert len(frames) == 31 and frames[0].shape == (400, 600, 3), (len(frames), frames[0].shape)

    # One environment at 84x84: frame 0 is the reset state that --steps 0 draws as a PNG.
    for scenario in ("acrobot", "mountain_car", "pendulum"):
        single, picture = os.path.join(folder, "single.gif"), os.path.join(folder, "first.png")
        run("render", "--scenario", scenario, "--steps", "5", "--size", "84x84", "--seed", "7", "--out", single)
        run("render", "--scenario", scenario, "--steps", "0", "--size", "84x84", "--seed", "7", "--out", picture)
        first = gif_frames(single)[0].astype(int)
        with Image.open(picture) as image:
            expected = np.array(image.convert("RGB")).astype(int)
        away_from_text = np.ones((84, 84), bool)
        away_from_text[:12, :40] = False
        difference = np.abs(first - expected)[away_from_text]
        # The palette's white-to-colour ramps step by 1/16 of a colour's distance from white (< 16 levels);
        # blends of two scene colours fall back on the coarse cube (measured worst: 40 levels).
        assert difference.max() <= 64 and difference.mean() < 1.0, (scenario, difference.max(), difference.mean())
        assert len(gif_frames(single)) == 6

    mp4 = os.path.join(folder, "video.mp4")
    if shutil.which("ffmpeg") and shutil.which("ffprobe"):
        run("render", "--scenario", "mountain_car", "--steps", "20", "--size", "85x63", "--out", mp4)
        probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                "stream=nb_read_frames,width,height", "-of", "csv=p=0", mp4],
                               capture_output=True, text=True, check=True).stdout.strip()
        assert probe == "86,64,21", probe  # odd sides padded to even for H.264
    else:
        print("MP4 case skipped: ffmpeg or ffprobe is not installed")
    # Without ffmpeg on PATH: refused in one line, nothing written.
    bare = dict(os.environ, PATH=os.path.dirname(sys.executable))
    result = subprocess.run([surge, "render", "--scenario", "cartpole", "--out", mp4 + ".x.mp4"], capture_output=True,
                            text=True, env=bare)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and ".gif" in lines[0] and "ffmpeg" in lines[0], result
    assert not os.path.exists(mp4 + ".x.mp4")


def check_policy_video(folder):
    run_folder = os.path.join(folder, "run")
    run("train", "--scenario", "cartpole", "--total-steps", "4096", "--seed", "3", "--out", run_folder)
    checkpoint = os.path.join(run_folder, "checkpoint.h5")
    video = os.path.join(folder, "policy.gif")
    out = run("eval", "--checkpoint", checkpoint, "--episodes", "3", "--video", video)
    longest = float(re.search(r"max ([0-9.]+)\)", out).group(1))
    # Every episode has ended by the first check (every 32 steps) after the longest one's end.
    expected = 1 + min(500, 32 * math.ceil(longest / 32))
    frames = gif_frames(video)
    assert len(frames) == expected, (len(frames), expected, out)
    assert f"video of {expected} frames" in out, out
    again = os.path.join(folder, "again.gif")
    run("render", "--checkpoint", checkpoint, "--envs", "3", "--size", "120x80", "--out", again)
    frames = gif_frames(again)
    assert len(frames) == expected and frames[0].shape == (160, 240, 3), (len(frames), frames[0].shape)


def check_stopped_video(folder):
    """SIGTERM while recording: exit 143, one line saying so, and the video of the frames so far, whole
    (Pillow decodes it); no partial file left behind."""
    import signal
    import time
    out = os.path.join(folder, "stopped.gif")
    partial = out + ".partial.gif"
    child = subprocess.Popen([surge, "render", "--scenario", "acrobot", "--steps", "100000", "--size", "64x64",
                              "--device", "cpu", "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.time() + 60
    while not os.path.exists(partial) and time.time() < deadline and child.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143, (child.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "stopped by SIGTERM" in lines[0] and out in lines[0], err
    count = int(re.search(r"the (\d+) frames", lines[0]).group(1))
    frames = gif_frames(out)
    assert 1 <= len(frames) == count < 100001, (len(frames), count)
    assert not os.path.exists(partial), os.listdir(folder)


def main():
    with tempfile.TemporaryDirectory() as folder:
        check_random_videos(folder)
        check_policy_video(folder)
        check_stopped_video(folder)
    print("check_video: OK")


if __name__ == "__main__":
    main()
