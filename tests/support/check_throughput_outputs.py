#!/usr/bin/env python3
"""End-to-end check of `surge bench sweep` and `surge bench roofline` on the CPU: tiny runs whose JSON
must satisfy docs/throughput-*.schema.json and whose SVG must parse as XML (Python's own parser, not
ours), and bad input that must end with one line on stderr, exit code 2 and no files left behind.

usage: check_throughput_outputs.py SURGE_BINARY SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def validate(value, schema, root, path="$"):
    """The subset of JSON Schema the report's schema uses; returns a list of complaints."""
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return validate(value, target, root, path)
    if "anyOf" in schema:
        if any(not validate(value, s, root, path) for s in schema["anyOf"]):
            return []
        return [f"{path}: matches none of anyOf"]
    errors = []
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        checks = {
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        }
        if not any(checks[t](value) for t in types):
            return [f"{path}: {value!r} is not of type {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= {schema['exclusiveMinimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing {key}")
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                errors += validate(item, properties[key], root, f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected key {key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for k, item in enumerate(value):
                errors += validate(item, schema["items"], root, f"{path}[{k}]")
    return errors


def run(surge, args, cwd):
    return subprocess.run([surge] + args, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def check(condition, message):
    if not condition:
        print("FAILED:", message)
        sys.exit(1)


def main():
    surge, source = sys.argv[1], sys.argv[2]
    schema = json.load(open(os.path.join(source, "docs", "throughput-sweep.schema.json")))
    try:  # where the jsonschema package is present, our schema must also be valid JSON Schema
        import jsonschema
        jsonschema.Draft202012Validator.check_schema(schema)
    except ImportError:
        pass

    # The validator itself must reject what the schema forbids.
    check(validate({"benchmark": "sweep"}, schema, schema), "the validator accepted a report without its fields")

    with tempfile.TemporaryDirectory() as scratch:
        sweep = ["bench", "sweep", "--what", "env", "--scenario", "cartpole", "--device", "cpu", "--from", "64", "--to", "256",
                 "--steps", "16", "--repeats", "3", "--min-env-steps", "32768"]
        result = run(surge, sweep + ["--json", "sweep.json", "--svg", "sweep.svg"], scratch)
        check(result.returncode == 0, f"the sweep failed ({result.returncode}): {result.stderr}")
        check(sorted(os.listdir(scratch)) == ["sweep.json", "sweep.svg"], f"unexpected files: {os.listdir(scratch)}")
        report = json.load(open(os.path.join(scratch, "sweep.json")))
        errors = validate(report, schema, schema)
        check(not errors, "schema: " + "; ".join(errors))
        points = report["points"]
        sizes = [p["num_envs"] for p in points]
        check(sizes == [64 * 2 ** k for k in range(len(sizes))], f"N did not double from 64: {sizes}")
        check(sizes[-1] <= 256, f"the sweep passed --to: {sizes}")
        check(all(len(p["env_steps_per_s_runs"]) == 3 for p in points), "not 3 repeats per point")
        check(all(p["steps"] * p["num_envs"] * p["batches_per_repeat"] >= 32768 for p in points), "too few env-steps timed")
        check(report["recommended_num_envs"] in sizes, "recommendation is not a measured N")
        if report["stop"] == "reached_limit":
            check(2 * sizes[-1] > 256, "stopped at the limit too early")
        elif report["stop"] == "saturated":
            check(points[-1]["gain_from_previous"] < report["min_gain"], "stopped as saturated on a paying doubling")

        tree = ET.parse(os.path.join(scratch, "sweep.svg"))
        root = tree.getroot()
        check(root.tag == SVG + "svg", f"root element is {root.tag}")
        dots = [c for c in root.iter(SVG + "circle") if c.get("r") == "3"]
        check(len(dots) == len(points), f"{len(dots)} dots for {len(points)} points")
        texts = " ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
        check(f"--num-envs" in texts and str(report["recommended_num_envs"]) in texts, "the recommendation is not labelled")
        check("number of environments" in texts, "the x axis is not labelled")

        os.remove(os.path.join(scratch, "sweep.json"))
        os.remove(os.path.join(scratch, "sweep.svg"))

        # The training sweep: one N, three PPO iterations (two untimed), the same schema.
        result = run(surge, ["bench", "sweep", "--what", "train", "--scenario", "cartpole", "--device", "cpu", "--from", "16",
                             "--to", "16", "--steps", "8", "--repeats", "1", "--min-env-steps", "1", "--json", "train.json"], scratch)
        check(result.returncode == 0, f"the training sweep failed ({result.returncode}): {result.stderr}")
        report = json.load(open(os.path.join(scratch, "train.json")))
        errors = validate(report, schema, schema)
        check(not errors, "training sweep schema: " + "; ".join(errors))
        check(report["what"] == "train" and report["mode"] == "ppo", "the training sweep is not labelled as one")
        check([p["num_envs"] for p in report["points"]] == [16] and report["stop"] == "reached_limit", "training sweep points")
        os.remove(os.path.join(scratch, "train.json"))

        # The roofline: cartpole's hand-counted work per env-step, placed consistently under the ceilings.
        roofline_schema = json.load(open(os.path.join(source, "docs", "throughput-roofline.schema.json")))
        result = run(surge, ["bench", "roofline", "--scenario", "cartpole", "--device", "cpu", "--num-envs", "256", "--steps", "16",
                             "--repeats", "2", "--gemm-size", "128", "--min-env-steps", "32768", "--json", "roofline.json",
                             "--svg", "roofline.svg"], scratch)
        check(result.returncode == 0, f"the roofline failed ({result.returncode}): {result.stderr}")
        report = json.load(open(os.path.join(scratch, "roofline.json")))
        errors = validate(report, roofline_schema, roofline_schema)
        check(not errors, "roofline schema: " + "; ".join(errors))
        phases = {p["name"]: p for p in report["phases"]}
        # obs 16 + reward 4 + flags 2 per step, the 88-byte env record loaded and stored once per 16 steps.
        check(abs(phases["env step (fused)"]["bytes"] - (22 + 2 * 88 / 16)) < 1e-9, "fused env-step bytes")
        check(abs(phases["env step"]["bytes"] - 118) < 1e-9, "stepwise env-step bytes")
        ridge = report["ceilings"]["ridge_flops_per_byte"]
        for p in report["phases"]:
            rel = lambda a, b: abs(a - b) <= 1e-6 * abs(b)
            check(rel(p["intensity_flops_per_byte"], p["flops"] / p["bytes"]), f"{p['name']}: intensity")
            check(rel(p["achieved_flops_per_s"], p["flops"] / p["seconds"]), f"{p['name']}: FLOP/s")
            check(rel(p["fraction_of_roof"], p["achieved_flops_per_s"] / p["attainable_flops_per_s"]), f"{p['name']}: roof")
            check(p["bound"] == ("memory" if p["intensity_flops_per_byte"] < ridge else "compute"), f"{p['name']}: bound")
        root = ET.parse(os.path.join(scratch, "roofline.svg")).getroot()
        check(root.tag == SVG + "svg", f"roofline root element is {root.tag}")
        texts = " ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
        check(all(name in texts for name in phases), "a phase is not labelled on the roofline")
        os.remove(os.path.join(scratch, "roofline.json"))
        os.remove(os.path.join(scratch, "roofline.svg"))

        # The phases of PPO training: one diagnostic iteration, whose phases and "other" add up to it.
        result = run(surge, ["bench", "roofline", "--what", "train", "--scenario", "cartpole", "--device", "cpu",
                             "--num-envs", "16", "--steps", "8", "--repeats", "1", "--gemm-size", "64",
                             "--json", "train-roofline.json", "--svg", "train-roofline.svg"], scratch)
        check(result.returncode == 0, f"the training roofline failed ({result.returncode}): {result.stderr}")
        report = json.load(open(os.path.join(scratch, "train-roofline.json")))
        errors = validate(report, roofline_schema, roofline_schema)
        check(not errors, "training roofline schema: " + "; ".join(errors))
        names = [p["name"] for p in report["phases"]]
        check(names == ["policy forward", "sampling", "env step", "GAE", "update forward", "update backward", "optimiser"],
              f"training phases: {names}")
        shares = sum(p["share_of_iteration"] for p in report["phases"])
        other = report["iteration"]["other_seconds"] / report["iteration"]["seconds"]
        check(abs(shares + other - 1) < 1e-6, f"phase shares {shares} and other {other} do not add up to the iteration")
        ET.parse(os.path.join(scratch, "train-roofline.svg"))
        os.remove(os.path.join(scratch, "train-roofline.json"))
        os.remove(os.path.join(scratch, "train-roofline.svg"))

        # surge train --num-envs auto: a short training sweep picks N, then training runs with it.
        result = run(surge, ["train", "--scenario", "cartpole", "--device", "cpu", "--num-envs", "auto", "--num-steps", "4",
                             "--total-steps", "8192", "--out", "auto-run"], scratch)
        check(result.returncode == 0, f"training with --num-envs auto failed ({result.returncode}): {result.stderr}")
        chosen = [line for line in result.stderr.splitlines() if "--num-envs auto:" in line]
        check(len(chosen) == 1, f"no --num-envs auto line in {result.stderr!r}")
        n = int(chosen[0].split("--num-envs auto:")[1].split()[0])
        check(16 <= n <= 1024 and n & (n - 1) == 0, f"--num-envs auto chose {n}")
        check(f"{n} envs" in result.stderr, "training did not run with the chosen N")
        shutil.rmtree(os.path.join(scratch, "auto-run"))

        # Bad input: one line, exit code 2, nothing written.
        base = ["bench", "sweep", "--device", "cpu", "--steps", "16", "--repeats", "1", "--min-env-steps", "1024",
                "--json", "out.json", "--svg", "out.svg"]
        bad = {
            "N0 above N1": ["--from", "512", "--to", "64"],
            "N0 not a power of two": ["--from", "100", "--to", "1024"],
            "unknown --what": ["--what", "everything", "--from", "64", "--to", "128"],
        }
        for name, extra in bad.items():
            r = run(surge, base + extra, scratch)
            check(r.returncode == 2, f"{name}: exit code {r.returncode}, stderr {r.stderr!r}")
            check(len(r.stderr.strip().splitlines()) == 1, f"{name}: not one line: {r.stderr!r}")
            check(os.listdir(scratch) == [], f"{name}: left {os.listdir(scratch)}")
        small = ["bench", "sweep", "--device", "cpu", "--from", "64", "--to", "128", "--steps", "16", "--repeats", "1",
                 "--min-env-steps", "1024"]
        unwritable = {
            "JSON into a missing folder": small + ["--json", "missing/out.json", "--svg", "out.svg"],
            "SVG onto a folder": small + ["--json", "out.json", "--svg", "."],
        }
        unwritable["roofline JSON into a missing folder"] = ["bench", "roofline", "--device", "cpu", "--json", "missing/r.json"]
        for name, args in unwritable.items():
            r = run(surge, args, scratch)
            check(r.returncode == 2, f"{name}: exit code {r.returncode}, stderr {r.stderr!r}")
            check(len(r.stderr.strip().splitlines()) == 1, f"{name}: not one line: {r.stderr!r}")
            check(os.listdir(scratch) == [], f"{name}: left {os.listdir(scratch)}")
    print("ok: sweep and roofline reports valid, figures well-formed, bad input refused")


if __name__ == "__main__":
    main()
