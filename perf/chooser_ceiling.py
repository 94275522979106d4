#!/usr/bin/env python3
"""How well any chooser can score on a machine, from one perf/cluster_algos.sh run: the rounds
are split in two halves (odd and even), an oracle picks each cell's fastest forced algorithm
by the medians of one half, and its pick is scored by the other half's medians against the
fastest forced algorithm there, both ways round. A chooser that always knew the best
algorithm cannot do better than the oracle here, so where the oracle falls short of a target
(within 10 % of the fastest in 90 % of cells) the machine's run-to-run spread, not the choice,
is what stands in the way. `auto`, where the run has it, is scored the same way (its median in
each half against that half's fastest), for comparison. Both are scored twice: by each half's
medians, and by each half's best time (what perf/seed_bench.sh keeps of its repetitions).

    perf/chooser_ceiling.py FOLDER        FOLDER: the OUT of perf/cluster_algos.sh"""
import glob
import os
import statistics
import sys
from collections import defaultdict

from perf_logs import ALGOS_RUN, table_rows


def times_by_round(folder):
    """{(config, size): {algo: {round: us}}} of the out-of-place times."""
    times = defaultdict(lambda: defaultdict(dict))
    for path in glob.glob(os.path.join(folder, "*.txt")):
        match = ALGOS_RUN.match(os.path.basename(path))
        if not match:
            continue
        config, algo, _, round_ = match.groups()
        for size, us in table_rows(path):
            times[(config, size)][algo][int(round_)] = us
    return times


def half(by_round, parity, summary):
    values = [us for round_, us in by_round.items() if round_ % 2 == parity]
    return summary(values) if values else None


def score(times, summary):
    """The oracle's and auto's ratios to the fastest forced algorithm, per cell and half."""
    oracle, auto = [], []
    for _, algos in sorted(times.items()):
        forced = {algo: rounds for algo, rounds in algos.items() if algo != "auto"}
        for pick_half in (1, 0):
            picked = {a: half(r, pick_half, summary) for a, r in forced.items()}
            scored = {a: half(r, 1 - pick_half, summary) for a, r in forced.items()}
            if None in picked.values() or None in scored.values() or len(forced) < 2:
                continue
            fastest = min(scored.values())
            oracle.append(scored[min(picked, key=picked.get)] / fastest)
            auto_time = half(algos["auto"], 1 - pick_half, summary) if "auto" in algos else None
            if auto_time is not None:
                auto.append(auto_time / fastest)
    return oracle, auto


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    times = times_by_round(sys.argv[1])
    for summary_name, summary in (("medians", statistics.median), ("best times", min)):
        oracle, auto = score(times, summary)
        for name, ratios in (("oracle", oracle), ("auto", auto)):
            if not ratios:
                continue
            within = sum(r <= 1.10 for r in ratios)
            beyond = sum(r > 1.25 for r in ratios)
            print(f"{name} by {summary_name}: {len(ratios)} cell-halves, within 10 % of the "
                  f"fastest forced algorithm in {within} ({100 * within / len(ratios):.0f} %), "
                  f"beyond 1.25x in {beyond}; median {statistics.median(ratios):.2f}, "
                  f"worst {max(ratios):.2f}")


if __name__ == "__main__":
    main()
