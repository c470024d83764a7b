#!/usr/bin/env python3
"""surge picks OpenBLAS kernels that fit the CPU where OpenBLAS itself falls back to a generic core.

Reads `surge doctor --json` three ways: as surge runs by default, with SURGE_OPENBLAS_RERUN set (OpenBLAS's
own choice), and with the user's OPENBLAS_CORETYPE, and checks each against the CPU's flags in /proc/cpuinfo.
"""
import json
import os
import platform
import subprocess
import sys

SKIPPED = 77  # ctest's SKIP_RETURN_CODE
GENERIC = {"Prescott", "Core2", "Nehalem", "Penryn", "Dunnington"}


def kernels(surge, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "SURGE_OPENBLAS_RERUN")}
    full.update(env)
    out = subprocess.run([surge, "doctor", "--json"], env=full, check=True, capture_output=True, text=True).stdout
    cpu = json.loads(out)["cpu"]
    return cpu["blas"], cpu["blas_kernels"], cpu["blas_config"]


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def main():
    surge = sys.argv[1]
    blas, own, config = kernels(surge, SURGE_OPENBLAS_RERUN="1")
    if not own or "DYNAMIC_ARCH" not in config or platform.machine() != "x86_64":
        print(f"skipped: the CPU GEMM is not an x86-64 OpenBLAS that picks its kernels at load ({blas}; {config})")
        return SKIPPED
    _, default, _ = kernels(surge)
    flags = cpu_flags()
    avx512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags
    if own in GENERIC and avx512:
        expected = "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    elif own in GENERIC and {"avx2", "fma"} <= flags:
        expected = "Haswell"
    else:
        expected = own  # OpenBLAS's own choice stands
    failures = []
    if default != expected:
        failures.append(f"OpenBLAS chose {own}; surge ran {default}, expected {expected}")
    _, forced, _ = kernels(surge, OPENBLAS_CORETYPE="Haswell")
    if forced != "Haswell":
        failures.append(f"the user's OPENBLAS_CORETYPE=Haswell gave {forced}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"ok: OpenBLAS's own choice {own}, surge runs {default}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
