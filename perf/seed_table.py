#!/usr/bin/env python3
"""Merges the results of perf/seed_bench.sh into markdown: one table per cluster configuration
(time in microseconds per size, for each weft algorithm, gloo and Open MPI, plus ratios), and a
summary of the seed size across configurations.

    seed_table.py OUT_DIR

OUT_DIR/<K>x<P>.<numbering>.<rate>/<lib>.<part>.txt, lib = weft_<algo> | gloo | mpi; a run that
failed left <lib>.<part>.txt.failed, shown as "fail"."""
import pathlib
import re
import sys

ORDER = ["ring", "recursive_doubling", "tree", "two_level_leader", "two_level_split",
         "rabenseifner", "auto"]


def read_rows(path):
    """size -> time in us. weft: nccl-tests rows (out-of-place time); baselines: size time busbw."""
    rows = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if not fields or line.lstrip().startswith("#"):
            continue
        try:
            if len(fields) >= 13:
                rows[int(fields[0])] = float(fields[5])
            elif len(fields) == 3:
                rows[int(fields[0])] = float(fields[1])
        except ValueError:
            continue
    return rows


def load_config(directory, seed):
    """(columns, {column: {size: time or 'fail'}}, seed size)."""
    data = {}
    for path in sorted(directory.iterdir()):
        name = path.name
        failed = name.endswith(".txt.failed")
        if not (name.endswith(".txt") or failed):
            continue
        lib, part = name.split(".")[0:2]
        column = lib[len("weft_"):] if lib.startswith("weft_") else lib
        rows = data.setdefault(column, {})
        if failed:
            rows.setdefault(("fail", part), "fail")
            continue
        values = read_rows(path)
        if seed is None and part == "point" and values:
            seed = next(iter(values))
        for size, time in values.items():  # repeated runs (REPEAT): the best time
            if not isinstance(rows.get(size), float) or time < rows[size]:
                rows[size] = time
    def order(column):  # the usual order, unknown names before auto
        if column == "auto":
            return (len(ORDER) + 1, column)
        return (ORDER.index(column) if column in ORDER else len(ORDER), column)

    algos = sorted((c for c in data if c not in ("gloo", "mpi")), key=order)
    columns = algos + [c for c in ("gloo", "mpi") if c in data]
    return columns, data, seed


def human(size):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def value(data, column, size):
    rows = data.get(column, {})
    if size in rows:
        return rows[size]
    if any(isinstance(k, tuple) for k in rows):
        return "fail"
    return None


def fmt_time(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def ratio(a, b):
    if isinstance(a, float) and isinstance(b, float) and b > 0:
        return f"{a / b:.2f}"
    return "-"


def ratio_columns(columns):
    """(title, numerator column or 'best', denominator column or 'best') for the ratios shown."""
    out = []
    for two_level in ("two_level_leader", "two_level_split"):
        if two_level in columns and "ring" in columns:
            out.append((f"{two_level}/ring", two_level, "ring"))
    if "auto" in columns:
        if any(c not in ("auto", "gloo", "mpi") for c in columns):
            out.append(("auto/best", "auto", "best"))
        for other in ("gloo", "mpi"):
            if other in columns:
                out.append((f"auto/{other}", "auto", other))
    return out


def best(data, columns, size):
    """The fastest forced weft algorithm at size: (time, name) or (None, None)."""
    found = [(value(data, c, size), c) for c in columns if c not in ("auto", "gloo", "mpi")]
    found = [(v, c) for v, c in found if isinstance(v, float)]
    return min(found) if found else (None, None)


def pick(data, columns, column, size):
    return best(data, columns, size)[0] if column == "best" else value(data, column, size)


def row_cells(data, columns, ratios, size):
    """One size's cells: times, ratios, the best weft algorithm."""
    cells = [fmt_time(value(data, c, size)) for c in columns]
    cells += [ratio(pick(data, columns, a, size), pick(data, columns, b, size))
              for _, a, b in ratios]
    cells.append(best(data, columns, size)[1] or "-")
    return cells


def config_table(name, columns, data, seed):
    sizes = sorted({s for rows in data.values() for s in rows if isinstance(s, int)})
    ratios = ratio_columns(columns)
    lines = [f"### {name}", "",
             "time per all-reduce in us (float32 sum; weft: out-of-place, blocking)", "",
             "| size | " + " | ".join(columns + [r[0] for r in ratios] + ["best weft"]) + " |",
             "|---:|" + "---:|" * (len(columns) + len(ratios)) + "---|"]
    for size in sizes:
        label = human(size) + (" (seed)" if size == seed else "")
        lines.append(f"| {label} | " + " | ".join(row_cells(data, columns, ratios, size)) + " |")
    return "\n".join(lines) + "\n"


def summary_table(configs):
    """The seed size in every configuration."""
    columns = []
    for _, cols, _, _ in configs:
        columns += [c for c in cols if c not in columns]
    ratios = ratio_columns(columns)
    lines = ["### seed size, every configuration", "",
             "| configuration | " + " | ".join(columns + [r[0] for r in ratios] + ["best weft"]) +
             " |",
             "|---|" + "---:|" * (len(columns) + len(ratios)) + "---|"]
    for name, cols, data, seed in configs:
        if seed is None:
            cells = ["fail" if value(data, c, -1) == "fail" else "-" for c in columns]
            cells += ["-"] * len(ratios) + ["-"]
        else:
            cells = row_cells(data, columns, ratios, seed)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    out = pathlib.Path(sys.argv[1])
    configs = []
    meta = out / "meta.txt"
    seed = None
    if meta.exists():
        match = re.search(r"^seed size: (\d+) B", meta.read_text(), re.M)
        seed = int(match.group(1)) if match else None
    for directory in sorted(p for p in out.iterdir() if p.is_dir()):
        columns, data, seed = load_config(directory, seed)
        if columns:
            configs.append((directory.name, columns, data, seed))
    print("## Seed benchmark: all-reduce on emulated clusters\n")
    if meta.exists():
        print("\n".join(f"- {line}" for line in meta.read_text().splitlines()) + "\n")
    print("Configurations are <nodes>x<ranks per node>.<numbering>.<link rate>.\n")
    if not configs:
        print("(no results)")
        return
    print(summary_table(configs))
    for name, columns, data, seed in configs:
        print(config_table(name, columns, data, seed))
    failures = out / "failures.txt"
    if failures.exists():
        print("### failed runs\n")
        print("\n".join(f"- {line}" for line in failures.read_text().splitlines()))


if __name__ == "__main__":
    main()
