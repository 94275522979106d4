#!/usr/bin/env python3
"""Scores a cost model's picks and predictions against the forced columns of a
perf/cluster_algos.sh run, without running anything again: per configuration it asks
`weft_tune predict` for the layout and the links in the run's calibration.log, then counts the
cells where the pick's measured median is within 10 % of the fastest forced algorithm's (and
beyond 1.25x), and the predictions within 25 % of the measured medians.

    perf/model_picks.py WEFT_TUNE COLL FOLDER [--cells]

WEFT_TUNE is the weft_tune binary of the model to score (another build's to compare); COLL as
for weft_tune predict; FOLDER the OUT of perf/cluster_algos.sh; --cells prints every pick that
is not within 10 %. Where calibration measured a link per node, the slowest is used for all
(the log names only the slowest and the fastest). A two-level pick is scored by the forced
two-level column, which ran the stage among nodes that the measured build chose."""
import re
import statistics
import subprocess
import sys

from perf_logs import ALGOS_RUN, out_of_place_times


def links(folder):
    """configuration -> (network GB/s, us, shared memory GB/s, us) from calibration.log."""
    out = {}
    with open(f"{folder}/calibration.log", encoding="utf-8") as log:
        for line in log:
            config, rest = line.split(": ", 1)
            measured = re.findall(r"([\d.]+) GB/s, ([\d.]+) us", rest)
            out[config] = measured[0] + measured[-1]  # the network (its slowest), then shm
    return out


def hosts(config):
    """The rank-to-node string of weft_tune --hosts, as tests/cluster/cluster.sh numbers ranks."""
    shape, numbering = config.split(".")[:2]
    if "+" in shape:
        counts = [int(c) for c in shape.split("+")]
    else:
        nodes, per_node = shape.split("x")
        counts = [int(per_node)] * int(nodes)
    if numbering == "block":
        return "".join(chr(65 + node) * count for node, count in enumerate(counts))
    left, out = list(counts), ""
    while any(left):
        for node, count in enumerate(left):
            if count:
                out += chr(65 + node)
                left[node] -= 1
    return out


def predictions(tune, coll, config, link, sizes):
    """size -> ({algorithm: predicted us}, the pick) from weft_tune predict's table, for each of
    the measured sizes (6-rank sweeps are not powers of 4)."""
    net_rate, net_us, shm_rate, shm_us = link
    table = {}
    for size in sizes:
        text = subprocess.run(
            [tune, "predict", "--hosts", hosts(config), "--coll", coll, "--min", str(size),
             "--max", str(size), "--cores", "2", "--one-machine", "--net",
             f"{net_rate}GB/s,{net_us}us", "--shm", f"{shm_rate}GB/s,{shm_us}us"],
            capture_output=True, text=True, check=True).stdout
        header = None
        for line in text.splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if cells[0] == "size":
                header = cells
            elif header and len(cells) == len(header) and cells[0][:1].isdigit():
                times = {algo: float(value.rstrip("*"))
                         for algo, value in zip(header[1:-1], cells[1:-1])}
                table[size] = (times, cells[-1].split("/")[0])
    return table


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    tune, coll, folder = sys.argv[1:4]
    times = out_of_place_times(folder, ALGOS_RUN)
    picks, errors = [], []
    for config, link in sorted(links(folder).items()):
        measured = sorted((s, v) for (c, s), v in times.items() if c == config)
        table = predictions(tune, coll, config, link, [size for size, _ in measured])
        for size, sides in measured:
            forced = {algo: statistics.median(t) for algo, t in sides.items() if algo != "auto" and t}
            if size not in table or not forced:
                continue
            predicted, pick = table[size]
            errors += [predicted[algo] / forced[algo] for algo in forced if algo in predicted]
            if pick not in forced:
                continue
            fastest = min(forced, key=forced.get)
            ratio = forced[pick] / forced[fastest]
            picks.append(ratio)
            if "--cells" in sys.argv and ratio > 1.1:
                print(f"{config} {size}: picks {pick}, {ratio:.2f}x {fastest}")
    print(f"{coll}: picks within 10 % of the fastest forced algorithm in {sum(r <= 1.1 for r in picks)} "
          f"of {len(picks)}, beyond 1.25x in {sum(r > 1.25 for r in picks)}; predictions within "
          f"25 % of the measured median in {sum(0.8 <= e <= 1.25 for e in errors)} of {len(errors)}, "
          f"median error {statistics.median(max(e, 1 / e) for e in errors):.2f}x")


if __name__ == "__main__":
    main()
