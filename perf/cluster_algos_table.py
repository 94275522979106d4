#!/usr/bin/env python3
"""The table of perf/cluster_algos.sh: per configuration and size, each algorithm's median
out-of-place time over the rounds (microseconds), the fastest forced one, and auto's time over
it; then how many cells auto has within 10 % of the fastest and beyond 1.25x."""
import glob
import os
import re
import statistics
import sys
from collections import defaultdict


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "cluster-algos"
    times = defaultdict(lambda: defaultdict(list))  # (config, size) -> algo -> [us]
    name = re.compile(r"(.+?)\.([a-z_]+)\.(small|large)\.\d+\.txt$")
    for path in glob.glob(os.path.join(folder, "*.txt")):
        match = name.match(os.path.basename(path))
        if not match:
            continue
        with open(path, encoding="utf-8") as log:
            for line in log:
                cells = line.split()
                if len(cells) >= 13 and cells[0].isdigit():
                    try:
                        times[(match.group(1), int(cells[0]))][match.group(2)].append(
                            float(cells[5]))
                    except ValueError:
                        pass  # a log line of another rank written across the table
    if not times:
        sys.exit(f"{folder}: no results")
    algos = sorted({algo for sides in times.values() for algo in sides} - {"auto"})
    print("| configuration | size | " + " | ".join(algos) + " | auto | fastest | auto / fastest |")
    print("|---|---:|" + "---:|" * (len(algos) + 1) + "---|---:|")
    ratios = []
    for config, size in sorted(times):
        sides = times[(config, size)]
        medians = {algo: statistics.median(sides[algo]) for algo in sides if sides[algo]}
        forced = {algo: t for algo, t in medians.items() if algo != "auto"}
        # Size 0 (a sweep from 16 bytes over 6 ranks rounds down to it) times nothing.
        if not forced or "auto" not in medians or size == 0:
            continue
        fastest = min(forced, key=forced.get)
        ratio = medians["auto"] / forced[fastest]
        ratios.append(ratio)
        cells = [f"{forced[a]:.1f}" if a in forced else "-" for a in algos]
        print(f"| {config} | {size} | " + " | ".join(cells) +
              f" | {medians['auto']:.1f} | {fastest} | {ratio:.2f} |")
    print(f"\n{len(ratios)} cells: auto within 10 % of the fastest forced algorithm in "
          f"{sum(r <= 1.1 for r in ratios)}, beyond 1.25x in {sum(r > 1.25 for r in ratios)}; "
          f"median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}")


if __name__ == "__main__":
    main()
