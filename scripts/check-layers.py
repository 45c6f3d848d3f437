#!/usr/bin/env python3
"""Checks the shape of src/ that docs/architecture.md promises; run by ctest (layers_check).

Fails, naming what is wrong, when
  - a file in src/<x>/ includes a header of src/cli/ for x != cli (cli/ is only the command line:
    nothing may depend on it),
  - the folders of src/ include each other in a cycle (a -> b -> ... -> a), or
  - a file in src/ is longer than LONG_FILE lines without saying at its top why it is one piece
    (a line in its first 30 containing "one piece").
With --graph it prints the folder graph (every folder and the folders it includes), which is how
docs/architecture.md's module list is checked by hand.
"""

import os
import re
import sys

LONG_FILE = 600
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/[^"]+"')


def source_files(src):
    for folder, _, files in os.walk(src):
        for name in sorted(files):
            if name.endswith((".h", ".cpp")):
                yield os.path.join(folder, name)


def module_of(src, path):
    return os.path.relpath(path, src).split(os.sep)[0]


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    src = os.path.join(root, "src")
    modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    graph = {m: set() for m in modules}
    problems = []
    for path in source_files(src):
        module = module_of(src, path)
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m or m.group(1) not in graph or m.group(1) == module:
                continue
            target = m.group(1)
            graph[module].add(target)
            if target == "cli":
                problems.append(f"{rel}:{number}: includes cli/ (only cli/ may: it is the command line)")
        if len(lines) > LONG_FILE and not any("one piece" in l.lower() for l in lines[:30]):
            problems.append(
                f"{rel}: {len(lines)} lines and no comment in its first 30 lines saying why it is "
                "one piece")

    # Cycles between folders: depth-first search, reporting each cycle once by its member set.
    seen_cycles = set()
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    problems.append("folders include each other: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for m in modules:
        if m not in state:
            visit(m, [])

    if "--graph" in sys.argv:
        for m in modules:
            print(f"{m:12} -> {' '.join(sorted(graph[m])) or '(nothing)'}")
    if problems:
        print(f"check-layers: {len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
