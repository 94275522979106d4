#!/usr/bin/env python3
"""Merges the results of perf/seed_bench.sh into markdown: one table per cluster configuration
(time in microseconds per size, for each weft algorithm, gloo and Open MPI, plus ratios), a
summary of the seed size across configurations, and a summary of the targets: how close "auto"
(the cost model), "tuned" (a measured tuning table) and "online" (the model refined by online
trials) come to the best forced weft algorithm and to Open MPI over every configuration and sweep size, with the run-to-run spread when REPEAT > 1.

    seed_table.py OUT_DIR

OUT_DIR/<layout>.<numbering>.<rate>/<lib>.<part>[.r<rep>].txt, layout = KxP or N0+N1+...,
lib = weft_<algo> | gloo | mpi, part = point (the seed size) | small | large (the sweep) | all
(gloo: both); a run that failed left <lib>.<part>[.r<rep>].txt.failed, shown as "fail". Other
files (table.txt, measure.txt: the tuning table of "tuned") are not results."""
import pathlib
import re
import statistics
import sys

ORDER = ["ring", "recursive_doubling", "tree", "two_level_leader", "two_level_split",
         "two_level_shm", "two_level_replicated", "rabenseifner", "auto", "tuned", "online"]
# Not forced algorithms: the columns "best" (the fastest forced weft algorithm) leaves out.
CHOOSERS = ("auto", "tuned", "online")
BASELINES = ("gloo", "mpi")
RESULT_NAME = re.compile(r"^(weft_\w+|gloo|mpi)\.(\w+)(?:\.r\d+)?\.txt(\.failed)?$")
WITHIN = 1.10     # a target: within 10% of the best forced algorithm
SLOW = 1.25       # far from it


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


class Config:
    """One configuration's results: columns in display order, data {column: {size: best time
    or 'fail'; ('fail', part): 'fail'}}, runs {column: {size: {part: [every run's time]}}},
    the seed size, and the sizes a sweep part measured."""

    def __init__(self, name, columns, data, runs, seed, sweep_sizes):
        self.name, self.columns, self.data, self.runs = name, columns, data, runs
        self.seed, self.sweep_sizes = seed, sweep_sizes


def load_config(directory, seed):
    """Reads one configuration's directory into a Config (seed: the seed size, if known)."""
    data, runs, sweep_sizes = {}, {}, set()
    for path in sorted(directory.iterdir()):
        match = RESULT_NAME.match(path.name)
        if not match or not path.is_file():
            continue
        lib, part, failed = match.group(1), match.group(2), bool(match.group(3))
        column = lib[len("weft_"):] if lib.startswith("weft_") else lib
        rows = data.setdefault(column, {})
        if failed:
            rows.setdefault(("fail", part), "fail")
            continue
        values = read_rows(path)
        if seed is None and part == "point" and values:
            seed = next(iter(values))
        if part not in ("point", "all"):
            sweep_sizes.update(values)
        for size, time in values.items():  # repeated runs (REPEAT): the best time
            runs.setdefault(column, {}).setdefault(size, {}).setdefault(part, []).append(time)
            if not isinstance(rows.get(size), float) or time < rows[size]:
                rows[size] = time

    def order(column):  # the usual order, unknown names before the choosers
        if column in CHOOSERS:
            return (len(ORDER) + 1 + CHOOSERS.index(column), column)
        return (ORDER.index(column) if column in ORDER else len(ORDER), column)

    algos = sorted((c for c in data if c not in BASELINES), key=order)
    columns = algos + [c for c in BASELINES if c in data]
    return Config(directory.name, columns, data, runs, seed, sweep_sizes)


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


def forced(columns):
    """The forced weft algorithms among columns: every weft column but the choosers."""
    return [c for c in columns if c not in CHOOSERS + BASELINES]


def ratio_columns(columns):
    """(title, numerator column or 'best', denominator column or 'best') for the ratios shown:
    auto/best, tuned/best, auto/gloo, auto/mpi, tuned/mpi (those whose columns exist)."""
    out = []
    for two_level in ("two_level_leader", "two_level_split"):
        if two_level in columns and "ring" in columns:
            out.append((f"{two_level}/ring", two_level, "ring"))
    if forced(columns):
        out += [(f"{c}/best", c, "best") for c in CHOOSERS if c in columns]
    for chooser, others in (("auto", BASELINES), ("tuned", ("mpi",)), ("online", ("mpi",))):
        if chooser in columns:
            out += [(f"{chooser}/{o}", chooser, o) for o in others if o in columns]
    return out


def best(data, columns, size):
    """The fastest forced weft algorithm at size: (time, name) or (None, None)."""
    found = [(value(data, c, size), c) for c in forced(columns)]
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


def all_columns(configs):
    columns = []
    for config in configs:
        columns += [c for c in config.columns if c not in columns]
    return columns


def summary_table(configs):
    """The seed size in every configuration."""
    columns = all_columns(configs)
    ratios = ratio_columns(columns)
    lines = ["### seed size, every configuration", "",
             "| configuration | " + " | ".join(columns + [r[0] for r in ratios] + ["best weft"]) +
             " |",
             "|---|" + "---:|" * (len(columns) + len(ratios)) + "---|"]
    for config in configs:
        name, data, seed = config.name, config.data, config.seed
        if seed is None:
            cells = ["fail" if value(data, c, -1) == "fail" else "-" for c in columns]
            cells += ["-"] * len(ratios) + ["-"]
        else:
            cells = row_cells(data, columns, ratios, seed)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def spread(config, column, size):
    """(worst - best) / best of column's runs at size, or None with fewer than two runs. The
    runs are the REPEAT repetitions of one measurement: where both the seed point and the sweep
    measured the size (different iteration counts), the sweep's."""
    parts = config.runs.get(column, {}).get(size, {})
    sweep_parts = [p for p in parts if p not in ("point", "all")]
    times = parts[sweep_parts[0]] if sweep_parts else next(iter(parts.values()), [])
    if len(times) < 2 or min(times) <= 0:
        return None
    return (max(times) - min(times)) / min(times)


def target_sizes(config):
    """The sizes the targets count: the sweep's (the seed size only where the sweep measured it
    too, i.e. it lies on the sweep's grid); without a sweep, the seed size."""
    if config.sweep_sizes:
        return sorted(config.sweep_sizes)
    return [config.seed] if config.seed is not None else []


def where(config, size):
    return f"{config.name} {human(size)}"


def chooser_stats(configs, chooser, cells_of):
    """A chooser's cells against the best forced algorithm and Open MPI. cells_of(config) gives
    the sizes to count. None when no configuration has the column."""
    stats = {"cells": 0, "within": 0, "slow": [], "worst": None, "failed": 0,
             "mpi_cells": 0, "slower_mpi": [], "spread_cells": 0, "beyond": []}
    seen = False
    for config in configs:
        if chooser not in config.columns:
            continue
        seen = True
        for size in cells_of(config):
            mine = value(config.data, chooser, size)
            top = best(config.data, config.columns, size)[0]
            if mine == "fail":
                stats["failed"] += 1
                continue
            if not isinstance(mine, float):
                continue
            if isinstance(top, float) and top > 0:
                r = mine / top
                stats["cells"] += 1
                stats["within"] += r <= WITHIN
                if r > SLOW:
                    stats["slow"].append((r, where(config, size)))
                if stats["worst"] is None or r > stats["worst"][0]:
                    stats["worst"] = (r, where(config, size))
            mpi = value(config.data, "mpi", size)
            if isinstance(mpi, float) and mpi > 0:
                r = mine / mpi
                stats["mpi_cells"] += 1
                if r > 1:
                    stats["slower_mpi"].append((r, where(config, size)))
                mpi_spread = spread(config, "mpi", size)
                if mpi_spread is not None:
                    stats["spread_cells"] += 1
                    if r > 1 + mpi_spread:
                        stats["beyond"].append((r, mpi_spread, where(config, size)))
    return stats if seen else None


def targets_summary(configs):
    """The choosers (auto, tuned, online) over every configuration and size: within 10% of the best forced
    algorithm, the worst ratio, cells beyond 1.25x, cells slower than Open MPI (beyond its
    run-to-run spread when REPEAT left several runs)."""
    on_grid = any(c.seed in c.sweep_sizes for c in configs if c.seed is not None)
    any_sweep = any(c.sweep_sizes for c in configs)
    off_grid_seed = any_sweep and any(c.seed is not None and c.seed not in c.sweep_sizes
                                      for c in configs)
    lines = ["### targets: " + " and ".join(c for c in CHOOSERS if c in all_columns(configs)) +
             ", every configuration and size", ""]
    if any_sweep:
        lines.append("Cells are configuration x sweep size" +
                     (" (the seed size counts where it lies on the sweep's grid)" if on_grid else
                      "") +
                     ("; the seed size, off the sweep's grid, is counted apart in the "
                      "'(seed size)' rows" if off_grid_seed else "") + ".")
    else:
        lines.append("Cells are configuration x the seed size (no sweep).")
    lines += [f"best = the fastest forced weft algorithm at that size ({', '.join(forced(all_columns(configs))) or 'none'}); "
              "mpi = Open MPI; spread = (worst - best) / best of a column's runs at that size. "
              "A failed run counts in 'failed', in no other column.", "",
              "| chooser | within 10% of best | worst / best | > 1.25x best | slower than mpi | "
              "slower than mpi beyond mpi's spread | failed |",
              "|---|---:|---|---:|---:|---:|---:|"]
    details = []
    rows = [(c, c, target_sizes) for c in CHOOSERS]
    if off_grid_seed:
        rows += [(f"{c} (seed size)", c,
                  lambda config: [config.seed] if config.seed is not None and
                  config.seed not in config.sweep_sizes else []) for c in CHOOSERS]
    for title, chooser, cells_of in rows:
        stats = chooser_stats(configs, chooser, cells_of)
        if stats is None:
            continue
        worst = (f"{stats['worst'][0]:.2f} ({stats['worst'][1]})" if stats["worst"] else "-")
        mpi = (f"{len(stats['slower_mpi'])} of {stats['mpi_cells']}" if stats["mpi_cells"]
               else "-")
        beyond = (f"{len(stats['beyond'])} of {stats['spread_cells']}" if stats["spread_cells"]
                  else "- (one run)" if stats["mpi_cells"] else "-")
        lines.append(f"| {title} | {stats['within']} of {stats['cells']} | {worst} | "
                     f"{len(stats['slow'])} | {mpi} | {beyond} | {stats['failed']} |")
        if stats["slow"]:
            details.append(f"- {title} > {SLOW:.2f}x best: " + ", ".join(
                f"{w} {r:.2f}" for r, w in sorted(stats["slow"], reverse=True)))
        if stats["beyond"]:
            details.append(f"- {title} slower than mpi beyond mpi's spread: " + ", ".join(
                f"{w} {r:.2f} (spread {s * 100:.0f}%)"
                for r, s, w in sorted(stats["beyond"], reverse=True)))
    if details:
        lines += [""] + details
    return "\n".join(lines) + "\n"


def spread_table(configs):
    """Every column's run-to-run spread per configuration and size (REPEAT > 1), in percent."""
    columns = all_columns(configs)
    if not any(spread(c, col, size) is not None for c in configs for col in c.runs
               for size in c.runs[col]):
        return ("### run-to-run spread\n\nOne run per column and size (REPEAT=1): no spread, and "
                "no judgement of 'beyond the spread'.\n")
    lines = ["### run-to-run spread", "",
             "(worst - best) / best of each column's repeated runs at a size (REPEAT), in percent "
             "(- : fewer than two runs; a size both the seed point and the sweep measured: the "
             "sweep's runs).", ""]
    summary = []
    for column in columns:
        values = [(spread(c, column, s), where(c, s)) for c in configs
                  for s in c.runs.get(column, {})]
        values = [(v, w) for v, w in values if v is not None]
        if values:
            top = max(values)
            summary.append(f"- {column}: median {statistics.median(v for v, _ in values) * 100:.0f}%, "
                           f"max {top[0] * 100:.0f}% ({top[1]}), {len(values)} cells")
    lines += summary + ["", "| configuration | size | " + " | ".join(columns) + " |",
                        "|---|---:|" + "---:|" * len(columns)]
    for config in configs:
        sizes = sorted({s for rows in config.runs.values() for s in rows})
        for size in sizes:
            cells = []
            for column in columns:
                v = spread(config, column, size)
                cells.append("-" if v is None else f"{v * 100:.0f}")
            lines.append(f"| {config.name} | {human(size)} | " + " | ".join(cells) + " |")
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
        config = load_config(directory, seed)
        seed = config.seed
        if config.columns:
            configs.append(config)
    print("## Seed benchmark: all-reduce on emulated clusters\n")
    if meta.exists():
        print("\n".join(f"- {line}" for line in meta.read_text().splitlines()) + "\n")
    print("Configurations are <nodes>x<ranks per node>.<numbering>.<link rate>, or for uneven "
          "nodes <ranks of node0>+<ranks of node1>+....<numbering>.<link rate>.\n")
    if not configs:
        print("(no results)")
        return
    print(summary_table(configs))
    for config in configs:
        print(config_table(config.name, config.columns, config.data, config.seed))
    print(targets_summary(configs))
    print(spread_table(configs))
    failures = out / "failures.txt"
    if failures.exists():
        print("### failed runs\n")
        print("\n".join(f"- {line}" for line in failures.read_text().splitlines()))


if __name__ == "__main__":
    main()
