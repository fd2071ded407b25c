"""Times a real PyTorch trainer on the same token stream under several data placements.

    /usr/bin/python3 examples/bench_trainer.py --placements FILE --corpus 'data/demo/corpus/*.idx' \\
        [--json FILE] [--shapes-out FILE] [--repeats 3] [--modes A,B] [--device cpu|cuda]
    /usr/bin/python3 examples/bench_trainer.py --emulate --placements FILE [FILE ...] \\
        --corpus 'data/demo/corpus/*.idx' [--json FILE] [--shapes-out FILE] [--workers 1|2]
    /usr/bin/python3 examples/bench_trainer.py --self-check

(tools/bench-trainer.sh makes the placements with `msd-plan place --json`,
runs this, and fits the planner's cost model to the times it records.)

PLACEMENTS (msd-plan place --json) places one stream of documents
(`documents`: tokens of each, in stream order) in several ways (`placements`,
by name; whatever names the file holds): steps of `dp` ranks, each rank a list
of micro-batches (its length may differ between ranks), a micro-batch a list
of sequences of pieces [doc, begin, length]. A placement's "rows" says how a
micro-batch is computed: "fixed", one row of seq_len positions per sequence
(the tail is padding); "varlen", one row of all its pieces. Its "attention"
(default "document") says what attends to what: "document", causal
attention inside each piece (FlashAttention's varlen kernels: sum of L^2);
"row", one causal segment over each row's pieces (Megatron without
--reset-attention-mask: the row's length squared). Document d's tokens are
the next documents[d] tokens of the --corpus (a Megatron indexed dataset,
PREFIX.idx/.bin or a glob of .idx files, concatenated and repeated
cyclically if shorter than the stream), each id folded into the model's
vocabulary (id mod --vocab).

The model: a small GPT (token and learned position embeddings, positions
counted within each segment; pre-LN blocks of attention with --heads heads
of --head-dim dimensions, narrower than the --width of the residual stream,
and a 4x MLP; tied output). Its matrix products run in bfloat16 (CPU
autocast; oneDNN's kernels: this torch's float32 products use a reference
BLAS), its parameters, norms and loss in float32 (--precision fp32: all in
float32). Causal attention: a segment of at most --block positions is padded
to a multiple of --pad and computed whole, batched with the micro-batch's
other segments of that padded length; a longer one is computed in query
blocks of --block rows against its keys up to the block's end, so only the
lower triangle and the diagonal blocks are computed, and a micro-batch makes
one call per padded length and per block, not per segment (Tiling). The same
kernel serves every placement: a row under "row" attention is one segment.
Padding positions attend to nothing but go through every other layer. Loss:
next-token cross-entropy inside each segment (a segment's last position has
no label), summed over the micro-batch, divided by the step's labelled
positions over every rank.

Real data-parallel runs (the default): `dp` processes (gloo, --threads torch
threads each), gradients all-reduced every step. Every micro-batch of every
placement is built as tensors first, then, per repeat (the order reversed on
odd repeats), each placement trains all its steps from the same initial
model and AdamW state. Measured: every micro-batch's forward+backward
seconds, every rank's compute seconds per step and every step's wall seconds
(all-reduce and optimizer step included). Reported per placement: tokens,
the wall seconds of each repeat and their median, tokens/s, the straggler
fraction (mean over steps of (max - mean) rank compute / step wall) and the
loss of the first and last step.

Emulated data parallelism (--emulate): every emulated rank's micro-batches
of a step are trained for real (forward and backward) on one pinned core
(one torch thread), one rank after another, the gradients of all emulated
ranks summed; two worker processes hold identical replicas (gloo between
them) and, with --workers 2, each trains half of the step's ranks at the
same time on its own core (--workers 1: worker 0 trains every rank, worker
1's core idles). Then the workers' gradients are all-reduced (timed after a
barrier: an all-reduce of the gradients' bytes between two processes over
loopback) and each steps AdamW once (timed). A step's emulated seconds:
the largest rank's compute (the sum of its micro-batches' forward+backward
seconds) + that all-reduce + the optimizer step. Several --placements files
(one stream each, e.g. one per seed) make one row: per placement the tokens
(checked equal across placements, file by file), the sum of its steps'
seconds and per step the maxima; the row's best msd placement (a name
starting with "msd_", least seconds over all files) over every other
placement: the geometric mean over the files of the per-file ratio of
seconds, with a 95% bootstrap interval (files resampled); and a fit of the
micro-batch seconds to c0 + c1*positions + c2*sum(L^2) + c3*segment groups,
whose a = c1/c2 is the planner's.

--shapes-out writes the timed micro-batches' shapes (JSON lines) and their
seconds (FILE.times), the input of `msd-plan calibrate --shapes/--times`.
"""

import argparse
import ctypes
import datetime
import glob
import json
import math
import os
import pickle
import signal
import socket
import statistics
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

PROG = "bench_trainer"
MAGIC = b"MMIDIDX\x00\x00"
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}
ATTENTION = ("document", "row")
# The baselines every row reports the best msd placement against (null where the file has none).
HEADLINE_BASELINES = ("megatron_docmask", "megatron_dp_balanced", "megatron")
MSD_PREFIX = "msd_"
# Scores of one batched matmul: at most this many elements per head (one
# 4096 x 4096 segment, or 16 of 1024, or 8 query blocks of 256 x 8192).
GROUP_ELEMENTS = 1 << 24
BOOTSTRAP_RESAMPLES = 2000
LOST_PEERS = 3  # a rank's exit status when its collective failed because another rank is gone
PEER_ERRORS = ("Connection reset", "Connection closed", "connection closed", "Broken pipe", "Timed out", "timed out",
               "Socket Timeout", "NCCL communicator was aborted")


class BenchError(Exception):
    """A user-facing error: printed as one line, exit status 1."""


# ---------------------------------------------------------------- inputs


def index_prefixes(spec):
    """The Megatron dataset prefixes of --corpus: PREFIX, PREFIX.idx or a glob of .idx files."""
    if any(c in spec for c in "*?["):
        paths = sorted(glob.glob(spec))
        if not paths:
            raise BenchError(f"--corpus {spec}: no file matches (make the demo data with msd-datagen, "
                             "or name a Megatron indexed dataset PREFIX of PREFIX.idx/PREFIX.bin)")
    else:
        paths = [spec]
    prefixes = []
    for path in paths:
        prefix = path[:-4] if path.endswith(".idx") or path.endswith(".bin") else path
        for name in (prefix + ".idx", prefix + ".bin"):
            if not os.path.isfile(name):
                raise BenchError(f"--corpus: {name} does not exist (a Megatron indexed dataset is "
                                 "PREFIX.idx and PREFIX.bin; tools/bench-trainer.sh makes data/demo with msd-datagen)")
        prefixes.append(prefix)
    return prefixes


def read_index(prefix):
    """(dtype, sizes, pointers) of PREFIX.idx; BenchError naming the file when it is not one."""
    path = prefix + ".idx"
    with open(path, "rb") as f:
        head = f.read(34)
    if len(head) < 34 or head[:9] != MAGIC:
        raise BenchError(f"{path}: not a Megatron indexed dataset index (no MMIDIDX magic)")
    version = int.from_bytes(head[9:17], "little")
    code = head[17]
    sequences = int.from_bytes(head[18:26], "little")
    documents = int.from_bytes(head[26:34], "little")
    if version != 1:
        raise BenchError(f"{path}: index version {version}, expected 1")
    if code not in DTYPES:
        raise BenchError(f"{path}: token dtype code {code} is not an integer type ({sorted(DTYPES)})")
    need = 34 + 12 * sequences + 8 * documents
    if os.path.getsize(path) < need:
        raise BenchError(f"{path}: {os.path.getsize(path)} bytes, its header needs {need}")
    if sequences == 0:
        return np.dtype(DTYPES[code]), np.zeros(0, np.int64), np.zeros(0, np.int64)
    sizes = np.fromfile(path, np.int32, sequences, offset=34).astype(np.int64)
    pointers = np.fromfile(path, np.int64, sequences, offset=34 + 4 * sequences)
    return np.dtype(DTYPES[code]), sizes, pointers


def read_corpus(spec, needed):
    """(the first min(needed, corpus) tokens of the concatenated corpus as int64, its largest id)."""
    parts, have, largest = [], 0, -1
    for prefix in index_prefixes(spec):
        dtype, sizes, pointers = read_index(prefix)
        if sizes.size == 0:
            continue
        bin_path = prefix + ".bin"
        nbytes = os.path.getsize(bin_path)
        ends = pointers + sizes * dtype.itemsize
        if sizes.min() < 0 or pointers.min() < 0 or ends.max() > nbytes:
            raise BenchError(f"{prefix}.idx: its sequences reach past the end of {bin_path} ({nbytes} bytes)")
        data = np.memmap(bin_path, np.uint8, "r")
        if pointers[0] == 0 and np.array_equal(pointers[1:], ends[:-1]):
            runs = [data[:ends[-1]].view(dtype)]
        else:
            runs = [data[p:e].view(dtype) for p, e in zip(pointers, ends)]
        for run in runs:
            if run.size == 0:
                continue
            low, high = int(run.min()), int(run.max())
            if low < 0:
                raise BenchError(f"{bin_path}: negative token id {low}")
            largest = max(largest, high)
            if have < needed:
                parts.append(np.array(run[:needed - have], dtype=np.int64))
                have += parts[-1].size
    if have == 0:
        raise BenchError(f"--corpus {spec}: no tokens")
    return np.concatenate(parts), largest


def load_placements(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise BenchError(f"--placements: {path} does not exist (write it with msd-plan place --json)") from None
    except (OSError, ValueError) as e:
        raise BenchError(f"--placements {path}: {e}") from None
    for key in ("seq_len", "dp", "documents", "placements"):
        if key not in data:
            raise BenchError(f"--placements {path}: no \"{key}\" (is it msd-plan place --json output?)")
    if not isinstance(data["placements"], dict) or not data["placements"]:
        raise BenchError(f"--placements {path}: \"placements\" names no placement")
    return data


def check_placement(name, placement, data, path):
    """Structure and bounds of one placement; returns the positions it places."""
    seq_len, dp, documents = data["seq_len"], data["dp"], data["documents"]
    where = f"--placements {path}: {name}"
    if placement.get("rows") not in ("fixed", "varlen"):
        raise BenchError(f"{where}: rows is {placement.get('rows')!r}, expected \"fixed\" or \"varlen\"")
    placement.setdefault("attention", "document")
    if placement["attention"] not in ATTENTION:
        raise BenchError(f"{where}: attention is {placement['attention']!r}, expected \"document\" or \"row\"")
    steps = placement.get("steps")
    if not isinstance(steps, list):
        raise BenchError(f"{where}: no steps list")
    positions = 0
    for t, step in enumerate(steps):
        if not isinstance(step, list) or len(step) != dp:
            raise BenchError(f"{where}: step {t} has {len(step) if isinstance(step, list) else 'no'} ranks, dp is {dp}")
        for rank, micro_batches in enumerate(step):
            if not isinstance(micro_batches, list):
                raise BenchError(f"{where}: step {t} rank {rank}: no micro-batch list")
            for m, sequences in enumerate(micro_batches):
                for s, sequence in enumerate(sequences):
                    used = 0
                    for piece in sequence:
                        if len(piece) != 3:
                            raise BenchError(f"{where}: step {t} rank {rank} micro-batch {m}: piece {piece} "
                                             "is not [doc, begin, length]")
                        doc, begin, length = piece
                        if not (0 <= doc < len(documents)) or begin < 0 or length <= 0 or \
                                begin + length > documents[doc]:
                            raise BenchError(f"{where}: step {t} rank {rank} micro-batch {m}: piece {piece} is "
                                             f"outside its document ({len(documents)} documents)")
                        used += length
                        if length > seq_len:
                            raise BenchError(f"{where}: step {t} rank {rank} micro-batch {m}: piece {piece} is "
                                             f"longer than seq_len {seq_len}")
                    # A varlen row may concatenate several sequences' pieces (msd's varlen micro-batches).
                    if used > seq_len and placement["rows"] == "fixed":
                        raise BenchError(f"{where}: step {t} rank {rank} micro-batch {m} sequence {s}: "
                                         f"{used} positions > seq_len {seq_len}")
                    positions += used
    return positions


def check_coverage(name, placement, documents, path):
    """Every document placed exactly once: its pieces tile [0, length)."""
    pieces = [p for step in placement["steps"] for mbs in step for seqs in mbs for seq in seqs for p in seq]
    if not pieces:
        return
    a = np.array(pieces, dtype=np.int64)
    a = a[np.lexsort((a[:, 1], a[:, 0]))]
    doc, begin, end = a[:, 0], a[:, 1], a[:, 1] + a[:, 2]
    first = np.ones(len(a), bool)
    first[1:] = doc[1:] != doc[:-1]
    last = np.ones(len(a), bool)
    last[:-1] = first[1:]
    lengths = np.asarray(documents, dtype=np.int64)
    bad = (first & (begin != 0)) | (~first & (begin != np.roll(end, 1))) | (last & (end != lengths[doc]))
    placed = np.zeros(len(documents), bool)
    placed[doc] = True
    missing = np.flatnonzero(~placed & (lengths > 0))
    if bad.any() or missing.size:
        d = int(doc[np.argmax(bad)]) if bad.any() else int(missing[0])
        raise BenchError(f"--placements {path}: {name} does not place every document exactly once "
                         f"(document {d}, {documents[d]} tokens)")


# ---------------------------------------------------------------- micro-batches


def micro_batch_rows(sequences, rows):
    """The rows a micro-batch computes: one per sequence (fixed) or one of all its pieces (varlen)."""
    if rows == "varlen":
        pieces = [p for s in sequences for p in s]
        return [pieces] if pieces else []
    return sequences if any(sequences) else []


def segment_lengths(row, attention):
    """The causal segments of one computed row: its pieces, or the whole row under "row" attention."""
    if attention == "row":
        return [sum(p[2] for p in row)] if row else []
    return [p[2] for p in row]


class Tiling:
    """How causal attention is cut into batched matmuls. A segment of at most `block` positions is
    padded to a multiple of `pad` and computed whole (an [L, L] causal square), batched with every
    segment of the micro-batch padded to the same length; a longer one is computed in query blocks
    of `block` rows against its keys up to the block's end (only the diagonal block masked). So a
    segment costs about L^2/2 + L*min(L, block)/2 scores, and a micro-batch makes one call per
    padded length of its short segments and one per block of its long ones, not one per segment."""

    def __init__(self, pad, block):
        if pad < 1 or block < pad:
            raise BenchError(f"--pad {pad} --block {block}: the block must be at least the pad")
        self.pad, self.block = pad, block

    def padded(self, length):
        return -(-length // self.pad) * self.pad

    def calls(self, lengths):
        """The matmul groups of a micro-batch with segments of these lengths (its constant cost)."""
        short = {self.padded(n) for n in lengths if n <= self.block}
        return len(short) + sum(-(-n // self.block) for n in lengths if n > self.block)

    def plan(self, starts, lengths, dummy, group_elements=GROUP_ELEMENTS):
        """(short: [(padded length, index [count, padded] of flat positions, `dummy` for padding)],
        long: [(start, length, padded length)], destination: the flat position of every output row)."""
        buckets = {}
        for start, n in zip(starts, lengths):
            if n <= self.block:
                buckets.setdefault(self.padded(n), []).append((start, n))
        short, destination = [], []
        for size in sorted(buckets):
            members = buckets[size]
            per_call = max(1, group_elements // (size * size))
            for c in range(0, len(members), per_call):
                rows = [np.where(np.arange(size) < n, start + np.arange(size), dummy)
                        for start, n in members[c:c + per_call]]
                index = np.stack(rows)
                short.append((size, torch.from_numpy(index)))
                destination.append(index.reshape(-1))
        long = [(start, n, self.padded(n)) for start, n in zip(starts, lengths) if n > self.block]
        destination.extend(np.arange(start, start + n) for start, n, _ in long)
        destination = np.concatenate(destination) if destination else np.zeros(0, np.int64)
        return short, long, torch.from_numpy(destination)


def row_width(computed, rows, seq_len, tiling):
    """Positions of each computed row: seq_len (fixed), or the varlen row's rounded up to the pad
    (so that row shapes recur: oneDNN compiles a kernel per shape)."""
    return tiling.padded(sum(p[2] for p in computed[0])) if rows == "varlen" else seq_len


def micro_batch_features(sequences, rows, seq_len, attention, tiling):
    """(positions computed, padding included; sum of segment L^2; attention calls) or None when empty."""
    computed = micro_batch_rows(sequences, rows)
    if not computed:
        return None
    lengths = [n for row in computed for n in segment_lengths(row, attention)]
    return len(computed) * row_width(computed, rows, seq_len, tiling), sum(n * n for n in lengths), \
        tiling.calls(lengths)


def micro_batch_shape(sequences, rows, seq_len, attention, tiling):
    """The shape msd-plan calibrate reads (segments as attention computes them), or None when empty."""
    computed = micro_batch_rows(sequences, rows)
    if not computed:
        return None
    width, out = row_width(computed, rows, seq_len, tiling), []
    for row in computed:
        lengths = segment_lengths(row, attention)
        out.append({"segments": lengths, "patches": [0] * len(lengths), "padding": width - sum(lengths)})
    return {"sequences": out}


class MicroBatch:
    """One micro-batch as tensors: rows of `width` positions and its attention's plan (Tiling)."""

    def __init__(self, rows, width, tokens_of, attention, tiling, group_elements=GROUP_ELEMENTS):
        self.rows, self.length = len(rows), width
        count = self.rows * width
        tokens = np.zeros(count, np.int64)
        positions = np.zeros(count, np.int64)
        labels = np.full(count, -100, np.int64)
        starts, lengths = [], []  # flat start and length of every segment
        for r, row in enumerate(rows):
            offset = r * width
            ids = np.concatenate([tokens_of(*p) for p in row]) if row else np.zeros(0, np.int64)
            tokens[offset:offset + ids.size] = ids
            at = offset
            for n in segment_lengths(row, attention):
                positions[at:at + n] = np.arange(n)
                labels[at:at + n - 1] = tokens[at + 1:at + n]
                starts.append(at)
                lengths.append(n)
                at += n
        # Padding rows of the short segments' batches point at position `count`: a zero row after the last.
        self.short, self.long, self.destination = tiling.plan(starts, lengths, count, group_elements)
        shape = (self.rows, width)
        self.tokens = torch.from_numpy(tokens).view(shape)
        self.positions = torch.from_numpy(positions).view(shape)
        self.labels = torch.from_numpy(labels).view(shape)
        self.used = sum(lengths)
        self.labelled = int((labels != -100).sum())

    def to(self, device):
        for name in ("tokens", "positions", "labels", "destination"):
            setattr(self, name, getattr(self, name).to(device))
        self.short = [(size, index.to(device)) for size, index in self.short]
        return self


def build_micro_batch(sequences, placement, seq_len, tokens_of, tiling):
    computed = micro_batch_rows(sequences, placement["rows"])
    if not computed:
        return None
    width = row_width(computed, placement["rows"], seq_len, tiling)
    return MicroBatch(computed, width, tokens_of, placement["attention"], tiling)


def labelled_positions(placement, step):
    """Positions with a next-token label in one step over every rank: the loss's divisor."""
    total = 0
    for micro_batches in step:
        for sequences in micro_batches:
            for row in micro_batch_rows(sequences, placement["rows"]):
                total += sum(n - 1 for n in segment_lengths(row, placement["attention"]))
    return max(1, total)


def longest_row(placement):
    """The most positions one segment can count (the position table's size must cover it)."""
    if placement["attention"] == "document":
        return max((p[2] for step in placement["steps"] for mbs in step for seqs in mbs for seq in seqs
                    for p in seq), default=1)
    return max((sum(p[2] for p in row) for step in placement["steps"] for mbs in step for seqs in mbs
                for row in micro_batch_rows(seqs, placement["rows"])), default=1)


# ---------------------------------------------------------------- model


_FUTURE = {}


def future_mask(size, device):
    """[size, size], True where the key comes after the query."""
    key = (size, str(device))
    if key not in _FUTURE:
        _FUTURE[key] = torch.ones(size, size, dtype=torch.bool, device=device).triu(1)
    return _FUTURE[key]


def causal(q, k, v, block):
    """softmax(q k^T + causal mask) v for q, k, v of [batch, heads, L, dim] (q scaled); longer than
    `block`: in query blocks of `block` rows against the keys up to the block's end."""
    length = q.shape[2]
    if length <= block:
        scores = q @ k.transpose(-2, -1)
        scores.masked_fill_(future_mask(length, q.device), float("-inf"))
        return scores.softmax(-1) @ v
    keys, outs = k.transpose(-2, -1), []
    for begin in range(0, length, block):
        end = min(length, begin + block)
        scores = q[:, :, begin:end] @ keys[..., :end]
        scores[..., begin:end].masked_fill_(future_mask(end - begin, q.device), float("-inf"))
        outs.append(scores.softmax(-1) @ v[:, :, :end])
    return torch.cat(outs, 2)


def segment_attention(qkv, mb, block, scale):
    """Causal attention of every segment of `mb`: qkv [positions + 1, 3, heads, dim] (the last row
    zero, for padding); the output rows [len(mb.destination), heads * dim], in destination order."""
    heads, dim = qkv.shape[2], qkv.shape[3]
    outs = []
    for size, index in mb.short:  # equal padded lengths batched: gathered, padding rows zero
        q, k, v = (t.transpose(1, 2) for t in qkv[index].unbind(2))  # [count, heads, size, dim]
        outs.append(causal(q * scale, k, v, block).transpose(1, 2).reshape(-1, heads * dim))
    for start, length, padded in mb.long:  # contiguous: sliced, never gathered; zero rows pad the tail
        x = qkv[start:start + length]
        if padded > length:
            x = torch.cat([x, x.new_zeros(padded - length, *x.shape[1:])])
        q, k, v = (t.transpose(0, 1)[None] for t in x.unbind(1))
        outs.append(causal(q * scale, k, v, block)[0, :, :length].transpose(0, 1).reshape(length, heads * dim))
    return torch.cat(outs)


class Block(nn.Module):
    def __init__(self, width, heads, head_dim, block):
        super().__init__()
        self.heads, self.head_dim, self.block = heads, head_dim, block
        inner = heads * head_dim
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * inner)
        self.proj = nn.Linear(inner, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def attention(self, h, mb, dtype):
        """Causal attention inside each segment of `mb` only, in `dtype`; zero at padding."""
        rows, length, _ = h.shape
        heads, head_dim = self.heads, self.head_dim
        inner = heads * head_dim
        qkv = self.qkv(h)
        with torch.autocast(h.device.type, enabled=False):
            qkv = qkv.reshape(rows * length, 3, heads, head_dim).to(dtype)
            qkv = torch.cat([qkv, qkv.new_zeros(1, 3, heads, head_dim)])
            out = qkv.new_zeros(rows * length + 1, inner)
            if mb.used:
                o = segment_attention(qkv, mb, self.block, 1.0 / math.sqrt(head_dim))
                out = out.index_copy(0, mb.destination, o)
            return out[:-1].view(rows, length, inner)

    def forward(self, x, mb, dtype):
        x = x + self.proj(self.attention(self.norm1(x), mb, dtype))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    """precision "bf16": matrix products (and attention) in bfloat16 under autocast, the rest in
    float32; "fp32": everything in the parameters' dtype."""

    def __init__(self, vocab, width, layers, heads, head_dim, max_position, block, precision="bf16"):
        super().__init__()
        self.precision = precision
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Embedding(max_position, width)
        self.blocks = nn.ModuleList(Block(width, heads, head_dim, block) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        for embedding in (self.embed, self.position):
            nn.init.normal_(embedding.weight, std=0.02)

    def logits(self, mb):
        x = self.embed(mb.tokens) + self.position(mb.positions)
        low = self.precision == "bf16"
        dtype = torch.bfloat16 if low else x.dtype
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=low):
            for block in self.blocks:
                x = block(x, mb, dtype)
            return self.norm(x) @ self.embed.weight.t()  # every position, padding too

    def forward(self, mb):
        """Summed next-token cross-entropy over the micro-batch's labelled positions."""
        logits = self.logits(mb)
        logits = logits.view(-1, logits.shape[-1])
        if logits.dtype == torch.bfloat16:
            logits = logits.float()
        return F.cross_entropy(logits, mb.labels.view(-1), ignore_index=-100, reduction="sum")


def model_args(args, job):
    return (job["vocab"], args.width, args.layers, args.heads, args.head_dim, job["max_position"], args.block,
            args.precision)


# ---------------------------------------------------------------- self-check


def _dense_attention(block, h, segment):
    """Reference: one [T, T] block-diagonal causal mask per row (segment ids, -1 padding)."""
    rows, length, _ = h.shape
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    heads, head_dim = block.heads, block.head_dim
    q, k, v = block.qkv(h).view(rows, length, 3, heads, head_dim).unbind(2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    pad = segment < 0
    same = (segment[:, :, None] == segment[:, None, :]) & ~pad[:, :, None]
    allowed = same & ~future | torch.eye(length, dtype=torch.bool) & pad[:, :, None]
    p = scores.masked_fill(~allowed[:, None], float("-inf")).softmax(-1)
    o = (p @ v).transpose(1, 2).reshape(rows, length, heads * head_dim)
    return o.masked_fill(pad[:, :, None], 0.0)


def _self_check():
    """Per-segment attention (padded and batched, or blockwise) equals dense block-diagonal causal attention; the packed
    model's loss and gradients equal those of every segment computed alone. Raises AssertionError."""
    torch.manual_seed(0)
    seq_len, width, heads, head_dim, vocab = 24, 16, 2, 3, 50
    rng = np.random.default_rng(0)
    documents = [5, 7, 1, 3, 24, 10, 10, 4, 30, 2]
    stream = rng.integers(0, vocab, sum(documents))
    starts = np.concatenate([[0], np.cumsum(documents)[:-1]])

    def tokens_of(doc, begin, length):
        return stream[starts[doc] + begin:starts[doc] + begin + length]

    # Rows with several segments and padding, a full row, equal lengths, a split doc.
    sequences = [[[0, 0, 5], [1, 0, 7], [2, 0, 1], [3, 0, 3]], [[4, 0, 24]], [[5, 0, 10], [6, 0, 10], [7, 0, 4]],
                 [[8, 0, 20]], [[8, 20, 10], [9, 0, 2]]]
    checked = 0
    # Blocks shorter than most segments (one dividing some lengths, one not), padding that divides
    # no length, whole segments unpadded.
    for tiling in (Tiling(2, 8), Tiling(3, 7), Tiling(4, 4), Tiling(1, 128)):
        model = GPT(vocab, width, 2, heads, head_dim, 128, tiling.block, "fp32").double()
        for rows in ("fixed", "varlen"):
            for attention in ATTENTION:
                for group_elements in (GROUP_ELEMENTS, 100):  # short segments batched, and one per matmul
                    computed = micro_batch_rows(sequences, rows)
                    length = sum(p[2] for p in computed[0]) if rows == "varlen" else seq_len
                    mb = MicroBatch(computed, length, tokens_of, attention, tiling, group_elements)
                    segments = [segment_lengths(row, attention) for row in computed]
                    assert mb.used == sum(p[2] for s in sequences for p in s)
                    assert mb.labelled == sum(n - 1 for row in segments for n in row)
                    segment = torch.full((mb.rows, length), -1, dtype=torch.int64)
                    for r, row in enumerate(segments):
                        offset = 0
                        for i, n in enumerate(row):
                            segment[r, offset:offset + n] = i
                            offset += n
                    block = model.blocks[0]
                    h = torch.randn(mb.rows, length, width, dtype=torch.float64, requires_grad=True)
                    mine = block.attention(h, mb, torch.float64)
                    dense = _dense_attention(block, h, segment)
                    where = f"{rows} rows, {attention} attention, pad {tiling.pad} block {tiling.block}"
                    assert torch.allclose(mine, dense, atol=1e-12), f"{where}: attention differs from the dense mask"
                    assert bool((mine[segment < 0] == 0).all()), f"{where}: padding attends"
                    weight = torch.randn_like(mine)
                    g_mine = torch.autograd.grad((mine * weight).sum(), [h, block.qkv.weight])
                    g_dense = torch.autograd.grad((dense * weight).sum(), [h, block.qkv.weight])
                    for a, b in zip(g_mine, g_dense):
                        assert torch.allclose(a, b, atol=1e-12), f"{where}: attention gradients differ"
                    _check_packed(model, mb, computed, attention, tokens_of, tiling, where)
                    checked += 1
    _check_bf16(vocab, width, heads, head_dim, sequences, tokens_of)
    print(f"{PROG}: self-check passed ({checked} micro-batches: padded and blockwise per-segment attention = dense "
          "block-diagonal causal mask, packed loss and gradients = every segment alone; bf16 close to fp32)")


def _check_packed(model, mb, computed, attention, tokens_of, tiling, where):
    """The packed micro-batch's loss and gradients against every segment in a row of its own."""
    model.zero_grad()
    packed = model(mb)
    packed.backward()
    g_packed = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    alone = 0.0
    # Under "row" attention a row is one segment: its pieces stay together.
    units = [row for row in computed] if attention == "row" else [[p] for row in computed for p in row]
    for unit in units:
        n = sum(p[2] for p in unit)
        loss = model(MicroBatch([unit], n, tokens_of, attention, tiling))
        loss.backward()
        alone += loss.item()
    assert math.isclose(packed.item(), alone, rel_tol=1e-12), f"{where}: loss {packed.item()} != {alone}"
    for p, g in zip(model.parameters(), g_packed):
        assert torch.allclose(p.grad, g, atol=1e-12), f"{where}: parameter gradients differ"


def _check_bf16(vocab, width, heads, head_dim, sequences, tokens_of):
    """The bf16 model's loss within bfloat16's precision of the fp32 model's."""
    torch.manual_seed(1)
    for tiling in (Tiling(4, 8), Tiling(64, 256)):
        model = GPT(vocab, width, 1, heads, head_dim, 64, tiling.block, "fp32")
        mb = MicroBatch(micro_batch_rows(sequences, "fixed"), 24, tokens_of, "document", tiling)
        model.precision = "fp32"
        exact = model(mb).item()
        model.precision = "bf16"
        low = model(mb).item()
        assert abs(low - exact) < 0.02 * abs(exact), f"bf16 loss {low} far from fp32 loss {exact}"


# ---------------------------------------------------------------- training


def now(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def new_model(args, job, device):
    """The run's initial model and optimizer: the same for every placement and repeat."""
    torch.manual_seed(args.seed)
    model = GPT(*model_args(args, job)).to(device)
    return model, torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)


def train_micro_batches(model, micro_batches, count, device):
    """Forward and backward of each micro-batch (gradients accumulate). Returns the wall and
    process-CPU seconds of each, and the summed loss / count."""
    wall, cpu, share = [], [], 0.0
    for mb in micro_batches:
        if mb is None:
            wall.append(0.0)
            cpu.append(0.0)
            continue
        begin, begin_cpu = now(device), time.process_time()
        loss = model(mb) / count
        loss.backward()
        wall.append(now(device) - begin)
        cpu.append(time.process_time() - begin_cpu)
        share += loss.item()
    return wall, cpu, share


def flat_gradients(params):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])


def set_gradients(params, flat):
    offset = 0
    for p in params:
        p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()


def pin_to_core(worker):
    """Pins this process to one of the cores it may run on (worker mod their count); returns it."""
    cores = sorted(os.sched_getaffinity(0))
    core = cores[worker % len(cores)]
    os.sched_setaffinity(0, {core})
    return core


def keep_freed_memory():
    """glibc returns large freed blocks to the system (munmap, heap trimming), so every micro-batch's
    activations would be fresh pages faulted in again: a cost per micro-batch that is not compute.
    Keeping freed memory for reuse (as a caching allocator does) removes it. Skipped without glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: never trim the heap below 1 GiB of free memory
        libc.mallopt(-3, 1 << 25)  # M_MMAP_THRESHOLD: blocks up to 32 MiB from the heap, not mmap
    except (OSError, AttributeError):
        pass


def set_threads(threads):
    keep_freed_memory()
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass


def inject(args, rank, phase):
    if args.inject_failure == f"{rank}:{phase}":
        raise RuntimeError(f"--inject-failure {args.inject_failure}: rank {rank} fails in {phase}")


def process_main(rank, target, args, port, *rest):
    """A torch.multiprocessing child (a DP rank, or an emulation worker). Exit status 1: it failed;
    LOST_PEERS: a collective broke or timed out because another process is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the children
    what = "worker" if args.emulate else "rank"
    try:
        target(rank, args, port, *rest)
    except BenchError as e:
        print(f"{PROG}: {what} {rank}: error: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - every failure must end the process with a status the parent reads
        text = str(e)
        first = text.strip().splitlines()[0] if text.strip() else type(e).__name__
        if isinstance(e, RuntimeError) and any(s in text for s in PEER_ERRORS):
            print(f"{PROG}: {what} {rank}: lost the other processes: {first}", file=sys.stderr, flush=True)
            sys.exit(LOST_PEERS)
        traceback.print_exc()
        print(f"{PROG}: {what} {rank}: error: {type(e).__name__}: {first}", file=sys.stderr, flush=True)
        sys.exit(1)


def init_group(backend, rank, world, port, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, init_method="env://", world_size=world, rank=rank,
                            timeout=datetime.timedelta(seconds=args.collective_timeout))


def tokens_reader(job):
    stream, starts = job["stream"], job["starts"]

    def tokens_of(doc, begin, length):
        first = (starts[doc] + begin) % stream.size
        if first + length <= stream.size:
            return stream[first:first + length]
        return stream[np.arange(first, first + length) % stream.size]
    return tokens_of


# ---------------------------------------------------------------- real data parallelism (one rank)


def train_placement(args, job, steps, counts, device):
    """Trains `steps` (this rank's micro-batches per step) from the run's initial model; returns the timings."""
    model, optimizer = new_model(args, job, device)
    params = list(model.parameters())
    mb_seconds, step_ends, loss_shares = [], [], []
    dist.barrier()
    start = now(device)
    for t, micro_batches in enumerate(steps):
        optimizer.zero_grad(set_to_none=True)
        seconds, _, share = train_micro_batches(model, micro_batches, counts[t], device)
        flat = flat_gradients(params)
        dist.all_reduce(flat)
        set_gradients(params, flat)
        optimizer.step()
        step_ends.append(now(device) - start)
        mb_seconds.append(seconds)
        loss_shares.append(share)
    dist.barrier()
    total = now(device) - start
    return {"seconds": total, "mb_seconds": mb_seconds, "step_ends": step_ends, "loss_shares": loss_shares}


def run_rank(rank, args, port, job):
    set_threads(args.threads)
    world, seq_len, names = job["dp"], job["seq_len"], job["names"]
    if args.device == "cuda":
        count = torch.cuda.device_count()
        device = torch.device("cuda", rank % count)
        torch.cuda.set_device(device)
        backend = "nccl" if count >= world else "gloo"
    else:
        device, backend = torch.device("cpu"), "gloo"
        if args.pin:
            pin_to_core(rank)
    tokens_of = tokens_reader(job)

    inject(args, rank, "build")
    built = time.perf_counter()
    mine = {}  # name -> [step][micro-batch] MicroBatch or None, this rank's
    for name in names:
        placement = job["placements"][name]
        mine[name] = [[None if mb is None else mb.to(device) for mb in
                       (build_micro_batch(seqs, placement, seq_len, tokens_of, args.tiling) for seqs in step[rank])]
                      for step in placement["steps"]]
    built = time.perf_counter() - built

    init_group(backend, rank, world, port, args)
    try:
        if rank == 0:
            print(f"{PROG}: {sum(mb is not None for n in names for s in mine[n] for mb in s)} micro-batches of "
                  f"{len(names)} placements built on rank 0 in {built:.1f} s; training on {job['device_name']}, "
                  f"{world} ranks x {args.threads} thread(s)", file=sys.stderr, flush=True)
        if args.warmup_steps > 0:  # untimed: first-touch allocations, lazy initialisation
            first = names[0]
            train_placement(args, job, mine[first][:args.warmup_steps], job["counts"][first][:args.warmup_steps],
                            device)
        inject(args, rank, "train")
        results = {name: [] for name in names}
        for repeat in range(args.repeats):
            for name in (names if repeat % 2 == 0 else names[::-1]):
                run = train_placement(args, job, mine[name], job["counts"][name], device)
                results[name].append(run)
                if rank == 0:
                    print(f"{PROG}: {name} repeat {repeat + 1}/{args.repeats}: {run['seconds']:.2f} s "
                          f"({len(mine[name])} steps)", file=sys.stderr, flush=True)
        gathered = [None] * world if rank == 0 else None
        dist.gather_object(results, gathered, dst=0)
        if rank == 0:
            report(gathered, job, args, sum(p.numel() for p in GPT(*model_args(args, job)).parameters()))
        dist.barrier()
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------- report of a real run (rank 0)


def write_json(path, data):
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def write_shapes(records, path):
    """(shape, seconds) records: shapes as JSON lines to `path`, seconds to path.times."""
    with open(path, "w") as shapes, open(path + ".times", "w") as times:
        for shape, seconds in records:
            shapes.write(json.dumps(shape, separators=(",", ":")) + "\n")
            times.write(f"{seconds:.9g}\n")
    print(f"{PROG}: {len(records)} micro-batch shapes to {path}, their seconds to {path}.times",
          file=sys.stderr, flush=True)


def pairwise_speedups(seconds):
    """Every msd placement over every other placement: seconds of the other / seconds of msd's."""
    out = {}
    for mine in (n for n in seconds if n.startswith(MSD_PREFIX)):
        for base in (n for n in seconds if not n.startswith(MSD_PREFIX)):
            out[f"{mine}_over_{base}"] = seconds[base] / seconds[mine] if seconds[mine] > 0 else None
    return out


def report(gathered, job, args, parameters):
    names, seq_len = job["names"], job["seq_len"]
    if args.shapes_out:  # repeat 0's micro-batches, in the order they ran
        records = []
        for name in names:
            placement = job["placements"][name]
            for t, step in enumerate(placement["steps"]):
                for rank, micro_batches in enumerate(step):
                    for m, seqs in enumerate(micro_batches):
                        shape = micro_batch_shape(seqs, placement["rows"], seq_len, placement["attention"],
                                                  args.tiling)
                        if shape is not None:
                            records.append((shape, gathered[rank][name][0]["mb_seconds"][t][m]))
        write_shapes(records, args.shapes_out)
    placements = {}
    for name in names:
        placement = job["placements"][name]
        runs = gathered[0][name]
        seconds_runs = [run["seconds"] for run in runs]
        fractions = []
        for r, run in enumerate(runs):
            walls = np.diff([0.0] + run["step_ends"])
            for t, wall in enumerate(walls):
                compute = [sum(gathered[rank][name][r]["mb_seconds"][t]) for rank in range(len(gathered))]
                fractions.append((max(compute) - statistics.fmean(compute)) / wall if wall > 0 else 0.0)
        losses = [sum(g[name][0]["loss_shares"][t] for g in gathered) for t in range(len(placement["steps"]))]
        median = statistics.median(seconds_runs)
        placements[name] = {
            "rows": placement["rows"], "attention": placement["attention"], "steps": len(placement["steps"]),
            "tokens": job["tokens"][name], "seconds_runs": seconds_runs, "seconds_median": median,
            "tokens_per_s": job["tokens"][name] / median if median > 0 else None,
            "straggler_fraction": statistics.fmean(fractions) if fractions else 0.0,
            "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        }
    speedup = {} if job["truncated"] else pairwise_speedups({n: p["seconds_median"] for n, p in placements.items()})
    common = {job["tokens"][n] for n in names}
    out = {
        "mode": "real", "placements": placements, "speedup": speedup, "dp": job["dp"], "seq_len": seq_len,
        "repeats": args.repeats, "threads_per_rank": args.threads, "pinned": args.pin,
        "model": model_description(args, job, parameters), "device": job["device_name"],
        "tokens": common.pop() if len(common) == 1 else None, "seed": job["seed"], "lengths": job["lengths"],
        "truncated": job["truncated"], "warmup_steps": args.warmup_steps,
        "placements_file": os.path.abspath(job["path"]), "corpus": args.corpus,
    }
    if args.json:
        write_json(args.json, out)
    print(f"{'placement':<22} {'rows':<6} {'attention':<9} {'tokens':>9} {'median s':>9} {'tokens/s':>9} "
          f"{'straggler':>9}  runs (s)")
    for name, p in placements.items():
        runs = " ".join(f"{s:.2f}" for s in p["seconds_runs"])
        tps = f"{p['tokens_per_s']:.0f}" if p["tokens_per_s"] else "-"
        print(f"{name:<22} {p['rows']:<6} {p['attention']:<9} {p['tokens']:>9} {p['seconds_median']:>9.2f} "
              f"{tps:>9} {p['straggler_fraction']:>9.3f}  {runs}")
    shown = [f"{k.replace('_over_', ' over ')} {v:.3f}x" for k, v in speedup.items() if isinstance(v, float)]
    if shown:
        print("speedup: " + ", ".join(shown))
    elif job["truncated"]:
        print("speedup: not computed (--max-steps truncated the placements: their tokens differ)")
    if args.json:
        print(f"{PROG}: wrote {args.json}", file=sys.stderr, flush=True)
    sys.stdout.flush()


def model_description(args, job, parameters):
    return {"width": args.width, "layers": args.layers, "heads": args.heads, "head_dim": args.head_dim,
            "vocab": job["vocab"], "vocab_folding": "token id mod vocab", "max_position": job["max_position"],
            "block": args.block, "pad": args.pad, "precision": args.precision, "parameters": parameters,
            "seed": args.seed,
            "lr": args.lr}


# ---------------------------------------------------------------- emulated data parallelism (one worker)

EMULATION_WORKERS = 2  # processes with identical replicas; --workers of them train ranks
ASSIGN_A = 2000  # a rough per-position cost against L^2, only to share a step's ranks between the two workers


def assign_ranks(placement, seq_len, tiling, workers):
    """Per step, the ranks each worker trains: all on worker 0 (workers 1), or shared by estimated cost
    (longest first, to the less loaded worker) so the two finish a step together. Times are per rank,
    so the sharing changes how long the bench takes, not what it measures."""
    out = []
    for step in placement["steps"]:
        if workers == 1:
            out.append([list(range(len(step))), []])
            continue
        cost = []
        for micro_batches in step:
            total = 0
            for seqs in micro_batches:
                f = micro_batch_features(seqs, placement["rows"], seq_len, placement["attention"], tiling)
                if f is not None:
                    total += ASSIGN_A * f[0] + f[1]
            cost.append(total)
        load, shares = [0, 0], [[], []]
        for rank in sorted(range(len(step)), key=lambda r: (-cost[r], r)):
            w = 0 if load[0] <= load[1] else 1
            shares[w].append(rank)
            load[w] += cost[rank]
        out.append([sorted(s) for s in shares])
    return out


def emulate_placement(args, job, name, worker, device, max_steps=None):
    """Trains one placement's steps as every emulated rank would, this worker's ranks only;
    returns per step: per rank its micro-batches' seconds and tokens, the all-reduce's and
    the optimizer step's seconds, and the loss share."""
    placement = job["placements"][name]
    steps = placement["steps"][:max_steps]
    counts = job["counts"][name]
    tokens_of = tokens_reader(job)
    mine = []  # built before anything is timed
    for t, step in enumerate(steps):
        ranks = job["assignment"][name][t][worker]
        mine.append([(r, [None if mb is None else mb.to(device) for mb in
                          (build_micro_batch(seqs, placement, job["seq_len"], tokens_of, args.tiling)
                           for seqs in step[r])]) for r in ranks])
    model, optimizer = new_model(args, job, device)
    params = list(model.parameters())
    records = []
    dist.barrier()
    for t, ranks in enumerate(mine):
        optimizer.zero_grad(set_to_none=True)
        per_rank, share = {}, 0.0
        for rank, micro_batches in ranks:
            wall, cpu, loss = train_micro_batches(model, micro_batches, counts[t], device)
            per_rank[rank] = {"wall": wall, "cpu": cpu,
                              "tokens": sum(mb.used for mb in micro_batches if mb is not None)}
            share += loss
        flat = flat_gradients(params)
        dist.barrier()  # both workers ready: the all-reduce below times the transfer, not a wait
        begin = time.perf_counter()
        dist.all_reduce(flat)
        allreduce = time.perf_counter() - begin
        set_gradients(params, flat)
        begin = time.perf_counter()
        optimizer.step()
        records.append({"ranks": per_rank, "allreduce": allreduce, "optimizer": time.perf_counter() - begin,
                        "loss_share": share, "bytes": flat.numel() * flat.element_size()})
    dist.barrier()
    return records


def emulate_worker(worker, args, port, jobs, out_path):
    set_threads(1)
    core = pin_to_core(worker)
    device = torch.device("cpu")
    init_group("gloo", worker, EMULATION_WORKERS, port, args)
    try:
        if worker == 0:
            print(f"{PROG}: emulating {jobs[0]['dp']} ranks, {args.workers} at a time (worker 0 on core {core}); "
                  f"{len(jobs)} stream(s) x {len(jobs[0]['names'])} placements x {args.repeats} repeat(s)",
                  file=sys.stderr, flush=True)
        if args.warmup_steps > 0:  # untimed: first-touch allocations, lazy initialisation
            emulate_placement(args, jobs[0], jobs[0]["names"][0], worker, device, args.warmup_steps)
        inject(args, worker, "train")
        results = []
        for j, job in enumerate(jobs):
            runs = {name: [] for name in job["names"]}
            for repeat in range(args.repeats):  # the order reversed on every other stream and repeat
                for name in (job["names"] if (j + repeat) % 2 == 0 else job["names"][::-1]):
                    started = time.perf_counter()
                    runs[name].append(emulate_placement(args, job, name, worker, device))
                    if worker == 0:
                        print(f"{PROG}: stream {j + 1}/{len(jobs)} (seed {job['seed']}) {name} repeat "
                              f"{repeat + 1}/{args.repeats}: {len(runs[name][-1])} steps in "
                              f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
            gathered = [None] * EMULATION_WORKERS if worker == 0 else None
            dist.gather_object(runs, gathered, dst=0)
            if worker == 0:
                results.append(merge_workers(gathered))
        if worker == 0:
            with open(out_path, "wb") as f:
                pickle.dump(results, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def merge_workers(gathered):
    """One stream's runs with both workers' ranks in each step."""
    merged = {}
    for name, runs in gathered[0].items():
        merged[name] = []
        for r, steps in enumerate(runs):
            out = []
            for t, record in enumerate(steps):
                other = gathered[1][name][r][t]
                ranks = {int(k): v for k, v in record["ranks"].items()}
                ranks.update({int(k): v for k, v in other["ranks"].items()})
                out.append({"ranks": ranks, "allreduce": record["allreduce"],
                            "optimizer": max(record["optimizer"], other["optimizer"]),
                            "loss_share": record["loss_share"] + other["loss_share"], "bytes": record["bytes"]})
            merged[name].append(out)
    return merged


# ---------------------------------------------------------------- emulated row (parent)


def step_seconds(record, dp, clock):
    """(emulated seconds of one step, its ranks' compute seconds)."""
    compute = [sum(record["ranks"][r][clock]) if r in record["ranks"] else 0.0 for r in range(dp)]
    return max(compute) + record["allreduce"] + record["optimizer"], compute


def summarize_run(steps, dp, clock):
    seconds, maxima, fractions = [], [], []
    for record in steps:
        total, compute = step_seconds(record, dp, clock)
        seconds.append(total)
        maxima.append(max(compute))
        fractions.append((max(compute) - statistics.fmean(compute)) / total if total > 0 else 0.0)
    return {"seconds": sum(seconds), "step_seconds": seconds, "step_max": maxima,
            "straggler_fraction": statistics.fmean(fractions) if fractions else 0.0,
            "allreduce": sum(r["allreduce"] for r in steps), "optimizer": sum(r["optimizer"] for r in steps)}


def geomean_ci(ratios, seed=0):
    """Geometric mean of per-stream ratios and its 95% percentile bootstrap interval (streams resampled)."""
    logs = np.log(np.asarray(ratios, dtype=float))
    rng = np.random.default_rng(seed)
    means = logs[rng.integers(0, logs.size, (BOOTSTRAP_RESAMPLES, logs.size))].mean(axis=1)
    return {"geomean": float(np.exp(logs.mean())),
            "ci95": [float(np.exp(np.percentile(means, 2.5))), float(np.exp(np.percentile(means, 97.5)))],
            "per_stream": [float(r) for r in np.exp(logs)]}


def fit_costs(features, seconds, seq_len):
    """seconds = c0 + c1*positions + c2*sum(L^2) + c3*segment groups, least squares weighted by
    relative error (as msd-plan calibrate); a = c1/c2, the planner's a."""
    x = np.asarray(features, dtype=float)
    y = np.asarray(seconds, dtype=float)
    if len(y) < 8 or not (y > 0).all():
        return None
    design = np.column_stack([np.ones(len(y)), x])
    c = np.linalg.lstsq(design / y[:, None], np.ones(len(y)), rcond=None)[0]
    predicted = design @ c
    typical, groups = float(np.median(y)), float(np.median(x[:, 2]))
    a = c[1] / c[2] if c[2] > 0 else None
    return {"micro_batches": len(y), "c0_seconds": c[0], "c1_seconds_per_position": c[1],
            "c2_seconds_per_l2": c[2], "c3_seconds_per_group": c[3], "a": a,
            "a_over_seq_len": a / seq_len if a else None,
            "r_squared": 1 - float(((y - predicted) ** 2).sum() / ((y - y.mean()) ** 2).sum()),
            "median_abs_error": float(np.median(np.abs(predicted - y) / y)),
            "typical_micro_batch_seconds": typical, "typical_groups": groups,
            "constant_share": (c[0] + c[3] * groups) / typical}


def stream_placement(job, name, runs, clock, args):
    """One stream's figures for one placement, and its micro-batches' (features, seconds, shape)."""
    placement, dp = job["placements"][name], job["dp"]
    summaries = [summarize_run(steps, dp, clock) for steps in runs]
    totals = [s["seconds"] for s in summaries]
    median = statistics.median(totals)
    chosen = summaries[min(range(len(totals)), key=lambda i: abs(totals[i] - median))]
    first = runs[0]
    tokens = sum(rank["tokens"] for record in first for rank in record["ranks"].values())
    wall = sum(sum(rank["wall"]) for record in first for rank in record["ranks"].values())
    cpu = sum(sum(rank["cpu"]) for record in first for rank in record["ranks"].values())
    micro = []
    for t, step in enumerate(placement["steps"]):
        for r, micro_batches in enumerate(step):
            for m, seqs in enumerate(micro_batches):
                f = micro_batch_features(seqs, placement["rows"], job["seq_len"], placement["attention"], args.tiling)
                if f is not None:
                    micro.append((f, first[t]["ranks"][r][clock][m],
                                  micro_batch_shape(seqs, placement["rows"], job["seq_len"], placement["attention"],
                                                   args.tiling)))
    figures = {"seconds": median, "seconds_runs": totals, "steps": len(first), "tokens": tokens,
               "step_max": chosen["step_max"], "step_seconds": chosen["step_seconds"],
               "straggler_fraction": chosen["straggler_fraction"], "allreduce_seconds": chosen["allreduce"],
               "optimizer_seconds": chosen["optimizer"], "cpu_over_wall": cpu / wall if wall > 0 else None,
               "loss_first": first[0]["loss_share"] if first else None,
               "loss_last": first[-1]["loss_share"] if first else None}
    return figures, micro


def summarize_row(jobs, results, args, parameters):
    names, dp, seq_len = jobs[0]["names"], jobs[0]["dp"], jobs[0]["seq_len"]
    streams, micro = [], []
    for job, runs in zip(jobs, results):
        figures = {}
        for name in names:
            figures[name], records = stream_placement(job, name, runs[name], args.clock, args)
            micro.extend(records)
        trained = {name: f["tokens"] for name, f in figures.items()}
        if set(trained.values()) != {job["positions"]}:
            raise BenchError(f"{job['path']}: the placements did not train the same tokens (the stream has "
                             f"{job['positions']}): " + ", ".join(f"{n} {t}" for n, t in trained.items()))
        streams.append(figures)
    placements = {}
    for name in names:
        per = [s[name] for s in streams]
        placement = jobs[0]["placements"][name]
        placements[name] = {
            "rows": placement["rows"], "attention": placement["attention"],
            "tokens": sum(p["tokens"] for p in per), "seconds_sum": sum(p["seconds"] for p in per),
            "seconds_per_stream": [p["seconds"] for p in per], "steps_per_stream": [p["steps"] for p in per],
            "step_max": [p["step_max"] for p in per],
            "straggler_fraction": statistics.fmean(p["straggler_fraction"] for p in per),
            "allreduce_seconds": sum(p["allreduce_seconds"] for p in per),
            "optimizer_seconds": sum(p["optimizer_seconds"] for p in per),
            "cpu_over_wall": statistics.fmean(p["cpu_over_wall"] for p in per if p["cpu_over_wall"]),
            "loss_first": [p["loss_first"] for p in per], "loss_last": [p["loss_last"] for p in per],
        }
        if args.repeats > 1:
            placements[name]["seconds_runs"] = [p["seconds_runs"] for p in per]
    mine = [n for n in names if n.startswith(MSD_PREFIX)]
    best = min(mine, key=lambda n: placements[n]["seconds_sum"]) if mine else None
    speedup = {f"best_over_{b}": None for b in HEADLINE_BASELINES}
    if best is not None:
        for base in (n for n in names if not n.startswith(MSD_PREFIX)):
            speedup[f"best_over_{base}"] = geomean_ci([s[base]["seconds"] / s[best]["seconds"] for s in streams])
    features = [f for f, _, _ in micro]
    row = {
        "dp": dp, "seq_len": seq_len, "mix": jobs[0]["lengths"], "seeds": [job["seed"] for job in jobs],
        "best": best, "placements": placements, "speedup": speedup,
        "workers": args.workers, "clock": args.clock, "repeats": args.repeats,
        "cost_fit": fit_costs(features, [s for _, s, _ in micro], seq_len),
        "gradient_bytes": results[0][names[0]][0][0]["bytes"] if results[0][names[0]][0] else None,
        "model": model_description(args, jobs[0], parameters),
        "placements_files": [os.path.abspath(job["path"]) for job in jobs], "corpus": args.corpus,
    }
    return row, [(shape, s) for _, s, shape in micro]


def print_row(row):
    print(f"emulated dp {row['dp']}, seq_len {row['seq_len']}, {row['mix']}, seeds {row['seeds']}, "
          f"{row['workers']} rank(s) at a time, {row['clock']} clock")
    width = max(len(n) for n in row["placements"])
    print(f"{'placement':<{width}} {'rows':<6} {'attention':<9} {'tokens':>10} {'seconds':>9} {'straggler':>9}  "
          "per stream (s)")
    for name, p in row["placements"].items():
        per = " ".join(f"{s:.2f}" for s in p["seconds_per_stream"])
        mark = " (best)" if name == row["best"] else ""
        print(f"{name:<{width}} {p['rows']:<6} {p['attention']:<9} {p['tokens']:>10} {p['seconds_sum']:>9.2f} "
              f"{p['straggler_fraction']:>9.3f}  {per}{mark}")
    for key, value in row["speedup"].items():
        if value is not None:
            lo, hi = value["ci95"]
            print(f"{key}: {value['geomean']:.3f}x [{lo:.3f}, {hi:.3f}]")
    fit = row["cost_fit"]
    if fit is not None and fit["a"]:
        print(f"micro-batch fit: a = {fit['a']:.0f} (seq_len / {1 / fit['a_over_seq_len']:.1f}), "
              f"c0 {fit['c0_seconds'] * 1e3:.2f} ms per micro-batch, c3 {fit['c3_seconds_per_group'] * 1e3:.2f} ms "
              f"per segment group: {100 * fit['constant_share']:.1f}% of a typical micro-batch "
              f"({fit['typical_micro_batch_seconds']:.3f} s); R^2 {fit['r_squared']:.3f}, median error "
              f"{100 * fit['median_abs_error']:.1f}%")
    sys.stdout.flush()


# ---------------------------------------------------------------- main (parent)


def prepare_stream(path, args):
    """One placements file read and checked: its job without the tokens."""
    data = load_placements(path)
    available = list(data["placements"])
    names = args.modes.split(",") if args.modes else available
    for name in names:
        if name not in available:
            raise BenchError(f"--placements {path}: no placement {name!r} (it has {', '.join(available)})")
    documents = data["documents"]
    total = sum(documents)
    if "positions" in data and data["positions"] != total:
        raise BenchError(f"--placements {path}: positions {data['positions']} != sum of documents {total}")
    job = {"path": path, "dp": data["dp"], "seq_len": data["seq_len"], "names": names, "placements": {},
           "tokens": {}, "counts": {}, "seed": data.get("seed"), "lengths": data.get("lengths"),
           "truncated": False, "positions": total, "documents": documents, "assignment": {}}
    for name in names:
        placement = dict(data["placements"][name])
        positions = check_placement(name, placement, data, path)
        if args.max_steps is not None and len(placement["steps"]) > args.max_steps:
            placement["steps"] = placement["steps"][:args.max_steps]
            job["truncated"] = True
            positions = sum(p[2] for step in placement["steps"] for mbs in step for seqs in mbs for seq in seqs
                            for p in seq)
        else:
            if positions != total or placement.get("positions", positions) != positions:
                raise BenchError(f"--placements {path}: {name} places {positions} positions, "
                                 f"not the documents' {total}")
            check_coverage(name, placement, documents, path)
        job["placements"][name] = {k: placement[k] for k in ("rows", "attention", "steps")}
        job["tokens"][name] = positions
        job["counts"][name] = [labelled_positions(placement, step) for step in placement["steps"]]
        if args.emulate:
            job["assignment"][name] = assign_ranks(placement, data["seq_len"], args.tiling, args.workers)
    return job


def prepare(args):
    """Reads and checks every input once, before any process starts; the jobs they get."""
    jobs = [prepare_stream(path, args) for path in args.placements]
    first = jobs[0]
    for job in jobs[1:]:
        for key in ("dp", "seq_len", "lengths", "names"):
            if job[key] != first[key]:
                raise BenchError(f"--placements: {job['path']} has {key} {job[key]}, {first['path']} "
                                 f"{first[key]} (the streams of one row must agree)")
    stream, largest = read_corpus(args.corpus, max(1, max(job["positions"] for job in jobs)))
    del largest  # every id is folded into the vocabulary
    stream = stream % args.vocab
    max_position = max([first["seq_len"]] + [longest_row(p) for job in jobs for p in job["placements"].values()])
    for job in jobs:
        job.update(stream=stream, starts=np.concatenate([[0], np.cumsum(job["documents"], dtype=np.int64)[:-1]]),
                   vocab=args.vocab, max_position=max_position)
        del job["documents"]
        if args.device == "cuda":
            if not torch.cuda.is_available():
                raise BenchError("--device cuda: torch sees no CUDA device")
            job["device_name"] = torch.cuda.get_device_name(0)
        else:
            job["device_name"] = "cpu"
    return jobs


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(processes):
    for p in processes:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 10
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()


def supervise(processes, args, what):
    """Waits for the children; 0 when all succeeded, else says why and returns 1 (124: --timeout)."""
    started = time.monotonic()
    for p in processes:
        p.start()
    try:
        while True:
            codes = [p.exitcode for p in processes]
            if all(c == 0 for c in codes):
                return 0
            if any(c not in (None, 0) for c in codes):
                break
            if time.monotonic() - started > args.timeout:
                stop(processes)
                print(f"{PROG}: error: the run took more than --timeout {args.timeout:g} s; stopped the {what}s",
                      file=sys.stderr)
                return 124
            wait([p.sentinel for p in processes if p.exitcode is None], timeout=1)
    except KeyboardInterrupt:
        stop(processes)
        print(f"{PROG}: interrupted; stopped the {what}s", file=sys.stderr)
        return 130
    grace = time.monotonic() + 5  # the others notice the lost peer and exit by themselves
    for p in processes:
        p.join(max(0.0, grace - time.monotonic()))
    codes = [p.exitcode for p in processes]
    stop(processes)
    said = []
    for rank, code in enumerate(codes):
        if code is None:
            said.append(f"{what} {rank} was stopped")
        elif code == LOST_PEERS:
            said.append(f"{what} {rank} lost the other {what}s")
        elif code < 0:
            name = signal.Signals(-code).name
            said.append(f"{what} {rank} was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else ""))
        elif code != 0:
            said.append(f"{what} {rank} failed (exit status {code}, its error is above)")
    print(f"{PROG}: error: " + "; ".join(said), file=sys.stderr)
    return 1


def run_emulation(args, jobs, spawn, port):
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as tmp:
        out_path = os.path.join(tmp, "results.pickle")
        workers = [spawn.Process(target=process_main, args=(w, emulate_worker, args, port, jobs, out_path),
                                 name=f"{PROG}-worker{w}") for w in range(EMULATION_WORKERS)]
        code = supervise(workers, args, "worker")
        if code != 0:
            return code
        with open(out_path, "rb") as f:
            results = pickle.load(f)
    parameters = sum(p.numel() for p in GPT(*model_args(args, jobs[0])).parameters())
    try:
        row, records = summarize_row(jobs, results, args, parameters)
    except BenchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    if args.shapes_out:
        write_shapes(records, args.shapes_out)
    if args.json:
        write_json(args.json, row)
        print(f"{PROG}: wrote {args.json}", file=sys.stderr, flush=True)
    print_row(row)
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_trainer.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--placements", metavar="FILE", nargs="+", help="msd-plan place --json output (--emulate: "
                        "one file per stream of the row, e.g. one per seed)")
    parser.add_argument("--corpus", metavar="PREFIX|GLOB",
                        help="Megatron indexed dataset: PREFIX (PREFIX.idx/.bin) or a quoted glob of .idx files")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    parser.add_argument("--shapes-out", metavar="FILE", help="write the timed micro-batches' shapes here (JSON "
                        "lines; a real run: repeat 0's) and their forward+backward seconds to FILE.times "
                        "(msd-plan calibrate --shapes/--times)")
    parser.add_argument("--emulate", action="store_true", help="emulated data parallelism: every rank's "
                        "micro-batches trained on one pinned core, one rank after another (see above)")
    parser.add_argument("--workers", type=int, choices=(1, 2), default=2, help="--emulate: ranks trained at the "
                        "same time, one per core (default %(default)s)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="--emulate: a micro-batch's "
                        "seconds by the wall clock (default) or the process's CPU time")
    parser.add_argument("--repeats", type=int, default=None, metavar="N", help="runs of every placement (default: "
                        "3, with --emulate 1)")
    parser.add_argument("--modes", metavar="A,B", help="the placements to run, in this order (default: all in the "
                        "file)")
    parser.add_argument("--max-steps", type=int, metavar="N", help="train only each placement's first N steps "
                        "(a quick check: the placements' tokens then differ, the JSON says truncated)")
    parser.add_argument("--width", type=int, default=32, metavar="N", help="model width (default %(default)s)")
    parser.add_argument("--layers", type=int, default=1, metavar="N", help="transformer blocks (default %(default)s)")
    parser.add_argument("--heads", type=int, default=1, metavar="N", help="attention heads (default %(default)s)")
    parser.add_argument("--head-dim", type=int, default=16, metavar="N",
                        help="dimensions per attention head (default %(default)s)")
    parser.add_argument("--vocab", type=int, default=256, metavar="N",
                        help="vocabulary size; corpus ids are folded into it, id mod N (default %(default)s)")
    parser.add_argument("--block", type=int, default=512, metavar="N", help="attention: a longer segment is "
                        "computed in query blocks of N rows (default %(default)s)")
    parser.add_argument("--pad", type=int, default=64, metavar="N", help="attention: a shorter segment is padded "
                        "to a multiple of N, and batched with the same padded lengths (default %(default)s)")
    parser.add_argument("--precision", choices=("bf16", "fp32"), default="bf16",
                        help="matrix products in bfloat16 (default) or everything in float32")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, metavar="N", help="model initialisation seed, the same "
                        "for every placement and repeat (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="torch threads per rank of a real run (default %(default)s; --emulate: 1)")
    parser.add_argument("--pin", action="store_true", help="a real run on CPU: pin rank r to core r mod the cores")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="a real run: cpu (default), or "
                        "cuda (rank r on GPU r mod the GPUs; nccl when every rank has its own)")
    parser.add_argument("--warmup-steps", type=int, default=1, metavar="N",
                        help="untimed steps of the first placement before the timed runs (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600, metavar="S",
                        help="seconds the whole run may take; then the processes are stopped, exit status 124 "
                        "(default %(default)s)")
    parser.add_argument("--collective-timeout", type=float, default=300, metavar="S",
                        help="seconds init_process_group and a collective may wait for the others "
                        "(default %(default)s)")
    parser.add_argument("--self-check", action="store_true", help="check the per-document attention and exit")
    parser.add_argument("--inject-failure", metavar="RANK:PHASE", help=argparse.SUPPRESS)  # build|train, for tests
    args = parser.parse_args(argv)
    if not args.self_check:
        for option in ("placements", "corpus"):
            if getattr(args, option) is None:
                parser.error(f"--{option.replace('_', '-')} is required (or --self-check)")
        if len(args.placements) > 1 and not args.emulate:
            parser.error("several --placements files: only with --emulate (a real run times one stream)")
    if args.repeats is None:
        args.repeats = 1 if args.emulate else 3
    if args.emulate and (args.device != "cpu" or args.max_steps is not None):
        parser.error("--emulate runs on CPU and trains whole streams (no --device cuda, no --max-steps)")
    for name in ("repeats", "threads", "max_steps", "width", "layers", "heads", "head_dim", "vocab", "pad", "block"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    try:
        args.tiling = Tiling(args.pad, args.block)
    except BenchError as e:
        parser.error(str(e))
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.self_check:
        _self_check()
        return 0
    try:
        jobs = prepare(args)
    except BenchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    os.environ["OMP_NUM_THREADS"] = "1" if args.emulate else str(args.threads)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # oneDNN compiles a kernel per matmul shape; keep them all (varlen rows and segments vary in shape).
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16384")
    spawn, port = mp.get_context("spawn"), free_port()
    if args.emulate:
        return run_emulation(args, jobs, spawn, port)
    job = jobs[0]
    ranks = [spawn.Process(target=process_main, args=(rank, run_rank, args, port, job), name=f"{PROG}-rank{rank}")
             for rank in range(job["dp"])]
    return supervise(ranks, args, "rank")


if __name__ == "__main__":
    sys.exit(main())
