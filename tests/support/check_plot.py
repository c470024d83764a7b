#!/usr/bin/env python3
"""surge plot and the roofline figure end to end, through the real program.

Short CPU training runs (three seeds of one config, one run of another), their figures parsed as XML: the
group drawn as one band and one mean line that the band encloses and that equals the seeds' mean in
metrics.csv, the threshold at 475 in data coordinates (read back through the tick labels), k/M tick
labels, a y range with room above the highest value, legend swatches outside the data area, two groups in
two colours, --smooth as a trailing moving average of metrics.csv, empty and `nan` cells as gaps, and the
bad-input paths (exit 2, one line, no file left). Then the roofline figures of `surge bench roofline`:
marker labels, boxed from their font size and text length, overlap neither each other, the legend nor
the frame."""
import csv
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

surge = sys.argv[1]
SVG = "{http://www.w3.org/2000/svg}"
STEPS = 12800  # 50 iterations of CartPole's default 16 envs x 16 steps


def train(out, seed, *extra):
    subprocess.run([surge, "train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", str(STEPS),
                    "--seed", str(seed), "--out", out, *extra],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def plot(*args):
    result = subprocess.run([surge, "plot", *args], capture_output=True, text=True)
    assert result.returncode == 0, (args, result.stderr)
    return result


def elements(root, tag, cls):
    return [e for e in root.iter(SVG + tag) if e.get("class") == cls]


def path_pieces(d):
    """The pieces of an SVG path written as 'M x,y L x,y ... [Z]': a list of point lists."""
    pieces = []
    for token in d.split():
        if token == "M":
            pieces.append([])
        elif token not in ("L", "Z"):
            x, y = token.split(",")
            pieces[-1].append((float(x), float(y)))
    return pieces


def si_value(label):
    assert re.fullmatch(r"-?\d+(\.\d+)?[kMG]?", label), f"tick label '{label}' is not in the 0, 100k, 1.5M form"
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(label[-1], 1.0)
    value = float(label.rstrip("kMG")) * scale
    assert scale > 1 or abs(value) < 1000, f"tick label '{label}' should carry k, M or G"
    return value


def axis_map(root, cls, position):
    """From the tick labels: (pixel -> data) as a linear function fitted to (pixel, value) pairs, and the labels."""
    ticks = [(position(t), si_value(t.text)) for t in elements(root, "text", cls)]
    assert len(ticks) >= 3, ticks
    (p0, v0), (p1, v1) = ticks[0], ticks[-1]
    to_data = lambda p: v0 + (p - p0) * (v1 - v0) / (p1 - p0)
    for p, v in ticks:  # every tick on the same straight line
        assert abs(to_data(p) - v) <= 0.011 * abs(to_data(1) - to_data(0)), (cls, ticks)  # coordinates to 0.01 px
    return to_data, [t.text for t in elements(root, "text", cls)]


def figure(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg", root.tag
    # x tick labels are centred on their tick; y tick labels have their baseline 4 px below it.
    x_data, x_labels = axis_map(root, "x-tick", lambda t: float(t.get("x")))
    y_data, y_labels = axis_map(root, "y-tick", lambda t: float(t.get("y")) - 4)
    (frame,) = elements(root, "rect", "data-area")
    area = [float(frame.get(k)) for k in ("x", "y", "width", "height")]
    return root, x_data, y_data, x_labels, area


def column(csv_path, name):
    """A metrics.csv column: (global_step, value or None where the cell is empty or nan)."""
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    return [(float(r["global_step"]), None if r[name] in ("", "nan") else float(r[name])) for r in rows]


def trailing_mean(values, k):
    out = []
    for i, v in enumerate(values):
        window = [w for w in values[max(0, i - k + 1):i + 1] if w is not None]
        out.append(None if v is None else sum(window) / len(window))
    return out


def check_single_line(svg, expected):
    """One run drawn as a line: its points, in data coordinates, are the (step, value) pairs given."""
    root, x_data, y_data, _, _ = figure(svg)
    (line,) = elements(root, "path", "run")
    points = [p for piece in path_pieces(line.get("d")) for p in piece]
    expected = [(x, y) for x, y in expected if y is not None]
    assert len(points) == len(expected), (len(points), len(expected))
    x_pixel = abs(x_data(1) - x_data(0)) * 0.011  # one coordinate rounding, in data units
    y_pixel = abs(y_data(1) - y_data(0)) * 0.011
    for (px, py), (x, y) in zip(points, expected):
        assert abs(x_data(px) - x) <= x_pixel and abs(y_data(py) - y) <= y_pixel, ((x_data(px), y_data(py)), (x, y))
    return root


def boxes_overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


with tempfile.TemporaryDirectory() as tmp:
    group = os.path.join(tmp, "group")
    for seed in (1, 2, 3):
        train(os.path.join(group, f"seed{seed}"), seed)
    other = os.path.join(tmp, "other")
    train(other, 1, "--set", "learning_rate=1e-3")

    # Three seeds of one config: one band, one mean line, the default output path.
    plot(group)
    root, x_data, y_data, x_labels, area = figure(os.path.join(group, "learning_curve.svg"))
    (band,), (mean,) = elements(root, "path", "band"), elements(root, "path", "mean")
    assert not elements(root, "path", "run")
    (mean_points,) = path_pieces(mean.get("d"))
    (band_points,) = path_pieces(band.get("d"))
    upper, lower = band_points[:len(mean_points)], band_points[len(mean_points):][::-1]
    assert len(upper) == len(lower) == len(mean_points)
    for (mx, my), (ux, uy), (lx, ly) in zip(mean_points, upper, lower):
        assert mx == ux == lx and uy - 0.01 <= my <= ly + 0.01, (mx, my, uy, ly)
    # The mean is the seeds' mean at each step of seed1 that all three have a value for.
    seeds = [dict(column(os.path.join(group, f"seed{s}", "metrics.csv"), "return_last100")) for s in (1, 2, 3)]
    steps = [x for x, _ in column(os.path.join(group, "seed1", "metrics.csv"), "return_last100")
             if all(s.get(x) is not None for s in seeds)]
    assert len(steps) == len(mean_points), (len(steps), len(mean_points))
    y_pixel = abs(y_data(1) - y_data(0)) * 0.011
    for (px, py), step in zip(mean_points, steps):
        assert abs(x_data(px) - step) <= abs(x_data(1) - x_data(0)) * 0.011, (x_data(px), step)
        expected = sum(s[step] for s in seeds) / 3
        assert abs(y_data(py) - expected) <= y_pixel, (step, y_data(py), expected)
    legend = " ".join(t.text for t in elements(root, "text", "legend-label"))
    assert "mean of 3 seeds, band: min\u2013max" in legend, legend
    # Legend swatches lie outside the data area.
    left, top, width, height = area
    for swatch in elements(root, "rect", "legend-swatch"):
        sx, sy, sw, sh = (float(swatch.get(k)) for k in ("x", "y", "width", "height"))
        assert not boxes_overlap((sx, sy, sx + sw, sy + sh), (left, top, left + width, top + height)), "swatch on data"
    # The threshold: dashed, at 475 in data coordinates, inside the frame.
    (threshold,) = elements(root, "line", "threshold")
    assert threshold.get("y1") == threshold.get("y2") and threshold.get("stroke-dasharray")
    assert abs(y_data(float(threshold.get("y1"))) - 475) <= y_pixel, y_data(float(threshold.get("y1")))
    assert top < float(threshold.get("y1")) < top + height
    assert "threshold 475" in [t.text for t in elements(root, "text", "threshold-label")]
    # Ticks read 0, 2k, 4k, ...; the y range leaves room above the highest value drawn (band or threshold).
    assert any(label.endswith("k") for label in x_labels), x_labels
    highest = max(475, max(y_data(y) for _, y in band_points))
    lowest = min(y_data(y) for _, y in band_points)
    frame_top, frame_bottom = y_data(top), y_data(top + height)
    assert frame_top - highest >= 0.04 * (frame_top - frame_bottom), (frame_top, highest, frame_bottom)
    assert lowest - frame_bottom >= 0.04 * (frame_top - frame_bottom), (lowest, frame_bottom)

    # Two configs: two groups, two colours, the legend naming what differs.
    two = os.path.join(tmp, "two.svg")
    plot(group, other, "--out", two)
    root = ET.parse(two).getroot()
    (mean,), (run,) = elements(root, "path", "mean"), elements(root, "path", "run")
    assert len(elements(root, "path", "band")) == 1
    assert mean.get("stroke").lower() != run.get("stroke").lower(), (mean.get("stroke"), run.get("stroke"))
    labels = [t.text for t in elements(root, "text", "legend-label")]
    assert len(labels) == 2 and all("learning_rate" in label for label in labels), labels

    # --smooth 5: a trailing mean over 5 iterations of the run's own metrics.csv values.
    seed1 = os.path.join(group, "seed1")
    raw = column(os.path.join(seed1, "metrics.csv"), "return_last100")
    smoothed = trailing_mean([y for _, y in raw], 5)
    plot(seed1, "--smooth", "5", "--out", os.path.join(tmp, "smooth.svg"))
    root = check_single_line(os.path.join(tmp, "smooth.svg"), [(x, s) for (x, _), s in zip(raw, smoothed)])
    assert any("trailing mean over 5 iterations" in "".join(t.itertext()) for t in root.iter(SVG + "text"))
    assert any(s is not None and abs(s - y) > 1 for (_, y), s in zip(raw, smoothed)), "smoothing changed nothing"

    # Missing values are gaps: empty cells (as train writes them) and `nan` (older files) alike.
    pieces = {}
    for spelling in ("", "nan"):
        gappy = os.path.join(tmp, f"gappy{spelling}")
        shutil.copytree(seed1, gappy)
        with open(os.path.join(gappy, "metrics.csv")) as f:
            rows = list(csv.reader(f))
        where = rows[0].index("return_last100")
        for row in rows[11:14]:
            row[where] = spelling
        with open(os.path.join(gappy, "metrics.csv"), "w", newline="") as f:
            csv.writer(f).writerows(rows)
        plot(gappy)
        svg = os.path.join(gappy, "learning_curve.svg")
        check_single_line(svg, column(os.path.join(gappy, "metrics.csv"), "return_last100"))
        (line,) = elements(ET.parse(svg).getroot(), "path", "run")
        pieces[spelling] = line.get("d")
        assert len(path_pieces(line.get("d"))) == 2, "a gap should split the line in two"
    assert pieces[""] == pieces["nan"]

    # --threshold R moves the line, none removes it.
    plot(seed1, "--threshold", "100", "--out", os.path.join(tmp, "t.svg"))
    root, _, y_data, _, _ = figure(os.path.join(tmp, "t.svg"))
    (threshold,) = elements(root, "line", "threshold")
    assert abs(y_data(float(threshold.get("y1"))) - 100) <= abs(y_data(1) - y_data(0)) * 0.011
    plot(seed1, "--threshold", "none", "--out", os.path.join(tmp, "t.svg"))
    assert not elements(ET.parse(os.path.join(tmp, "t.svg")).getroot(), "line", "threshold")

    # The scenario comes from config.toml's `scenario` key as well as from its header comment.
    acrobot = os.path.join(tmp, "acrobot")
    shutil.copytree(seed1, acrobot)
    with open(os.path.join(acrobot, "config.toml")) as f:
        lines = [line for line in f if not line.startswith("#") and not line.startswith("scenario")]
    with open(os.path.join(acrobot, "config.toml"), "w") as f:
        f.write('scenario = "acrobot"\n' + "".join(lines))

    for args, fragment in [(["plot", seed1, acrobot, "--out", os.path.join(tmp, "mixed.svg")], "different scenarios"),
                           (["plot", os.path.join(tmp, "missing")], "does not exist"),
                           (["plot", os.path.join(tmp, "gappy", "tb")], "holds no metrics.csv"),
                           (["plot"], "name the run folder"),
                           (["plot", seed1, other], "--out"),
                           (["plot", seed1, "--smooth", "0", "--out", os.path.join(tmp, "x.svg")], "--smooth"),
                           (["plot", seed1, "--x", "episodes", "--out", os.path.join(tmp, "x.svg")], "--x"),
                           (["plot", seed1, "--y", "nothing", "--out", os.path.join(tmp, "x.svg")], "no column"),
                           (["plot", seed1, "--out", os.path.join(tmp, "no", "such", "f.svg")], "does not exist")]:
        r = subprocess.run([surge, *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and fragment in r.stderr, r.stderr
        assert r.stderr.startswith("surge plot"), r.stderr
    assert not any(os.path.exists(os.path.join(tmp, name)) for name in ("mixed.svg", "x.svg", "learning_curve.svg"))

    # The roofline figures: no two marker labels overlap, and none crosses the frame or the legend. Boxes
    # from the emitted font size and text length at 0.62 em per character (sans-serif text runs narrower).
    for what in ("train", "env"):
        svg = os.path.join(tmp, f"roofline-{what}.svg")
        subprocess.run([surge, "bench", "roofline", "--what", what, "--device", "cpu", "--num-envs", "64", "--steps",
                        "16", "--repeats", "1", "--gemm-size", "128", "--min-env-steps", "16384", "--svg", svg],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        root = ET.parse(svg).getroot()
        (frame,) = elements(root, "rect", "data-area")
        fx, fy, fw, fh = (float(frame.get(k)) for k in ("x", "y", "width", "height"))
        (legend,) = elements(root, "rect", "legend-area")
        lx, ly, lw, lh = (float(legend.get(k)) for k in ("x", "y", "width", "height"))
        boxes = []
        for label in elements(root, "text", "marker-label"):
            size, x, y = float(label.get("font-size")), float(label.get("x")), float(label.get("y"))
            width = 0.62 * size * len(label.text)
            left = {"start": x, "end": x - width, "middle": x - width / 2}[label.get("text-anchor")]
            box = (left, y - 0.8 * size, left + width, y + 0.25 * size)
            assert fx < box[0] and box[2] < fx + fw and fy < box[1] and box[3] < fy + fh, (label.text, box)
            assert not boxes_overlap(box, (lx, ly, lx + lw, ly + lh)), (label.text, "on the legend")
            for other_label, other_box in boxes:
                assert not boxes_overlap(box, other_box), (label.text, other_label)
            boxes.append((label.text, box))
        assert len(boxes) == (7 if what == "train" else 2), [b[0] for b in boxes]
        assert all("%" in name for name, _ in boxes)
print("plot: ok")
