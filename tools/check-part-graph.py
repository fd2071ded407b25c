#!/usr/bin/env python3
"""Checks that the parts of lib/ include each other in one direction only.

A part is a folder of lib/ (plan/ counts as its three parts step, cluster and
pool). An #include "part/..." in a file of another part is an arrow between
them; the arrows must form no circle. Prints every part's arrows, lowest part
first, and exits 1 naming the parts of a circle when there is one.
Usage: check-part-graph.py [ROOT]  (default: the repository holding this file)
"""
import pathlib
import re
import sys

SPLIT = {"plan"}  # parts whose sub-folders are parts of their own


def part_of(path: str):
    pieces = path.split("/")
    if len(pieces) < 2:
        return None
    if pieces[0] in SPLIT and len(pieces) > 2:
        return f"{pieces[0]}/{pieces[1]}"
    return pieces[0]


def arrows(lib: pathlib.Path):
    graph = {}
    include = re.compile(r'^\s*#include "([^"]+)"', re.M)
    for file in sorted(lib.rglob("*")):
        if file.suffix not in (".h", ".cc"):
            continue
        source = part_of(str(file.relative_to(lib)))
        graph.setdefault(source, set())
        for target in include.findall(file.read_text()):
            to = part_of(target)
            if to and to != source and (lib / target).exists():
                graph[source].add(to)
    return graph


def order(graph):
    """The parts lowest first, or (None, a circle)."""
    done, placed, path = set(), [], []

    def visit(part):
        if part in done:
            return None
        if part in path:
            return path[path.index(part):] + [part]
        path.append(part)
        for to in sorted(graph.get(part, ())):
            circle = visit(to)
            if circle:
                return circle
        path.pop()
        done.add(part)
        placed.append(part)
        return None

    for part in sorted(graph):
        circle = visit(part)
        if circle:
            return None, circle
    return placed, None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    graph = arrows(root / "lib")
    placed, circle = order(graph)
    if circle:
        print("check-part-graph: a circle among lib/'s parts: " + " -> ".join(circle))
        return 1
    for part in placed:
        print(f"{part:14} -> {', '.join(sorted(graph[part])) or '(nothing)'}")
    print(f"check-part-graph: {len(placed)} parts, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
