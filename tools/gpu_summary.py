#!/usr/bin/env python3
"""What tools/gpu-check.sh found, as OUTDIR/summary.md; and the records it keeps on the way.

    gpu_summary.py record OUTDIR KIND [--json FILE] [--csv FILE [--reach COLUMN=VALUE]] [--field KEY=VALUE ...]
        appends one line {"kind": KIND, KEY: VALUE..., "data": ...} to OUTDIR/results.jsonl: the JSON file as
        it is, or a CSV's row count, first and last rows (and the first row whose COLUMN reached VALUE).
    gpu_summary.py summary OUTDIR
        writes OUTDIR/summary.md from results.jsonl, throughput.jsonl, tests.log, gpu-check.log and
        kernel-report.json; any of them may be missing or cut short (the check may have been stopped).

Standard library only: it runs on a bare GPU machine.
"""

import argparse
import csv
import json
import math
import os
import re
import sys

# Every stage of the check, in its order; a stage with neither a result nor a "skipped" record did not run.
STAGES = ["build", "kernel report", "GPU tests", "surge train per scenario", "CartPole to 475", "pixels on CUDA",
          "bench env sweep", "bench train", "1024 agents to 475", "compute-sanitizer", "throughput sweeps", "CPU tests"]
LOSS_COLUMNS = ("policy_loss", "value_loss", "entropy", "approx_kl")
TRAIN_RUNS = ["cartpole", "acrobot", "mountain_car", "pendulum", "mountain_car_continuous",
              "cartpole --physics masspole=0.05:0.2,length=0.4:0.6"]


def parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def csv_digest(path, reach):
    with open(path, newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    digest = {"rows": len(rows), "first": rows[0] if rows else None, "last": rows[-1] if rows else None,
              "nonfinite_columns": sorted({key for row in rows for key, value in row.items()
                                           if value not in (None, "") and number(value) is None
                                           and parse_float(value) is not None})}
    if reach:
        column, value = reach.split("=", 1)
        digest["reach"] = {"column": column, "value": float(value), "row": None}
        for row in rows:
            if number(row.get(column)) is not None and float(row[column]) >= float(value):
                digest["reach"]["row"] = row
                break
    return digest


def record(args):
    entry = {"kind": args.kind}
    for field in args.field:
        key, _, value = field.partition("=")
        entry[key] = parse_value(value)
    try:
        if args.json:
            with open(args.json, encoding="utf-8") as source:
                entry["data"] = json.load(source)
        elif args.csv:
            entry["data"] = csv_digest(args.csv, args.reach)
    except (OSError, ValueError) as error:
        entry["error"] = f"{type(error).__name__}: {error}"
    with open(os.path.join(args.outdir, "results.jsonl"), "a", encoding="utf-8") as out:
        out.write(json.dumps(entry, separators=(",", ":")) + "\n")


# Reading what is there.


def json_stream(path):
    """Every JSON value in a file of concatenated values (one per line, or pretty-printed); stops at a cut-off."""
    try:
        with open(path, encoding="utf-8", errors="replace") as source:
            text = source.read()
    except OSError:
        return []
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return values
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return values
        values.append(value)


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as source:
            return source.read()
    except OSError:
        return None


def parse_float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def number(value):
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def fmt(value, digits=3):
    value = number(value)
    if value is None:
        return "-"
    if value.is_integer() and abs(value) < 1e7:
        return str(int(value))
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.{digits}g}" if abs(value) < 1e5 else f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def power_of_two(n):
    n = number(n)
    if n and n > 0 and math.log2(n).is_integer():
        return f"2^{int(math.log2(n))}"
    return fmt(n)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


CTEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(\**)([A-Za-z][A-Za-z ]*?)(?::.*?)?\s+[\d.]+ sec")


def ctest_results(text):
    """{test: status} from ctest's console lines; status is Passed, Failed, Skipped, Timeout, Not Run, ..."""
    results = {}
    for line in (text or "").splitlines():
        match = CTEST_LINE.match(line)
        if match:
            status = match.group(3).strip()
            results[match.group(1)] = "Skipped" if status.startswith("Skipped") else status
    return results


def log_sections(text):
    """tests.log's parts, split at the '== NAME' lines the check writes."""
    sections, name = {}, ""
    for line in (text or "").splitlines():
        if line.startswith("== "):
            name = line[3:].strip()
            sections.setdefault(name, [])
        else:
            sections.setdefault(name, []).append(line)
    return {key: "\n".join(lines) for key, lines in sections.items()}


def count_line(results):
    counts = {}
    for status in results.values():
        counts[status] = counts.get(status, 0) + 1
    passed, skipped = counts.pop("Passed", 0), counts.pop("Skipped", 0)
    failed = sum(counts.values())
    line = f"{passed} passed, {failed} failed, {skipped} skipped (of {len(results)})"
    bad = [f"{test} ({status})" for test, status in sorted(results.items()) if status not in ("Passed", "Skipped")]
    return line + (": " + ", ".join(bad) if bad else "")


# The summary's sections.


def section_machine(records, log):
    lines = ["## Machine and build", ""]
    doctor = next((r.get("data") for r in records if r["kind"] == "doctor"), None)
    machine = re.search(r"== machine\n(.*?)(?:\ngpu-check:|\Z)", log or "", re.S)
    if machine:
        lines += ["```", machine.group(1).strip(), "```", ""]
    if isinstance(doctor, dict):
        verdict = doctor.get("verdict") or {}
        lines.append(f"surge doctor: {verdict.get('headline', '?')}")
        libraries = doctor.get("libraries") or {}
        found = [f"{name} {entry.get('version', '')} ({entry.get('path', '')})" if entry.get("found") else f"{name} missing"
                 for name, entry in libraries.items() if isinstance(entry, dict)]
        if found:
            lines.append("Libraries: " + ", ".join(found) + ".")
        lines += [f"- {finding.get('severity')}: {finding.get('what')}" for finding in verdict.get("findings", [])
                  if isinstance(finding, dict)]
        lines.append("")
    for r in records:
        if r["kind"] == "build":
            verdict = "ok" if r.get("status") == 0 else f"FAILED (exit {r.get('status')}; see build.log)"
            lines.append(f"Build for `{r.get('arch', '?')}`: {verdict} in {r.get('seconds', '?')} s; "
                         f"HDF5: {r.get('hdf5', '?')}.")
    return lines + [""]


def section_tests(title, results):
    lines = [f"## {title}", ""]
    if not results:
        return lines + ["No results (not run, or stopped before ctest printed any).", ""]
    lines.append(count_line(results))
    return lines + [""]


def section_sanitizer(records):
    lines = ["## compute-sanitizer", ""]
    runs = [r for r in records if r["kind"] == "sanitizer"]
    notes = [r for r in records if r["kind"] == "sanitizer_note"]
    for note in notes:
        lines.append(str(note.get("text", "")))
    if not runs:
        return lines + (["" if notes else "No runs."] + [""])
    rows = [[r.get("tool"), r.get("test"), f"`{r.get('filter') or 'all'}`", r.get("verdict"),
             fmt(r.get("errors")), fmt(r.get("seconds"))] for r in runs]
    lines += table(["tool", "test", "cases", "verdict", "errors", "s"], rows)
    clean = sum(1 for r in runs if r.get("verdict") == "clean")
    lines += ["", f"{clean} of {len(runs)} runs clean; the details are in tests.log (`== compute-sanitizer ...`).", ""]
    return lines


def section_kernels(outdir, records):
    lines = ["## Kernel resources (kernel-report.json)", ""]
    note = next((r for r in records if r["kind"] == "kernel_report"), None)
    report = json_stream(os.path.join(outdir, "kernel-report.json"))
    report = report[0] if report else None
    if not isinstance(report, dict):
        text = note.get("status", "not run") if note else "not run"
        return lines + [f"No report: {text}.", ""]
    kernels = [k for k in report.get("kernels", []) if isinstance(k, dict)]

    def occupancy(k):
        value = k.get("occupancy")
        return number(value.get("occupancy")) if isinstance(value, dict) else number(value)

    spilling = [k for k in kernels if (number(k.get("spill_stores")) or 0) + (number(k.get("spill_loads")) or 0) > 0]
    stacked = [k for k in kernels if (number(k.get("stack")) or number(k.get("local")) or 0) > 0]
    registers = [number(k.get("registers")) for k in kernels if number(k.get("registers")) is not None]
    occupancies = [occupancy(k) for k in kernels if occupancy(k) is not None]
    lines.append(f"Architectures {', '.join(report.get('architectures', [])) or '?'}: {len(kernels)} kernels; "
                 f"registers at most {fmt(max(registers) if registers else None)}; "
                 f"{len(spilling)} spill, {len(stacked)} use local memory (stack); "
                 f"theoretical occupancy from {fmt(min(occupancies) if occupancies else None)} "
                 f"to {fmt(max(occupancies) if occupancies else None)}.")
    lines.append("")
    hot = [k for k in kernels if k.get("hot")]
    shown = hot + [k for k in spilling + stacked if k not in hot]
    if shown:
        rows = []
        for k in shown[:40]:
            limit = k["occupancy"].get("limited_by", "") if isinstance(k.get("occupancy"), dict) else ""
            rows.append([k.get("hot") or "", f"`{str(k.get('name', k.get('mangled', '?')))[:70]}`", k.get("arch", ""),
                         fmt(k.get("registers")), f"{fmt(k.get('spill_stores'))}/{fmt(k.get('spill_loads'))}",
                         fmt(k.get("stack", k.get("local"))), fmt(k.get("shared")), fmt(occupancy(k)), limit])
        lines += table(["hot", "kernel", "arch", "registers", "spill st/ld B", "stack B", "shared B", "occupancy",
                        "limited by"], rows)
        lines.append("")
    return lines


def section_training(records):
    lines = ["## surge train --device cuda, 2^20 steps per scenario", ""]
    runs = {r.get("run"): r for r in records if r["kind"] == "train"}
    rows = []
    for name in TRAIN_RUNS:
        r = runs.get(name)
        if not r:
            rows.append([f"`{name}`", "not run", "", "", "", "", ""])
            continue
        data = r.get("data") or {}
        last = data.get("last") or {}
        losses = [c for c in data.get("nonfinite_columns", []) if c in LOSS_COLUMNS]
        if r.get("status") == 0 and data.get("rows") and not losses:
            verdict = "ok"
        else:
            problem = f", {', '.join(losses)} not finite" if losses else "" if data.get("rows") else ", no metrics"
            verdict = f"FAILED (exit {r.get('status')}{problem})"
        rows.append([f"`{name}`", verdict, fmt(last.get("iteration")), fmt(last.get("global_step")),
                     fmt(last.get("return_last100"), 4), fmt(last.get("sps")), fmt(r.get("seconds"))])
    lines += table(["scenario", "verdict", "iterations", "steps", "return_last100", "SPS", "wall s"], rows)
    return lines + [""]


def target_lines(r, command):
    """A train-to-target record in words: where it reached the target, or where it stopped."""
    data = r.get("data") or {}
    target = fmt((data.get("reach") or {}).get("value", 475), 6)
    reached = (data.get("reach") or {}).get("row")
    if reached:
        lines = [f"{command}: metrics.csv's first row with return_last100 >= {target} at step "
                 f"{fmt(reached.get('global_step'))} (iteration {fmt(reached.get('iteration'))}), "
                 f"{fmt(reached.get('wall_time_s'))} s of training wall time; the whole process took "
                 f"{fmt(r.get('seconds'))} s (exit {r.get('status')}). Its own last line:"]
    else:
        last = data.get("last") or {}
        lines = [f"{command}: NOT reached (exit {r.get('status')}, {fmt(r.get('seconds'))} s; last "
                 f"return_last100 {fmt(last.get('return_last100'), 4)} at step {fmt(last.get('global_step'))})."]
    if r.get("final_line"):
        lines += ["", "```", str(r["final_line"]), "```"]
    return lines + [""]


def section_target(records):
    lines = ["## CartPole to 475 on CUDA", ""]
    r = next((r for r in records if r["kind"] == "target_475"), None)
    if not r:
        return lines + ["Not run.", ""]
    return lines + target_lines(r, "`surge train --scenario cartpole --device cuda --target-return 475`")


def section_agents(records):
    lines = ["## 1024 CartPole agents of 64 environments to 475 on CUDA (issue 15)", ""]
    r = next((r for r in records if r["kind"] == "agents_475"), None)
    if not r:
        return lines + ["Not run.", ""]
    return lines + target_lines(r, "`surge train --scenario cartpole --device cuda --num-envs 64 --agents 1024 "
                                   "--target-return 475` (the first row at 475 is the fastest agent's; the run's "
                                   "last line says when all got there)")


def section_pixels(records):
    lines = ["## Pixel CartPole on CUDA (scenarios/configs/cartpole_pixels.toml)", ""]
    r = next((r for r in records if r["kind"] == "pixels_475"), None)
    sizes = [r for r in records if r["kind"] == "pixels_size"]
    if not r and not sizes:
        return lines + ["Not run.", ""]
    if r:
        lines += target_lines(r, "`surge train --config scenarios/configs/cartpole_pixels.toml --device cuda "
                                 "--total-steps 3000000 --target-return 475`")
    rows = [[power_of_two(s.get("num_envs")), fmt(s.get("bench_env_steps_per_s")), fmt(s.get("train_sps")),
             fmt(s.get("train_seconds")), "ok" if s.get("train_status") == 0 else f"exit {s.get('train_status')}"]
            for s in sizes]
    if rows:
        lines += table(["N", "bench env env-steps/s (48x48 grey, stack 2)", "train env-steps/s (3rd iteration)",
                        "train wall s (3 iterations)", "train"], rows)
    return lines + [""]


def section_env(records):
    lines = ["## Environment stepping, CartPole (surge bench env)", ""]
    runs = [r.get("data") for r in records if r["kind"] == "bench_env" and isinstance(r.get("data"), dict)]
    if not runs:
        return lines + ["No results.", ""]
    by_n = {}
    for run in runs:
        by_n.setdefault(int(run.get("num_envs", 0)), {})[run.get("mode", "fused")] = run
    rows = []
    for n in sorted(by_n):
        fused, step = by_n[n].get("fused", {}), by_n[n].get("step", {})
        rows.append([power_of_two(n), fmt(fused.get("steps")), fmt(fused.get("env_steps_per_s")),
                     fmt(fused.get("ns_per_env_step")), fmt(fused.get("write_gb_per_s")),
                     fmt(fused.get("copy_gb_per_s")), fmt(fused.get("fraction_of_copy_bandwidth")),
                     fmt(step.get("env_steps_per_s")), fmt(step.get("fraction_of_copy_bandwidth"))])
    lines += table(["N", "T", "fused env-steps/s", "fused ns/env-step", "write GB/s", "copy GB/s",
                    "fraction of copy", "per-step env-steps/s", "per-step fraction"], rows)
    best = max(runs, key=lambda run: number(run.get("env_steps_per_s")) or 0)
    lines += ["", f"Best: {fmt(best.get('env_steps_per_s'))} env-steps/s ({best.get('mode')}, N = "
                  f"{power_of_two(best.get('num_envs'))}, {fmt(best.get('fraction_of_copy_bandwidth'))} of the copy "
                  f"bandwidth).", ""]
    return lines


def section_bench_train(records):
    lines = ["## PPO training throughput, CartPole (surge bench train)", ""]
    runs = [r.get("data") for r in records if r["kind"] == "bench_train" and isinstance(r.get("data"), dict)]
    if not runs:
        return lines + ["No results.", ""]
    rows = []
    for run in sorted(runs, key=lambda run: number(run.get("num_envs")) or 0):
        graph, eager = run.get("env_steps_per_s_graph"), run.get("env_steps_per_s_no_graph")
        if graph is None and eager is None:
            eager = run.get("env_steps_per_s")
        speedup = number(graph) / number(eager) if number(graph) and number(eager) else None
        rows.append([power_of_two(run.get("num_envs")), fmt(run.get("num_steps")), fmt(graph), fmt(eager), fmt(speedup),
                     run.get("device", "")])
    lines += table(["N", "T", "env-steps/s, graph", "env-steps/s, no graph", "graph speed-up", "device"], rows)
    return lines + [""]


def section_throughput(outdir):
    lines = ["## Throughput sweeps and rooflines (throughput.jsonl)", ""]
    reports = [r for r in json_stream(os.path.join(outdir, "throughput.jsonl")) if isinstance(r, dict)]
    if not reports:
        return lines + ["No results.", ""]
    for report in reports:
        if isinstance(report.get("points"), list):
            knee = report.get("knee") or {}
            best = report.get("best") or {}
            model = report.get("model") or {}
            lines.append(f"- sweep {report.get('what')} ({report.get('mode')}): "
                         + ", ".join(f"{power_of_two(p.get('num_envs'))}: {fmt(p.get('env_steps_per_s'))}"
                                     for p in report["points"] if isinstance(p, dict))
                         + f"; knee {power_of_two(knee.get('num_envs'))}, best {fmt(best.get('env_steps_per_s'))} at "
                         f"{power_of_two(best.get('num_envs'))}, recommended {power_of_two(report.get('recommended_num_envs'))}"
                         f", stop {report.get('stop')}"
                         + (f", model peak {fmt(model.get('peak_env_steps_per_s'))}" if model.get("valid") else ""))
        elif isinstance(report.get("phases"), list):
            ceilings = report.get("ceilings") or {}
            phases = ", ".join(f"{p.get('name')} {fmt(p.get('fraction_of_roof'))} of roof ({p.get('bound')})"
                               for p in report["phases"] if isinstance(p, dict))
            lines.append(f"- roofline {report.get('what')}: SGEMM {fmt(ceilings.get('gemm_flops_per_s'))} FLOP/s, copy "
                         f"{fmt(ceilings.get('copy_bytes_per_s'))} B/s; {phases}")
    return lines + [""]


def section_skipped(records, log, results_by_stage):
    lines = ["## Skipped or not reached", ""]
    skips = [r for r in records if r["kind"] == "skipped"]
    lines += [f"- {r.get('stage')}{' (' + str(r['what']) + ')' if r.get('what') else ''}: {r.get('reason')}"
              for r in skips]
    done = re.search(r"gpu-check: done in (\d+) s", log or "")
    skipped_stages = {r.get("stage") for r in skips}
    started = {r.get("stage") for r in records if r["kind"] == "stage"}
    missing = [stage for stage in STAGES if not results_by_stage.get(stage) and stage not in skipped_stages]
    empty = [stage for stage in missing if stage in started]
    if empty:
        lines.append("- ran, but left no results (see gpu-check.log and tests.log): " + ", ".join(empty))
    unreached = [stage for stage in missing if stage not in started]
    if unreached:
        lines.append(("- not reached (the check stopped before them): " if not done else "- did not run: ")
                     + ", ".join(unreached))
    if len(lines) == 2:
        lines.append("Nothing.")
    lines += ["", f"Whole check: {done.group(1) + ' s' if done else 'did not finish (stopped, or still running)'}."]
    return lines + [""]


def summary(outdir):
    records = [r for r in json_stream(os.path.join(outdir, "results.jsonl")) if isinstance(r, dict) and "kind" in r]
    log = read_text(os.path.join(outdir, "gpu-check.log"))
    sections = log_sections(read_text(os.path.join(outdir, "tests.log")))
    gpu_tests = ctest_results(sections.get("GPU tests"))
    cpu_tests = ctest_results(sections.get("CPU tests"))
    kinds = {r["kind"] for r in records}
    results_by_stage = {
        "build": "build" in kinds, "kernel report": "kernel_report" in kinds, "GPU tests": bool(gpu_tests),
        "surge train per scenario": "train" in kinds, "CartPole to 475": "target_475" in kinds,
        "pixels on CUDA": "pixels_475" in kinds or "pixels_size" in kinds,
        "bench env sweep": "bench_env" in kinds, "bench train": "bench_train" in kinds,
        "1024 agents to 475": "agents_475" in kinds, "compute-sanitizer": "sanitizer" in kinds or "sanitizer_note" in kinds,
        "throughput sweeps": os.path.getsize(os.path.join(outdir, "throughput.jsonl")) > 0
        if os.path.exists(os.path.join(outdir, "throughput.jsonl")) else False,
        "CPU tests": bool(cpu_tests)}
    lines = ["# tools/gpu-check.sh summary", ""]
    lines += section_machine(records, log)
    lines += section_tests("GPU tests (ctest -L gpu)", gpu_tests)
    lines += section_sanitizer(records)
    lines += section_kernels(outdir, records)
    lines += section_training(records)
    lines += section_target(records)
    lines += section_pixels(records)
    lines += section_env(records)
    lines += section_bench_train(records)
    lines += section_agents(records)
    lines += section_throughput(outdir)
    lines += section_tests("CPU tests (ctest -L cpu -LE slow)", cpu_tests)
    lines += section_skipped(records, log, results_by_stage)
    target = os.path.join(outdir, "summary.md")
    with open(target + ".tmp", "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
    os.replace(target + ".tmp", target)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("record")
    add.add_argument("outdir")
    add.add_argument("kind")
    add.add_argument("--json")
    add.add_argument("--csv")
    add.add_argument("--reach")
    add.add_argument("--field", action="append", default=[])
    write = commands.add_parser("summary")
    write.add_argument("outdir")
    args = parser.parse_args()
    if args.command == "record":
        record(args)
    else:
        summary(args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
