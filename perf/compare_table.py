#!/usr/bin/env python3
"""Merges the logs of perf/compare.sh into markdown tables (and a PNG plot when matplotlib is
installed): time and busbw per size for weft, Open MPI and gloo, and weft's busbw ratios."""
import pathlib
import re
import sys


def read_weft(path):
    rows = {}
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        fields = line.split()
        if line.startswith("#") or len(fields) < 13:
            continue
        # size count type redop root time algbw busbw #wrong (out-of-place) ...
        rows[int(fields[0])] = (float(fields[5]), float(fields[7]))
    return rows


def read_simple(path):
    rows = {}
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        fields = line.split()
        if line.startswith("#") or len(fields) != 3:
            continue
        rows[int(fields[0])] = (float(fields[1]), float(fields[2]))
    return rows


def load(out, name, np, reader):
    """size -> (best time in us over the repetitions, busbw in GB/s); busbw is recomputed from the time with nccl-tests'
    all-reduce factor 2(n-1)/n, so every library's column has the same precision."""
    rows = {}
    for path in sorted(out.glob(f"{name}_np{np}.*.txt")):
        if ".rss." in path.name:
            continue
        for size, row in reader(path).items():
            if size not in rows or row[0] < rows[size][0]:
                rows[size] = row  # the best of the repetitions
    factor = 2 * (np - 1) / np
    return {size: (t, size / (t * 1e-6) / 1e9 * factor if t > 0 else 0.0)
            for size, (t, _) in rows.items()}


def human(size):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def cell(rows, size, index, fmt):
    return fmt.format(rows[size][index]) if size in rows else "-"


def ratio(a, b, size):
    """weft's busbw over the other's, from the times (same bytes), so rounding of the printed
    busbw does not matter."""
    if size in a and size in b and a[size][0] > 0:
        return f"{b[size][0] / a[size][0]:.2f}"
    return "-"


def main():
    out = pathlib.Path(sys.argv[1])
    mode = sys.argv[2]
    nps = [int(n) for n in sys.argv[3:]]
    transport = "shared memory" if mode == "shm" else "tcp"
    plots = []
    for np in nps:
        weft = load(out, "weft", np, read_weft)
        ompi = load(out, "ompi", np, read_simple)
        gloo = load(out, "gloo", np, read_simple)
        print(f"\n### {np} ranks, float32 sum, {transport}\n")
        print("| size | weft us | weft busbw | Open MPI us | Open MPI busbw | gloo us | gloo busbw "
              "| weft/MPI busbw | weft/gloo busbw |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in sorted(weft):
            print(f"| {human(size)} | {cell(weft, size, 0, '{:.1f}')} | {cell(weft, size, 1, '{:.3f}')} "
                  f"| {cell(ompi, size, 0, '{:.1f}')} | {cell(ompi, size, 1, '{:.3f}')} "
                  f"| {cell(gloo, size, 0, '{:.1f}')} | {cell(gloo, size, 1, '{:.3f}')} "
                  f"| {ratio(weft, ompi, size)} | {ratio(weft, gloo, size)} |")
        peaks = []
        for rss in out.glob(f"weft_np{np}.rss.*.txt"):
            # Ranks share one stderr, so their lines can interleave; take every number.
            peaks += [int(n) for n in re.findall(r"\b(\d+)\b", rss.read_text())]
        if peaks:
            print(f"\nPeak resident memory of a weft rank in the large sweeps: "
                  f"{max(peaks) / 1024:.0f} MiB (highest of {len(peaks)} rank runs)")
        plots.append((np, weft, ompi, gloo))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    figure, axes = plt.subplots(1, len(plots), figsize=(6 * len(plots), 4.5), squeeze=False)
    for axis, (np, weft, ompi, gloo) in zip(axes[0], plots):
        mpi = "Open MPI (vader)" if mode == "shm" else "Open MPI (tcp)"
        for label, rows in ((f"weft ({mode})", weft), (mpi, ompi), ("gloo", gloo)):
            if rows:
                sizes = sorted(rows)
                axis.plot(sizes, [rows[s][1] for s in sizes], marker="o", markersize=3, label=label)
        axis.set_xscale("log", base=2)
        axis.set_xlabel("bytes")
        axis.set_ylabel("busbw (GB/s)")
        axis.set_title(f"all-reduce float32 sum, {np} ranks, {transport}")
        axis.grid(True, alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(out / f"compare_{mode}.png", dpi=110)
    print(f"\nPlot: {out / f'compare_{mode}.png'}")


if __name__ == "__main__":
    main()
