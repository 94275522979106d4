"""Reading the nccl-tests-style tables that the perf tools print, for the scripts that compare
runs (perf/cluster_ab_table.py, perf/cluster_algos_table.py, perf/model_picks.py,
perf/chooser_ceiling.py)."""
import glob
import os
import re
from collections import defaultdict

# perf/cluster_algos.sh's files: CONFIG.ALGO.(small|large).ROUND.txt (groups: config, algorithm,
# part, round).
ALGOS_RUN = re.compile(r"(.+?)\.([a-z_]+(?:@\d+[KMG]?)?)\.(small|large)\.(\d+)\.txt$")


def table_rows(path):
    """(size, out-of-place us) for each row of the perf tool's table in the file at `path`."""
    with open(path, encoding="utf-8") as log:
        for line in log:
            cells = line.split()
            # Size 0 (a sweep from 16 bytes over 6 ranks rounds down to it) times nothing.
            if len(cells) < 13 or not cells[0].isdigit() or int(cells[0]) == 0:
                continue
            try:
                yield int(cells[0]), float(cells[5])
            except ValueError:
                pass  # a log line of another rank written across the table


def out_of_place_times(folder, name):
    """Out-of-place microseconds per (run key, size) and side, from every file in `folder`
    whose name matches `name`, a compiled pattern whose groups 1 and 2 are the run key and the
    side: {(key, size): {side: [us, ...]}}."""
    times = defaultdict(lambda: defaultdict(list))
    for path in glob.glob(os.path.join(folder, "*.txt")):
        match = name.match(os.path.basename(path))
        if not match:
            continue
        for size, us in table_rows(path):
            times[(match.group(1), size)][match.group(2)].append(us)
    return times
