#!/usr/bin/python3
"""Prints the document lengths (tokens) of Megatron indexed datasets, one a
line: the measured lengths `msd-bench sweep --mixes measured --lengths-file`
draws from. Usage: demo-lengths.py FILE.idx... (e.g. data/demo/corpus/*.idx)."""
import struct
import sys

import numpy as np


def document_lengths(path):
    with open(path, "rb") as f:
        head = f.read(34)
        if len(head) < 34 or head[:9] != b"MMIDIDX\x00\x00":
            sys.exit(f"demo-lengths: {path}: not a Megatron indexed dataset (.idx)")
        sequences, documents = struct.unpack("<QQ", head[18:34])
        sizes = np.fromfile(f, dtype="<i4", count=sequences)
        f.seek(34 + 4 * sequences + 8 * sequences)
        starts = np.fromfile(f, dtype="<i8", count=documents)
    if len(sizes) != sequences or len(starts) != documents:
        sys.exit(f"demo-lengths: {path}: shorter than its header says")
    cumulative = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    return cumulative[starts[1:]] - cumulative[starts[:-1]]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        for length in document_lengths(path):
            if length > 0:
                print(int(length))


if __name__ == "__main__":
    main()
