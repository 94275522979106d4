#!/usr/bin/env python3
"""Runs all_reduce_perf on 2 ranks with the nccl-tests flags weft implements and checks what each
one means: -J writes nccl-tests' JSON (version 3 layout) holding the sizes and times the table
shows, never overwriting an earlier file; -M 1 prints the memory line with the buffers' bytes;
-S 1 ends each row with a timestamp; -u shows in the preamble and keeps the results exact; the
off values of the refused flags (-D 0 -G 0) and of -R/-I/-K are accepted; -R 1 and -R 2 (buffers
from weftMemAlloc, registered locally or as symmetric windows) name their mode in the preamble and
keep the results exact.

With "per_iter" it checks -I 1 -K 1 instead, in every -z mode on 2 processes x 2 threads: the
preamble line, the header, four summary columns after each variant (before -S's timestamp) and
the JSON per-iteration objects, whose summary must follow from their own times as nccl-tests
computes it and whose times must be the largest of the per-process rows.

usage: check_nccl_flags.py WEFTRUN ALL_REDUCE_PERF WORKDIR [per_iter]
"""
import json
import os
import re
import shutil
import subprocess
import sys

MAX_BYTES = 4 * 1024 * 1024  # above malloc's mmap threshold: buffers are fresh resident pages
SIZES = [8 * 4**i for i in range(11) if 8 * 4**i <= MAX_BYTES]


def fail(message, output=""):
    print("FAIL: " + message)
    if output:
        print(output)
    sys.exit(1)


def run(weftrun, perf, flags):
    command = [weftrun, "--timeout", "150", "-n", "2", perf, "-b", "8", "-e", str(MAX_BYTES),
               "-f", "4", "-n", "3", "-w", "1", "-c", "1"] + flags
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=180)
    if result.returncode != 0:
        fail("exit %d: %s" % (result.returncode, " ".join(command)), result.stdout)
    return result.stdout


def table_rows(output):
    rows = [line.split() for line in output.splitlines()
            if line.strip() and not line.startswith("#") and line.split()[0].isdigit()]
    if [int(row[0]) for row in rows] != SIZES:
        fail("table sizes %s, expected %s" % ([row[0] for row in rows], SIZES), output)
    return rows


def check_json(path, rows, output):
    with open(path) as f:
        doc = json.load(f)
    for key in ["version", "start_time", "args", "env", "nccl_version", "config", "results",
                "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"]:
        if key not in doc:
            fail("JSON lacks top-level key '%s'" % key)
    if doc["version"] != 3:
        fail("JSON version %r, expected nccl-tests' 3" % doc["version"])
    config = doc["config"]
    if (config["minimum_bytes"], config["maximum_bytes"], config["step_factor"],
            config["iterations"]) != (8, MAX_BYTES, 4, 3):
        fail("JSON config %r does not hold the run's flags" % config)
    if len(config["devices"]) != 2:
        fail("JSON config lists %d devices, expected 2 ranks" % len(config["devices"]))
    results = doc["results"]
    if [r["size"] for r in results] != SIZES:
        fail("JSON sizes %s, expected %s" % ([r["size"] for r in results], SIZES))
    for result, row in zip(results, rows):
        if result["count"] != int(row[1]) or result["type"] != "float" or \
                result["root"].strip() != "-1" or result["actual_iterations"] != 3:
            fail("JSON row %r does not match table row %r" % (result, row))
        for variant, column in (("out_of_place", 5), ("in_place", 9)):
            timing = result[variant]
            if not timing["time"] > 0 or abs(timing["time"] - float(row[column])) > \
                    0.01 + 0.001 * timing["time"]:
                fail("JSON %s time %r is not the table's %s" % (variant, timing, row[column]))
            if timing["nwrong"] != 0:
                fail("JSON %s nwrong %r" % (variant, timing["nwrong"]))
    if doc["out_of_bounds"] != {"count": 0, "okay": "true"}:
        fail("JSON out_of_bounds %r" % doc["out_of_bounds"])
    if doc["average_bus_bandwidth"]["okay"] != "unchecked":
        fail("JSON average_bus_bandwidth %r" % doc["average_bus_bandwidth"])


PER_ITERS = 5
PER_ITER_SKIP = 1
PER_ITER_HEADER = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
                   "    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min"
                   "    i_max    i_p99    i_cv%           timestamp\n")


def close(text_value, json_value):
    return abs(float(text_value) - json_value) <= 0.05 + 0.001 * abs(json_value)


def expected_stats(times):
    """nccl-tests' summary: upper median, nearest-rank percentiles, population deviation."""
    ordered = sorted(times)
    n = len(ordered)
    avg = sum(ordered) / n
    stdev = (sum((t - avg) ** 2 for t in ordered) / n) ** 0.5

    def nearest_rank(percent):
        return ordered[min(n - 1, (n * percent + 99) // 100 - 1)]
    return {"min_us": ordered[0], "max_us": ordered[-1], "avg_us": avg, "p50_us": ordered[n // 2],
            "p95_us": nearest_rank(95), "p99_us": nearest_rank(99), "stdev_us": stdev,
            "cv_pct": stdev / avg * 100 if avg > 0 else 0}


def check_per_iter_json(path, rows, output):
    with open(path) as f:
        doc = json.load(f)
    config = doc["config"]
    if config["per_iter_timing"] != "true" or config["per_iter_skip"] != PER_ITER_SKIP:
        fail("JSON config per_iter_timing %r per_iter_skip %r" % (config["per_iter_timing"],
                                                                  config["per_iter_skip"]))
    for result, row in zip(doc["results"], rows):
        keys = [k for k in result if "place" in k]
        if keys != ["out_of_place", "out_of_place_per_iter", "in_place", "in_place_per_iter"]:
            fail("JSON row keys %r, expected nccl-tests' order" % keys)
        for variant, column in (("out_of_place_per_iter", 9), ("in_place_per_iter", 17)):
            stats = result[variant]
            times = stats["times_us"]
            processes = stats["per_process_max_times_us"]
            if stats["skipped_iterations"] != PER_ITER_SKIP or len(times) != PER_ITERS or \
                    len(processes) != 2 or any(len(p) != PER_ITERS for p in processes):
                fail("JSON %s %r: wrong skip or lengths" % (variant, stats))
            if any(abs(t - max(p[i] for p in processes)) > 1e-3 for i, t in enumerate(times)):
                fail("JSON %s times_us %r are not the per-iteration maxima of %r" %
                     (variant, times, processes))
            if not all(t > 0 for t in times):
                fail("JSON %s has a non-positive time: %r" % (variant, times))
            for name, value in expected_stats(times[PER_ITER_SKIP:]).items():
                if abs(stats[name] - value) > 2e-3 + 1e-6 * abs(value):
                    fail("JSON %s %s %r, expected %r from its times %r" %
                         (variant, name, stats[name], value, times))
            text = row[column:column + 4]
            for value, name in zip(text, ["min_us", "max_us", "p99_us", "cv_pct"]):
                if not close(value, stats[name]):
                    fail("%s %s: text %s, JSON %r" % (variant, name, value, stats[name]), output)


def check_per_iter(weftrun, perf, workdir):
    for mode in ["0", "1", "2", "3"]:
        path = os.path.join(workdir, "per_iter_z%s.json" % mode)
        output = run(weftrun, perf, ["-t", "2", "-z", mode, "-n", str(PER_ITERS), "-I", "1",
                                     "-K", str(PER_ITER_SKIP), "-S", "1", "-J", path])
        if "# Per-Iteration Report: host clock timing; i_* uses max over process rows; summary " \
                "skips first %d iterations \n" % PER_ITER_SKIP not in output:
            fail("-I 1 -K %d: no per-iteration preamble line" % PER_ITER_SKIP, output)
        if PER_ITER_HEADER not in output or "out-of-place (+ per-iteration)" not in output:
            fail("-I 1: not nccl-tests' per-iteration header", output)
        rows = table_rows(output)
        for row in rows:
            if len(row) != 23 or row[8] != "0" or row[16] != "0" or \
                    not re.fullmatch(r"\d{4}-\d\d-\d\d", row[21]):
                fail("-I 1 -S 1 -z %s: row %r is not 21 columns and a timestamp" % (mode, row),
                     output)
            for first in (9, 17):
                low, high, p99 = (float(v) for v in row[first:first + 3])
                if not 0 <= low <= p99 <= high:
                    fail("-I 1 -z %s: i_min <= i_p99 <= i_max fails in %r" % (mode, row), output)
        check_per_iter_json(path, rows, output)
    print("OK")


def main():
    weftrun, perf, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    path = os.path.join(workdir, "results.json")
    if sys.argv[4:] == ["per_iter"]:
        check_per_iter(weftrun, perf, workdir)
        return

    # Short forms, with the memory report, timestamps, misalignment and the refused flags' off
    # values.
    output = run(weftrun, perf, ["-J", path, "-M", "1", "-S", "1", "-u", "3", "-I", "0", "-K",
                                 "0", "-R", "0", "-D", "0", "-G", "0", "-k", "host"])
    if "# Writing JSON output to %s\n" % path not in output:
        fail("no '# Writing JSON output to' line", output)
    if "unalign: 3" not in output:
        fail("the preamble does not show -u 3", output)
    rows = table_rows(output)
    for row in rows:
        if len(row) != 15 or not re.fullmatch(r"\d{4}-\d\d-\d\d", row[13]) or \
                not re.fullmatch(r"\d\d:\d\d:\d\d", row[14]):
            fail("-S 1: row without a trailing timestamp: %r" % row, output)
        if row[8] != "0" or row[12] != "0":
            fail("-u 3: wrong elements in row %r" % row, output)
    if not re.search(r"^#.*#wrong +timestamp$", output, re.M):
        fail("-S 1: no timestamp column in the header", output)
    memory = re.search(r"^# Host memory usage +: Initialization (-?[\d.]+ [KMG]?B) \| "
                       r"User-Allocated ([\d.]+) ([KMG]?B) \| Collective -?[\d.]+ [KMG]?B \| "
                       r"Total  -?[\d.]+ [KMG]?B$", output, re.M)
    if not memory:
        fail("-M 1: no memory usage line", output)
    scale = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[memory.group(3)]
    user = float(memory.group(2)) * scale
    # Send, receive and expected buffers of MAX_BYTES each, resident once zeroed.
    if not 3 * MAX_BYTES * 0.9 <= user <= 3 * MAX_BYTES * 2:
        fail("-M 1: User-Allocated %s is not the 3 x %d buffer bytes" % (memory.group(0),
                                                                           MAX_BYTES), output)
    check_json(path, rows, output)

    # Long forms; the same -J path again is kept and the new results go to path.0.
    output = run(weftrun, perf, ["--output_file", path, "--memory", "0",
                                 "--report_timestamps", "0", "--unalign", "0",
                                 "--memory-kind", "host"])
    if "# Writing JSON output to %s.0\n" % path not in output:
        fail("a second -J to the same path did not go to %s.0" % path, output)
    rows = table_rows(output)
    if any(len(row) != 13 for row in rows) or "memory usage" in output:
        fail("-S 0 / -M 0 still print timestamps or the memory line", output)
    check_json(path + ".0", rows, output)
    if "Registration Enabled" in output:
        fail("-R 0 (the default) prints a registration line", output)

    # -R 1 and -R 2: the send and receive buffers come from weftMemAlloc and are registered once;
    # -R 2's windows also on 2 threads of a process and with -u shifting the calls inside them.
    for flags, line in ((["-R", "1"], "# Local Registration Enabled (-R 1)"),
                        (["--local_register", "2", "-t", "2", "-u", "1"],
                         "# Symmetric Registration Enabled (-R 2)")):
        output = run(weftrun, perf, flags)
        if line not in output:
            fail("%s: no '%s' line in the preamble" % (" ".join(flags), line), output)
        for row in table_rows(output):
            if row[8] != "0" or row[12] != "0":
                fail("%s: wrong elements in row %r" % (" ".join(flags), row), output)
    print("OK")


if __name__ == "__main__":
    main()
