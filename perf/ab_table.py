#!/usr/bin/env python3
"""Markdown tables from perf/ab_compare.sh's logs: per transport and mode, each size's median
out-of-place time of build A and build B over the rounds, their spread, and B/A."""
import argparse
import glob
import os
import statistics
from collections import defaultdict


def times(path):
    """{size: out-of-place time in us} from one all_reduce_perf output; refuses wrong results."""
    found = {}
    with open(path, encoding="utf-8") as log:
        for line in log:
            cells = line.split()
            if len(cells) >= 13 and cells[0].isdigit():
                if cells[8] not in ("0", "N/A") or cells[12] not in ("0", "N/A"):
                    raise SystemExit(f"{path}: #wrong is not 0 at {cells[0]} bytes")
                found[int(cells[0])] = float(cells[5])
    return found


def collect(folder, label, transport, mode):
    """{size: [time per round]}."""
    rounds = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(folder, f"{label}_{transport}_z{mode}.*.txt"))):
        for size, micros in times(path).items():
            rounds[size].append(micros)
    return rounds


def human(size):
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}iB"
    return f"{size} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder")
    parser.add_argument("--transport", action="append", default=[])
    parser.add_argument("--mode", action="append", default=[])
    args = parser.parse_args()
    for transport in args.transport or ["shm", "tcp"]:
        for mode in args.mode or ["2", "0"]:
            a = collect(args.folder, "A", transport, mode)
            b = collect(args.folder, "B", transport, mode)
            kind = "blocking (-z 2)" if mode == "2" else f"-z {mode}"
            print(f"\n{transport}, {kind}: median of {len(next(iter(a.values()), []))} rounds "
                  "(us; spread = min-max)\n")
            print("| size | A | A spread | B | B spread | B/A |")
            print("|---:|---:|---:|---:|---:|---:|")
            for size in sorted(set(a) & set(b)):
                ma, mb = statistics.median(a[size]), statistics.median(b[size])
                print(f"| {human(size)} | {ma:.2f} | {min(a[size]):.2f}-{max(a[size]):.2f} | "
                      f"{mb:.2f} | {min(b[size]):.2f}-{max(b[size]):.2f} | {mb / ma:.2f} |")


if __name__ == "__main__":
    main()
