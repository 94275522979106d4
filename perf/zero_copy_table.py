#!/usr/bin/env python3
"""Markdown tables from perf/zero_copy.sh's logs: per rank count and size, the median time and
busbw of weft with -R 0, 1 and 2 and of Open MPI, the ratio of -R 2 to Open MPI and to -R 0, and
-R 2's busbw as a fraction of the memory-bandwidth bound (B (P-1) / P^2, B the best two-thread
streaming a + b figure of perf/membw before and after the runs)."""
import pathlib
import statistics
import sys


def rows_of(path, weft):
    rows = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if line.startswith("#") or not fields:
            continue
        if weft and len(fields) >= 13:
            rows[int(fields[0])] = float(fields[5])  # out-of-place time, us
        elif not weft and len(fields) == 3:
            rows[int(fields[0])] = float(fields[1])
    return rows


def medians(out, pattern, weft):
    runs = [rows_of(path, weft) for path in sorted(out.glob(pattern))]
    sizes = set().union(*runs) if runs else set()
    return {size: (statistics.median(r[size] for r in runs if size in r),
                   [r[size] for r in runs if size in r]) for size in sizes}


def bandwidth_bound(out):
    best = 0.0
    for path in out.glob("membw.*.txt"):
        for line in path.read_text().splitlines():
            fields = line.split()
            if not line.startswith("#") and len(fields) == 4 and fields[0] == "2":
                best = max(best, float(fields[3]))
    return best


def human(size):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def main():
    out = pathlib.Path(sys.argv[1])
    nps = [int(n) for n in sys.argv[2:]]
    bound_b = bandwidth_bound(out)
    print(f"Memory bandwidth B (two threads, streaming a + b, best of the runs): {bound_b:.1f} GB/s\n")
    for np in nps:
        factor = 2 * (np - 1) / np
        bound = bound_b * (np - 1) / np ** 2
        names = ["R0", "R1", "R2"]
        weft = {name: medians(out, f"weft_{name}_np{np}.*.txt", True) for name in names}
        ompi = medians(out, f"ompi_np{np}.*.txt", False)
        print(f"#### {np} ranks (bound {bound:.1f} GB/s busbw)\n")
        print("| size | -R 0 us | -R 1 us | -R 2 us | Open MPI us | -R 2 busbw GB/s | of bound "
              "| -R 2 vs Open MPI | -R 2 vs -R 0 | -R 2 runs (us) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for size in sorted(weft["R2"]):
            t2, runs = weft["R2"][size]
            busbw = size / (t2 * 1e-6) / 1e9 * factor
            cells = [human(size)]
            cells += [f"{weft[n][size][0]:.0f}" if size in weft[n] else "-" for n in names]
            cells.append(f"{ompi[size][0]:.0f}" if size in ompi else "-")
            cells.append(f"{busbw:.2f}")
            cells.append(f"{busbw / bound:.2f}" if bound else "-")
            cells.append(f"{ompi[size][0] / t2:.2f}x" if size in ompi else "-")
            cells.append(f"{weft['R0'][size][0] / t2:.2f}x" if size in weft["R0"] else "-")
            cells.append(", ".join(f"{t:.0f}" for t in runs))
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
