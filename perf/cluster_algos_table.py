#!/usr/bin/env python3
"""The table of perf/cluster_algos.sh: per configuration and size, each algorithm's median
out-of-place time over the rounds (microseconds), the fastest forced one, and auto's time over
it; then how many cells auto has within 10 % of the fastest and beyond 1.25x."""
import statistics
import sys

from perf_logs import ALGOS_RUN, out_of_place_times


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "cluster-algos"
    # (config, size) -> algo -> [us]
    times = out_of_place_times(folder, ALGOS_RUN)
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
        if not forced or "auto" not in medians:
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
