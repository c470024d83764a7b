#!/usr/bin/env python3
"""Compiler launcher for nvcc: runs the compile as given and keeps ptxas's resource report (-Xptxas=-v)
beside the object, as <object>.ptxas, for tools/kernel_report/report.py. Everything else the compiler
prints passes through unchanged, so the build log stays as quiet as without -v.

    ptxas_log.py nvcc <arguments ... -o object ...>
"""
import subprocess
import sys


def object_path(arguments):
    for index, argument in enumerate(arguments):
        if argument == "-o" and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument.startswith("-o") and len(argument) > 2:
            return argument[2:]
    return None


def main():
    command = sys.argv[1:]
    result = subprocess.run(command, stderr=subprocess.PIPE, text=True, errors="replace")
    report, passed = [], []
    for line in result.stderr.splitlines(keepends=True):
        # "ptxas info : ..." and the indented "N bytes stack frame, ..." line under "Function properties".
        is_report = line.startswith("ptxas info") or (line.startswith("    ") and "bytes stack frame" in line)
        (report if is_report else passed).append(line)
    sys.stderr.write("".join(passed))
    target = object_path(command)
    if result.returncode == 0 and target:
        with open(target + ".ptxas", "w", encoding="utf-8") as log:
            log.write("".join(report))
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
