#!/usr/bin/env python3
"""The kernel resource report: every CUDA kernel of the Surge libraries with its registers, spills, stack
(local) and shared memory, launch block size and theoretical occupancy, per architecture built.

    report.py write --objects OBJ... --launchers sim/parallel.cuh --json OUT.json --text OUT.txt
    report.py check REPORT.json     fails if a hot kernel spills or is missing

The numbers are ptxas's own (-Xptxas=-v, kept beside each object as <object>.ptxas by ptxas_log.py);
names are demangled with c++filt; block sizes are read from the launchers' source.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

# Per-SM limits by compute capability, from the CUDA C++ Programming Guide, "Compute Capabilities",
# table "Technical Specifications per Compute Capability" (CUDA 13.0), and the allocation rules of the
# toolkit's cuda_occupancy.h: registers are allocated per warp in units of 256 and split over 4 SM
# sub-partitions; shared memory in units of 128 bytes, plus 1 KiB the system reserves per block (8.0+).
# registers, max warps, max threads, max blocks, shared memory per SM (max carve-out, bytes)
SM_LIMITS = {
    70: (65536, 64, 2048, 32, 96 * 1024),
    75: (65536, 32, 1024, 16, 64 * 1024),
    80: (65536, 64, 2048, 32, 164 * 1024),
    86: (65536, 48, 1536, 16, 100 * 1024),
    87: (65536, 48, 1536, 16, 164 * 1024),
    89: (65536, 48, 1536, 24, 100 * 1024),
    90: (65536, 64, 2048, 32, 228 * 1024),
    100: (65536, 64, 2048, 32, 228 * 1024),
    103: (65536, 64, 2048, 32, 228 * 1024),
    120: (65536, 48, 1536, 32, 128 * 1024),
}
REGISTER_UNIT = 256  # registers per warp are allocated in units of this many
SUB_PARTITIONS = 4
SHARED_UNIT = 128
SHARED_RESERVED_PER_BLOCK = 1024

# The kernels whose spills fail the check, by the source they come from or the functor they run.
HOT_KERNELS = {
    "environment step": lambda unit, name: unit == "registry.cu" and "StepKernel<" in name,
    "fused rollout": lambda unit, name: "RolloutTileKernel<" in name or "RolloutLanesKernel<" in name,
    "gae": lambda unit, name: unit == "gae.cu",
    "ppo loss": lambda unit, name: unit == "ppo_loss.cu",
    "adam": lambda unit, name: unit == "adam.cu",
}


def launch_blocks(launcher_files):
    """Block size per kernel template, from `kernel<<<grid, block, ...>>>` and the constants it names.
    A file's constants may name a constant of another launcher file
    (`constexpr int kThreads = kCudaFusedMlpThreads;`); a file's own values come first."""
    texts = []
    for path in launcher_files:
        with open(path, encoding="utf-8") as source:
            texts.append(source.read())
    definitions = [re.findall(r"constexpr\s+int\s+(\w+)\s*=\s*(\w+)\s*;", text) for text in texts]
    shared = {name: int(value) for found in definitions for name, value in found if value.isdigit()}
    blocks = {}
    for text, found in zip(texts, definitions):
        constants = dict(shared)
        constants.update({name: int(value) for name, value in found if value.isdigit()})
        constants.update({name: constants[value] for name, value in found if value in constants})
        for kernel, block in re.findall(r"(\w+)(?:<[^<>]*>)?\s*<<<[^,]+,\s*([\w:]+)", text):
            block = block.split("::")[-1]
            if block.isdigit():
                blocks[kernel] = int(block)
            elif block in constants:
                blocks[kernel] = constants[block]
    return blocks


def parse_ptxas(text):
    """Entries of one ptxas -v log: {mangled, arch, registers, stack, spill_stores, spill_loads, shared}."""
    kernels, current, properties_of = [], None, None
    for line in text.splitlines():
        match = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)", line)
        if match:
            current = {"mangled": match.group(1), "arch": match.group(2), "registers": 0, "stack": 0,
                       "spill_stores": 0, "spill_loads": 0, "shared": 0}
            kernels.append(current)
            continue
        match = re.search(r"Function properties for (\S+)", line)
        if match:
            properties_of = match.group(1)
            continue
        match = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if match and current and properties_of == current["mangled"]:
            current["stack"], current["spill_stores"], current["spill_loads"] = map(int, match.groups())
            continue
        if current and "Used" in line and "registers" in line:
            current["registers"] = int(re.search(r"Used (\d+) registers", line).group(1))
            shared = re.search(r"(\d+) bytes smem", line)
            current["shared"] = int(shared.group(1)) if shared else 0
            current = None
    return kernels


def demangle(names):
    tool = shutil.which("c++filt")
    if not tool or not names:
        return list(names)
    result = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, check=True)
    return result.stdout.splitlines()


def readable(demangled):
    """`grid_stride_kernel<rl::compute_gae::{lambda#1}>`: the kernel template and what it runs, without
    namespaces that every kernel shares or parameter lists."""
    name = demangled.replace("surge::", "").replace("(anonymous namespace)::", "").replace("detail::", "")
    name = re.sub(r"_GLOBAL__N__\w+::", "", name)  # nvcc's name for an anonymous namespace
    name = re.sub(r"^void ", "", name)
    depth = 0
    for index, char in enumerate(name):  # cut the kernel's own parameter list after its template arguments
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "(" and depth == 0:
            name = name[:index]
            break
    while True:  # then every parameter list inside, innermost first
        shorter = re.sub(r"\([^()]*\)( const)?", "", name)
        if shorter == name:
            return name
        name = shorter


def occupancy(arch, registers, shared, block):
    limits = SM_LIMITS.get(int(arch.split("_")[1]))
    if not limits or not block:
        return None
    registers_per_sm, max_warps, max_threads, max_blocks, shared_per_sm = limits
    warps_per_block = math.ceil(block / 32)
    by_threads = min(max_blocks, max_warps // warps_per_block, max_threads // block)
    by_registers = by_threads
    if registers:
        per_warp = math.ceil(registers * 32 / REGISTER_UNIT) * REGISTER_UNIT
        warps = (registers_per_sm // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS
        by_registers = warps // warps_per_block
    per_block = math.ceil(shared / SHARED_UNIT) * SHARED_UNIT + SHARED_RESERVED_PER_BLOCK
    by_shared = shared_per_sm // per_block
    blocks = min(by_threads, by_registers, by_shared)
    limiter = min((by_threads, "threads"), (by_registers, "registers"), (by_shared, "shared memory"))[1]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps_per_block,
            "occupancy": round(blocks * warps_per_block / max_warps, 4), "limited_by": limiter}


def write(args):
    blocks = launch_blocks(args.launchers)
    entries = []
    for obj in args.objects:
        if os.path.exists(obj + ".ptxas"):
            with open(obj + ".ptxas", encoding="utf-8") as log:
                for kernel in parse_ptxas(log.read()):
                    kernel["unit"] = os.path.basename(obj)[: -len(".o")]
                    entries.append(kernel)
    for kernel, demangled in zip(entries, demangle([k["mangled"] for k in entries])):
        kernel["demangled"] = demangled
        kernel["name"] = readable(demangled)
        template = re.match(r"(?:\w+::)*(\w+)", kernel["name"]).group(1)  # without its namespace
        kernel["block"] = blocks.get(template)
        kernel["occupancy"] = occupancy(kernel["arch"], kernel["registers"], kernel["shared"], kernel["block"])
        kernel["hot"] = next((hot for hot, test in HOT_KERNELS.items() if test(kernel["unit"], demangled)), None)
    entries.sort(key=lambda k: (k["arch"], k["unit"], k["name"]))
    report = {"schema_version": 1, "architectures": sorted({k["arch"] for k in entries}),
              "sm_limits_source": "CUDA C++ Programming Guide, Technical Specifications per Compute Capability",
              "units": "registers per thread; stack (local memory) and spills in bytes per thread; shared in "
                       "bytes per block (static); block in threads; occupancy = resident warps / max warps per SM",
              "kernels": entries}
    with open(args.json, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=1)
    with open(args.text, "w", encoding="utf-8") as out:
        out.write(summary(report))


def summary(report):
    kernels = report["kernels"]
    lines = [f"{len(kernels)} kernels for {', '.join(report['architectures']) or 'no architecture'}"]
    spilling = [k for k in kernels if k["spill_stores"] or k["spill_loads"]]
    lines.append(f"spilling: {len(spilling)}" + "".join(f"\n  {k['arch']} {k['unit']}: {k['name'][:100]}" for k in spilling))
    lines.append(f"{'arch':6} {'unit':22} {'hot':16} {'regs':>4} {'stack':>5} {'smem':>6} {'block':>5} {'occ':>5}  kernel")
    for k in kernels:
        occ = k["occupancy"]["occupancy"] if k["occupancy"] else float("nan")
        lines.append(f"{k['arch']:6} {k['unit']:22} {k['hot'] or '':16} {k['registers']:4d} {k['stack']:5d} "
                     f"{k['shared']:6d} {k['block'] or 0:5d} {occ:5.2f}  {k['name'][:110]}")
    return "\n".join(lines) + "\n"


def check(args):
    with open(args.report, encoding="utf-8") as source:
        report = json.load(source)
    failures = []
    for hot in HOT_KERNELS:
        if not any(k["hot"] == hot for k in report["kernels"]):
            failures.append(f"no {hot} kernel in the report")
    for k in report["kernels"]:
        if k["hot"] and (k["spill_stores"] or k["spill_loads"]):
            failures.append(f"{k['hot']} kernel spills on {k['arch']} ({k['spill_stores']} bytes stored, "
                            f"{k['spill_loads']} loaded): {k['name']}")
        if k["block"] is None or k["occupancy"] is None:
            failures.append(f"no launch configuration or occupancy for {k['name']} ({k['arch']})")
    for failure in failures:
        print("kernel report: " + failure, file=sys.stderr)
    print(f"kernel report: {len(report['kernels'])} kernels, {len(failures)} problems")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    write_parser = commands.add_parser("write")
    write_parser.add_argument("--objects", nargs="+", required=True)
    write_parser.add_argument("--launchers", nargs="+", required=True)
    write_parser.add_argument("--json", required=True)
    write_parser.add_argument("--text", required=True)
    check_parser = commands.add_parser("check")
    check_parser.add_argument("report")
    args = parser.parse_args()
    return write(args) or 0 if args.command == "write" else check(args)


if __name__ == "__main__":
    sys.exit(main())
