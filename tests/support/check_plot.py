#!/usr/bin/env python3
"""surge plot end to end: a short CPU training run, its learning curve parsed as XML with the polylines'
point counts matching metrics.csv, and the bad-input paths (exit 2, one line, no file left)."""
import csv
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

surge = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "run")
    subprocess.run([surge, "train", "--scenario", "cartpole", "--device", "cpu", "--total-steps", "20000", "--out", run],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = subprocess.run([surge, "plot", run], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    svg = os.path.join(run, "learning_curve.svg")
    root = ET.parse(svg).getroot()
    namespace = "{http://www.w3.org/2000/svg}"
    lines = root.findall(f"{namespace}polyline")
    with open(os.path.join(run, "metrics.csv")) as f:
        rows = [r for r in csv.DictReader(f) if float(r["episodes"]) > 0]
    assert len(lines) == 4, len(lines)
    for line in lines:
        points = line.get("points").split()
        assert len(points) == len(rows), (len(points), len(rows))
        for p in points:
            x, y = map(float, p.split(","))
            assert 0 <= x <= 1000 and 0 <= y <= 420, p
    for args, fragment in [([surge, "plot", os.path.join(tmp, "missing")], "is not a folder"),
                           ([surge, "plot", tmp], "does not exist"),
                           ([surge, "plot"], "name the run folder"),
                           ([surge, "plot", run, "--out", os.path.join(tmp, "no", "such", "f.svg")], "does not exist")]:
        r = subprocess.run(args, capture_output=True, text=True)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and fragment in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(tmp, "learning_curve.svg"))
print("plot: ok")
