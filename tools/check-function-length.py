#!/usr/bin/python3
"""Fails when a C++ function in the given folders is longer than the limit.

  tools/check-function-length.py [--max-lines N] [--list] DIR_OR_FILE...

A function's length counts the lines from its signature to its closing brace,
lambdas inside it included. A function that is a data table (a list of
entries a reader scans, not logic) may be exempted by a comment
"check-function-length: data table" on one of the three lines above its
signature. The scan is a brace matcher over the source with comments, string
and character literals blanked out; it knows namespaces, classes, enums,
initializers and constructor initializer lists, which is all msd's code uses.
"""
import argparse
import pathlib
import re
import sys

EXEMPT_MARK = "check-function-length: data table"
SUFFIXES = {".cc", ".h", ".cpp", ".hpp"}


def blank(text, begin, end):
    """text[begin:end] with every character but newlines made a space."""
    return "".join(c if c == "\n" else " " for c in text[begin:end])


def strip_code(src):
    """Comments, literals and preprocessor lines blanked, lines kept in place."""
    out = []
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if line_start and c == "#":
            j = i
            while j < n and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(blank(src, i, min(j, n)))
            i = j
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = c == "\n"
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(src, i, j))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(src, i, j))
            i = j
        elif c == "R" and src.startswith('R"', i) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            open_paren = src.find("(", i)
            delim = ")" + src[i + 2:open_paren] + '"'
            j = src.find(delim, open_paren)
            j = n if j < 0 else j + len(delim)
            out.append(blank(src, i, j))
            i = j
        elif c in "\"'":
            if c == "'" and i and src[i - 1].isalnum():  # digit separator 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(blank(src, i, j + 1))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(code, i):
    """Index of the bracket closing the one at code[i]."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[code[i]]]
    j = i + 1
    while j < len(code):
        c = code[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            stack.pop()
            if not stack:
                return j
        j += 1
    return len(code) - 1


FUNCTION_END = re.compile(r"\)\s*((const|noexcept|override|final|mutable|&&|&)\s*)*(->[^;{}]*)?$")
CTOR_INIT = re.compile(r"\)\s*:(?!:)")
SCOPE = re.compile(r"\b(namespace|class|struct|union|extern)\b")


def classify(header):
    h = header.strip()
    if re.match(r"(enum)\b", h) or h.endswith("="):
        return "other"
    if CTOR_INIT.search(h) and not SCOPE.match(h):
        if re.search(r"[A-Za-z0-9_>]$", h):
            return "member-init"
        if h.endswith(")") or h.endswith("}"):
            return "function"
    if FUNCTION_END.search(h) and "(" in h:
        return "function"
    if SCOPE.search(h):
        return "scope"
    return "other"


def functions(code, begin, end, found):
    """Appends (start, open_brace, close_brace) for each function in code[begin:end]."""
    header_start = begin
    i = begin
    while i < end:
        c = code[i]
        if c == ";":
            header_start = i + 1
        elif c in "([":
            i = matching(code, i)
        elif c == "{":
            close = matching(code, i)
            kind = classify(code[header_start:i])
            if kind == "member-init":
                i = close + 1
                continue
            if kind == "function":
                start = header_start + len(code[header_start:i]) - len(code[header_start:i].lstrip())
                found.append((start, i, close))
            elif kind == "scope":
                functions(code, i + 1, close, found)
            header_start = close + 1
            i = close
        i += 1


def name_of(header):
    before = header[: header.find("(")] if "(" in header else header
    words = re.findall(r"[A-Za-z_~][A-Za-z0-9_:~]*(?:operator\s*\S+)?", before)
    return words[-1] if words else "?"


def check_file(path, max_lines, listing):
    src = path.read_text(encoding="utf-8", errors="replace")
    code = strip_code(src)
    lines_of = lambda pos: code.count("\n", 0, pos)  # noqa: E731
    src_lines = src.split("\n")
    found = []
    functions(code, 0, len(code), found)
    too_long = []
    for start, brace, close in found:
        first, last = lines_of(start), lines_of(close)
        length = last - first + 1
        name = name_of(" ".join(code[start:brace].split()))
        if listing:
            print(f"{length:5d} {path}:{first + 1} {name}")
        if length <= max_lines:
            continue
        above = "\n".join(src_lines[max(0, first - 3): first + 1])
        if EXEMPT_MARK in above:
            continue
        too_long.append(f"{path}:{first + 1}: {name} is {length} lines (limit {max_lines})")
    return too_long


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-lines", type=int, default=120)
    parser.add_argument("--list", action="store_true", help="print every function's length")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    files = []
    for p in map(pathlib.Path, args.paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.suffix in SUFFIXES)
        elif p.exists():
            files.append(p)
        else:
            sys.exit(f"check-function-length: {p} does not exist")
    problems = []
    for f in files:
        problems += check_file(f, args.max_lines, args.list)
    for p in problems:
        print(p)
    print(f"check-function-length: {len(files)} files, {len(problems)} functions over {args.max_lines} lines")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
