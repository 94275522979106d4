#!/usr/bin/env python3
"""Fails on any #include that points up weft's layer order.

The order and its exceptions are read from the two tables in docs/ARCHITECTURE.md (the rows
between the `layers:` and `exceptions:` markers), so the document and the check cannot drift
apart. A file may include its own layer and any layer below it, except that the programs above the
public API may include nothing of the library beneath it; any other include is an error unless an
exception row names the including path (a file or a folder) and the included one. Private folders (a third table) may be included only from the paths their row names,
whatever the layers: the concrete transports, say, only from the wiring that chooses them.

  scripts/check_layers.py            check; exit 1 on violations
  scripts/check_layers.py --graph    also print the folder-level include graph
"""
import argparse
import os
import re
import sys
from collections import Counter

CHECKED_ROOTS = ("src", "transports", "tools", "perf", "bindings", "examples", "include")
SOURCE_SUFFIXES = (".h", ".cc", ".c", ".cu", ".cpp", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<(weft/[^>]+)>)')
PATH_CELL = re.compile(r"`([^`]+)`")


def table_rows(text, marker):
    """The |-rows of the first table after the line holding `marker`."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if marker in line), None)
    if start is None:
        raise SystemExit(f"check_layers: no '{marker}' marker in docs/ARCHITECTURE.md")
    rows, seen_table = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            seen_table = True
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif seen_table:
            break
    return rows[1:]  # the header row


def read_layers(text):
    """[(layer name, [path prefixes])], top layer first."""
    layers = []
    for cells in table_rows(text, "<!-- layers:"):
        paths = paths_in(cells[1])
        if not paths:
            raise SystemExit(f"check_layers: layer row without a path: {cells}")
        layers.append((cells[0], paths))
    return layers


def paths_in(cell):
    return [p.rstrip("/") for p in PATH_CELL.findall(cell)]


def read_rules(text, marker, what):
    """[(paths of the first column, paths of the second)] of a table whose rows each need
    both and a reason in the third column."""
    rules = []
    for cells in table_rows(text, marker):
        first, second = paths_in(cells[0]), paths_in(cells[1])
        if not first or not second or len(cells) < 3 or not cells[2]:
            raise SystemExit(f"check_layers: {what} needs paths in both columns and a reason: "
                             f"{cells}")
        rules.append((first, second))
    return rules


def read_exceptions(text):
    """[(including path prefixes, included path prefixes)]."""
    return read_rules(text, "<!-- exceptions:", "an exception")


def read_private(text):
    """[(folder, [path prefixes allowed to include it])]."""
    return [(folder, allowed)
            for folders, allowed in read_rules(text, "<!-- private:", "a private folder")
            for folder in folders]


def under(path, prefix):
    return path == prefix or path.startswith(prefix + "/")


def layer_of(path, layers):
    """(index, prefix) of the most specific layer path holding `path`, or (None, None)."""
    best = (None, None)
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if under(path, prefix) and (best[1] is None or len(prefix) > len(best[1])):
                best = (index, prefix)
    return best


def resolve(root, including, name):
    """The repository path a quoted include names, as the build's include path finds it."""
    here = os.path.dirname(including)
    for base in (here, os.path.join(here, ".."), "src", "", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None  # a system or third-party header


def sources(root):
    for top in CHECKED_ROOTS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(folder, name), root)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--graph", action="store_true", help="print the folder-level graph")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as doc:
        text = doc.read()
    layers = read_layers(text)
    exceptions = read_exceptions(text)
    private = read_private(text)
    public = next((i for i, (name, _) in enumerate(layers) if name == "public API"), None)
    if public is None:
        raise SystemExit("check_layers: no 'public API' layer in docs/ARCHITECTURE.md")

    violations, unplaced, edges, used = [], [], Counter(), set()
    checked = 0
    for path in sources(root):
        mine, my_prefix = layer_of(path, layers)
        if mine is None:
            unplaced.append(path)
            continue
        checked += 1
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1) or match.group(2))
                if target is None:
                    continue
                theirs, their_prefix = layer_of(target, layers)
                if theirs is None:
                    unplaced.append(target)
                    continue
                if their_prefix != my_prefix:
                    edges[(my_prefix, their_prefix)] += 1
                for folder, allowed in private:
                    if under(target, folder) and not under(path, folder) and \
                            not any(under(path, a) for a in allowed):
                        violations.append(f"{path}:{number}: includes {target}: {folder}/ "
                                          f"is private to " + ", ".join(allowed))
                # Programs stand on the public API: they may not reach past it into the
                # library, even though its layers lie below them.
                climbs = theirs < mine
                bypasses = mine < public and theirs > public
                if not climbs and not bypasses:
                    continue
                allowed = [i for i, (froms, tos) in enumerate(exceptions)
                           if any(under(path, f) for f in froms) and
                           any(under(target, t) for t in tos)]
                if allowed:
                    used.update(allowed)
                    continue
                rule = "may use only the public API" if bypasses else \
                    f"may not include {layers[theirs][0]}"
                violations.append(f"{path}:{number}: includes {target}: "
                                  f"{layers[mine][0]} {rule}")

    if args.graph:
        print("folder-level include graph (include lines):")
        for source in sorted({a for a, _ in edges}, key=lambda p: layer_of(p, layers)[0]):
            targets = sorted(((b, n) for (a, b), n in edges.items() if a == source),
                             key=lambda item: -item[1])
            print(f"  {source} -> " + ", ".join(f"{b} {n}" for b, n in targets))
    for index, (froms, tos) in enumerate(exceptions):
        if index not in used:
            violations.append(f"exception {froms} -> {tos} is not used; drop its row")
    for path in sorted(set(unplaced)):
        violations.append(f"{path}: in no layer of docs/ARCHITECTURE.md")
    for violation in violations:
        print(violation)
    print(f"check_layers: {checked} files, {len(layers)} layers, "
          f"{len(violations)} violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
