#!/usr/bin/env python3
"""Regenerates docs/ENVIRONMENT.md from the variable table in src/base/env.cc."""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent
source = (root / "src/base/env.cc").read_text()
start = source.index("constexpr Variable kVariables[] = {")
body = source[start:source.index("};", start)]
entry = re.compile(r'\{\s*"([A-Za-z0-9_]+)",\s*"([^"]*)",\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}')
lines = [
    "# Environment variables",
    "",
    "Every variable weft reads, generated from the table in `src/base/env.cc` (the only place the",
    "library reads the environment; a unit test checks that this page and the README list them all).",
    "Regenerate it with `scripts/env_doc.py`. Variables override the matching `weftConfig_t` fields.",
    "",
    "| variable | default | meaning |",
    "|---|---|---|",
]
for name, default, description in entry.findall(body):
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', description)).replace('\\"', '"')
    lines.append(f"| `{name}` | {'`' + default + '`' if default else ''} | {text} |")
(root / "docs/ENVIRONMENT.md").write_text("\n".join(lines) + "\n")
