#!/usr/bin/env python3
"""Checks that the parts of lib/ include each other in one direction only.

A part is a folder of lib/ (plan/ counts as its three parts step, cluster and
pool). An #include "part/..." in a file of another part is an arrow between
them; the arrows must form no circle. Prints every part's arrows, lowest part
first, and exits 1 naming the parts of a circle when there is one.

It also follows #include "msd/..." (the public headers in include/msd/) and
prints which parts include which of them; msd/config.h is the whole Config.
Where the repository has docs/design.md, two of its claims are checked: its
layer diagram (every arrow goes to a lower row, and every part has a row)
and its list of the parts that may include msd/config.h (the parts that
assemble a job, and those named with the reason they still read it): a part
that includes it and is not listed fails, as does a listed name that is no
part of lib/. A listed part that no longer includes it is printed, so the
list can shrink.
Usage: check-part-graph.py [ROOT]  (default: the repository holding this file)
"""
import pathlib
import re
import sys

SPLIT = {"plan"}  # parts whose sub-folders are parts of their own
CONFIG_CLAIM = "Parts that may include `msd/config.h`"  # the line of docs/design.md listing them


def part_of(path: str):
    pieces = path.split("/")
    if len(pieces) < 2:
        return None
    if pieces[0] in SPLIT and len(pieces) > 2:
        return f"{pieces[0]}/{pieces[1]}"
    return pieces[0]


def arrows(root: pathlib.Path):
    """(part -> parts it includes, part -> public headers it includes)."""
    lib = root / "lib"
    graph, public = {}, {}
    include = re.compile(r'^\s*#include "([^"]+)"', re.M)
    for file in sorted(lib.rglob("*")):
        if file.suffix not in (".h", ".cc"):
            continue
        source = part_of(str(file.relative_to(lib)))
        graph.setdefault(source, set())
        public.setdefault(source, set())
        for target in include.findall(file.read_text()):
            if target.startswith("msd/") and (root / "include" / target).exists():
                public[source].add(target)
                continue
            to = part_of(target)
            if to and to != source and (lib / target).exists():
                graph[source].add(to)
    return graph, public


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


def design_rows(text: str):
    """The layer diagram of docs/design.md: part -> row (0 = the lowest)."""
    block = re.search(r"Dependencies point one way.*?```\n(.*?)```", text, re.S)
    if not block:
        return None
    rows = [line.split() for line in block.group(1).splitlines() if line.strip() and "─" not in line]
    return {part: len(rows) - 1 - i for i, row in enumerate(rows) for part in row}


def design_errors(root: pathlib.Path, graph, public):
    design = root / "docs" / "design.md"
    if not design.exists():
        return []
    text = design.read_text()
    errors = []
    rows = design_rows(text)
    if rows is None:
        return ["docs/design.md: no layer diagram after 'Dependencies point one way'"]
    for part in sorted(graph):
        if part not in rows:
            errors.append(f"docs/design.md: part {part} has no row in the layer diagram")
            continue
        for to in sorted(graph[part]):
            if to in rows and rows[to] >= rows[part]:
                errors.append(f"docs/design.md: {part} includes {to}, which is not on a row below it")
    for part in sorted(rows):
        if part not in graph:
            errors.append(f"docs/design.md: the layer diagram names {part}, which is no part of lib/")
    errors += config_claim_errors(text, graph, public)
    return errors


def config_claim_errors(text: str, graph, public):
    """The paragraph starting CONFIG_CLAIM: the parts that may include msd/config.h."""
    paragraph = re.search(re.escape(CONFIG_CLAIM) + r"(.*?)(?:\n\n|$)", text, re.S)
    if paragraph is None:
        return [f"docs/design.md: no paragraph starting '{CONFIG_CLAIM}'"]
    body = paragraph.group(1)
    allowed = set(re.findall(r"`([a-z/]+)`", body.split(":", 1)[1] if ":" in body else ""))
    using = {part for part, headers in public.items() if "msd/config.h" in headers}
    errors = [f"docs/design.md: {part} includes msd/config.h, but is not among the parts that may"
              for part in sorted(using - allowed)]
    errors += [f"docs/design.md: the parts that may include msd/config.h name {part}, which is no part of lib/"
               for part in sorted(allowed - set(graph))]
    for part in sorted((allowed & set(graph)) - using):
        print(f"check-part-graph: note: {part} may include msd/config.h and does not include it itself")
    return errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    graph, public = arrows(root)
    placed, circle = order(graph)
    if circle:
        print("check-part-graph: a circle among lib/'s parts: " + " -> ".join(circle))
        return 1
    for part in placed:
        print(f"{part:14} -> {', '.join(sorted(graph[part])) or '(nothing)'}")
    headers = sorted({h for hs in public.values() for h in hs})
    for header in headers:
        users = [part for part in placed if header in public[part]]
        print(f"{header:22} in {', '.join(users)}")
    errors = design_errors(root, graph, public)
    for error in errors:
        print("check-part-graph: " + error)
    if errors:
        return 1
    print(f"check-part-graph: {len(placed)} parts, no circle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
