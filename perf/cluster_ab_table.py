#!/usr/bin/env python3
"""The table of perf/cluster_ab.sh: per configuration and size, B's median out-of-place time
over A's (medians over the rounds), then how many cells moved by more than 10 % either way and
the geometric mean per size."""
import math
import re
import statistics
import sys
from collections import defaultdict

from perf_logs import out_of_place_times


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "cluster-ab"
    # (config, size) -> side -> [us]
    times = out_of_place_times(folder, re.compile(r"(.+)\.(A|B)\.(small|large)\.\d+\.txt$"))
    configs = sorted({config for config, _ in times})
    sizes = sorted({size for _, size in times})
    print("| configuration | " + " | ".join(str(size) for size in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    ratios, by_size = [], defaultdict(list)
    for config in configs:
        row = []
        for size in sizes:
            sides = times.get((config, size), {})
            if not sides.get("A") or not sides.get("B"):
                row.append("-")
                continue
            ratio = statistics.median(sides["B"]) / statistics.median(sides["A"])
            ratios.append(ratio)
            by_size[size].append(ratio)
            row.append(f"{ratio:.2f}")
        print(f"| {config} | " + " | ".join(row) + " |")
    if not ratios:
        sys.exit(f"{folder}: no results")
    print(f"\n{len(ratios)} cells, median B/A {statistics.median(ratios):.2f}; "
          f"{sum(r < 0.9 for r in ratios)} faster by more than 10 %, "
          f"{sum(r > 1.1 for r in ratios)} slower by more than 10 %")
    print("geometric mean per size: " + ", ".join(
        f"{size}: {math.exp(statistics.mean(math.log(r) for r in by_size[size])):.2f}"
        for size in sizes if by_size[size]))


if __name__ == "__main__":
    main()
