#!/usr/bin/env python3
"""Runs the real `surge` on several hundred bad inputs (fuzz_cli_cases.py) and holds it to its promise:
exit 0 or 2, never 1 and never a signal; on exit 2 exactly one line on stderr, starting with "surge";
nothing created or changed in the case's folder but the outputs a successful run declares; no sanitizer
report. Each case runs in its own empty folder, made for it.

    fuzz_cli.py SURGE SOURCE_DIR [--json SUMMARY.json] [--jobs N] [--only SUBSTRING]

The cases that fail today are listed in EXPECTED_FAILURES with their reason: the test passes when exactly
those fail, and names any that now pass so that the table can shrink.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_cli_cases  # noqa: E402
import fuzz_cli_files  # noqa: E402

# case id -> why it fails today (one line each); see the module's docstring.
EXPECTED_FAILURES = {
    'paths/bench-env/--json:link-to-dev-full': 'the benchmark prints its start line before the write to /dev/full fails at the end (a full device is only found when written): two stderr lines',
    'paths/bench-sweep/--svg:link-to-dev-full': 'the sweep prints its progress before the write to /dev/full fails at the end (a full device is only found when written): several stderr lines',
    'paths/step/--input:fifo': 'reading a FIFO waits for its writer, as any reader does, and the case has none',
    'paths/train/--config:fifo': 'reading a FIFO waits for its writer, as any reader does, and the case has none',
}

# Cases that fail only under AddressSanitizer, whose operator new aborts where the plain build's throws.
EXPECTED_FAILURES_SANITIZED = {
    'paths/step/--input:dev-full': 'reads /dev/full as one endless line until new fails (tools/cli/io.cpp CsvTable)',
    'paths/step/--input:dev-zero': 'reads /dev/zero as one endless line until new fails (tools/cli/io.cpp CsvTable)',
}

# A sanitizer report inside libhdf5 (its innermost frame outside the sanitizer's runtime and the allocator),
# about memory that libhdf5 allocated, on a case that hands the program a damaged HDF5 file, is HDF5 1.10's
# defect on that file (for example H5HG_read copying a damaged global-heap object over itself, or a leak on
# its error path), not Surge's: such cases are listed apart and do not fail. Which byte flips reach one
# depends on the fixture's bytes, which vary from run to run.
FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ ", re.M)


RUNTIME_FRAME = re.compile(r"__interceptor_|__asan|__sanitizer|__ubsan| in (malloc|calloc|realloc|free|"
                           r"operator new|operator delete)\b")


def first_own_frame(lines):
    """The first stack frame that is neither the sanitizer's runtime nor the allocator."""
    return next((line for line in lines if FRAME.match(line) and not RUNTIME_FRAME.search(line)), "")


def hdf5_defect(case, text):
    """The report is in libhdf5, and so is every piece of memory it names: a leak HDF5 allocated, or an access
    by HDF5 to memory HDF5 allocated (not a buffer of ours that HDF5 was handed)."""
    if not case.id.startswith("hdf5/"):
        return False
    lines = text.splitlines()
    if "libhdf5" not in first_own_frame(lines):
        return False
    owners = [k for k, line in enumerate(lines) if "allocated by" in line]
    return all("libhdf5" in first_own_frame(lines[k + 1:]) for k in owners)


CASE_TIMEOUT_S = 30
MEMORY_LIMIT_BYTES = 6 << 30
SANITIZER_REPORT = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|"
                              r"MemorySanitizer|runtime error:)")


def materialize(case, folder):
    for name, spec in sorted(case.files.items()):
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(spec, bytes):
            if os.path.lexists(path):
                os.remove(path)
            with open(path, "wb") as f:
                f.write(spec)
        elif spec[0] == "dir":
            os.makedirs(path, exist_ok=True)
        elif spec[0] == "ro-dir":
            os.makedirs(path, exist_ok=True)
            os.chmod(path, 0o555)
        elif spec[0] == "fifo":
            os.mkfifo(path)
        elif spec[0] == "symlink":
            os.symlink(spec[1], path)
        elif spec[0] == "copy":
            if os.path.lexists(path):
                os.remove(path)
            shutil.copyfile(spec[1], path)
        elif spec[0] == "copytree":
            shutil.copytree(spec[1], path, dirs_exist_ok=True)
        else:
            raise ValueError(f"unknown file spec {spec!r}")


def snapshot(folder):
    """Every entry below folder: its kind, size, modification time and link target."""
    entries = {}
    for root, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(root, name)
            info = os.lstat(path)
            relative = os.path.relpath(path, folder)
            if stat.S_ISDIR(info.st_mode):
                entries[relative] = ("dir",)
            elif stat.S_ISLNK(info.st_mode):
                entries[relative] = ("link", os.readlink(path))
            else:
                entries[relative] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns)
    return entries


def declared(path, outputs):
    normalized = [os.path.normpath(out) for out in outputs if out]
    return any(path == out or path.startswith(out + os.sep) for out in normalized)


def limit_child():
    os.setsid()
    if not os.environ.get("FUZZ_CLI_SANITIZED"):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run_case(surge, case, scratch, index):
    folder = os.path.join(scratch, f"case{index:04d}")
    os.makedirs(folder)
    materialize(case, folder)
    before = snapshot(folder)
    process = subprocess.Popen([surge, *case.argv], cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=limit_child)
    try:
        _, stderr = process.communicate(timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return [f"still running after {CASE_TIMEOUT_S} s"], ""
    after = snapshot(folder)
    code = process.returncode
    text = stderr.decode("utf-8", errors="replace")
    if SANITIZER_REPORT.search(text) and hdf5_defect(case, text):
        print(f"fuzz_cli: {case.id}: a sanitizer report inside libhdf5 (HDF5's defect on a damaged file), not counted",
              file=sys.stderr)
        make_removable(folder)
        return [], text
    problems = []
    if code < 0:
        problems.append(f"killed by {signal.Signals(-code).name}")
    elif code not in (0, 2):
        problems.append(f"exit code {code}")
    if code == 2:
        lines = text.splitlines()
        if len(lines) != 1 or not lines[0].startswith("surge"):
            problems.append(f"stderr has {len(lines)} lines, first {lines[0][:80] if lines else ''!r}")
    if SANITIZER_REPORT.search(text):
        problems.append("sanitizer report")
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    allowed = case.outputs if code == 0 else ()
    # Folders above a declared output may be created for it.
    parents = set()
    for out in allowed:
        folder = os.path.dirname(os.path.normpath(out))
        while folder:
            parents.add(folder)
            folder = os.path.dirname(folder)
    stray = [p for p in changed if not declared(p, allowed) and not (after.get(p) == ("dir",) and p in parents)]
    if stray:
        problems.append(f"changed {', '.join(repr(p) for p in stray[:3])}" + (" ..." if len(stray) > 3 else ""))
    if not problems:
        make_removable(folder)
        shutil.rmtree(folder, ignore_errors=True)
    return problems, text


def make_removable(folder):
    for root, dirs, _ in os.walk(folder):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("surge")
    parser.add_argument("source_dir")
    parser.add_argument("--json", help="write the summary here")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="run only the cases whose id contains this")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--verbose", action="store_true", help="print every failing case's stderr")
    args = parser.parse_args()
    surge = os.path.abspath(args.surge)
    with open(surge, "rb") as f:
        if b"__asan_init" in f.read():
            # ASan reserves far more address space than any limit would allow; it limits itself instead.
            os.environ["FUZZ_CLI_SANITIZED"] = "1"
            EXPECTED_FAILURES.update(EXPECTED_FAILURES_SANITIZED)
            os.environ["ASAN_OPTIONS"] = ("allocator_may_return_null=1 max_allocation_size_mb=6144 "
                                          "hard_rss_limit_mb=6144 " + os.environ.get("ASAN_OPTIONS", ""))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    scratch = tempfile.mkdtemp(prefix="surge-fuzz-cli-")
    try:
        fixtures = fuzz_cli_files.make_fixtures(surge, os.path.join(scratch, "fixtures"))
        cases = fuzz_cli_cases.all_cases(fixtures, args.source_dir, os.path.join(scratch, "edited"))
        unknown = sorted(set(EXPECTED_FAILURES) - {case.id for case in cases})
        cases = [case for case in cases if args.only in case.id]
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda item: run_case(surge, item[1], scratch, item[0]), enumerate(cases)))
    finally:
        if not args.keep:
            make_removable(scratch)
            shutil.rmtree(scratch, ignore_errors=True)

    failing = {case.id: (problems, text) for case, (problems, text) in zip(cases, results) if problems}
    by_category = collections.Counter(case.category for case in cases)
    failing_by_category = collections.Counter(case_id.split("/", 1)[0] for case_id in failing)
    expected = {case.id for case in cases} & set(EXPECTED_FAILURES)
    unexpected = sorted(set(failing) - expected)
    now_passing = sorted(expected - set(failing))

    print(f"fuzz_cli: {len(cases)} cases, {len(cases) - len(failing)} clean, {len(failing)} failing "
          f"({len(failing) - len(unexpected)} of them expected)")
    for category in sorted(by_category):
        print(f"  {category:8} {by_category[category]:4} cases, {failing_by_category[category]:3} failing")
    for case_id in unexpected:
        problems, text = failing[case_id]
        argv = next(case.argv for case in cases if case.id == case_id)
        print(f"FAIL {case_id}: {'; '.join(problems)}\n     surge {' '.join(repr(a) if ' ' in a or not a else a for a in argv)}")
        if args.verbose:
            print("     " + text[-2000:].replace("\n", "\n     "))
    for case_id in now_passing:
        print(f"NOW PASSING (remove from EXPECTED_FAILURES): {case_id}")
    for case_id in unknown:
        print(f"NO SUCH CASE (remove from EXPECTED_FAILURES): {case_id}")
    if args.json:
        summary = {"cases": len(cases), "clean": len(cases) - len(failing),
                   "cases_by_category": dict(by_category), "failing_by_category": dict(failing_by_category),
                   "failing": {case_id: failing[case_id][0] for case_id in sorted(failing)},
                   "unexpected": unexpected, "now_passing": now_passing}
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if unexpected or now_passing or (unknown and not args.only) else 0


if __name__ == "__main__":
    sys.exit(main())
