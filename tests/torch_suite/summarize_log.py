"""Summarizes a verbose (-v) log of run_distributed_suite.py: counts per outcome, then the
failures, then (with --all) every test and its outcome, or (with --skips) each skip reason with
how many tests it covers.

    summarize_log.py suite.log [--all | --skips]
"""

import collections
import re
import sys

TEST_LINE = re.compile(r"^(test_\w+) \(")
# unittest writes the outcome after " ... " on the test's line, or alone on a later line when
# the test printed something first.
OUTCOME = re.compile(r"(?:\.\.\. |^)(ok|ERROR|FAIL|expected failure|skipped (['\"]).*\2)$")


def outcomes(path):
    current, found = None, {}
    with open(path, errors="replace") as log:
        for line in log:
            started = TEST_LINE.match(line)
            if started:
                current = started.group(1)
            match = OUTCOME.search(line.rstrip("\n")) if current else None
            if match and current not in found:
                found[current] = match.group(1)
    return found


def main():
    found = outcomes(sys.argv[1])
    counts = collections.Counter(outcome.split(" ")[0] for outcome in found.values())
    print(f"{len(found)} tests: " + ", ".join(f"{n} {kind}" for kind, n in counts.most_common()))
    for name, outcome in found.items():
        if outcome in ("ERROR", "FAIL"):
            print(f"{outcome} {name}")
    if "--all" in sys.argv:
        for name, outcome in sorted(found.items()):
            print(f"{name} {outcome}")
    if "--skips" in sys.argv:
        reasons = collections.Counter(o[len("skipped "):] for o in found.values()
                                      if o.startswith("skipped"))
        for reason, n in reasons.most_common():
            print(f"{n:4d} {reason}")


if __name__ == "__main__":
    main()
