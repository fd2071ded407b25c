"""Times a real PyTorch trainer on the same token stream under several data placements.

    /usr/bin/python3 examples/bench_trainer.py --placements PLACEMENTS.json \\
        --corpus 'data/demo/corpus/*.idx' [--json FILE] [--shapes-out FILE] \\
        [--repeats 3] [--width 64 --layers 2 --heads 4] [--max-steps N] [--device cpu|cuda]
    /usr/bin/python3 examples/bench_trainer.py --self-check

(tools/bench-trainer.sh makes the placements with `msd-plan place --json`,
runs this, and fits the planner's cost model to the times it records.)

PLACEMENTS.json (msd-plan place --json) places one stream of documents
(`documents`: tokens of each, in stream order) in several ways
(`placements`: megatron, megatron_varlen, msd_tokens, msd_greedy): steps of
`dp` ranks of micro-batches of sequences of pieces [doc, begin, length]. The
documents' tokens are real: document d is the next documents[d] tokens of the
--corpus (a Megatron indexed dataset, PREFIX.idx/.bin or a glob of .idx files,
concatenated and repeated cyclically if shorter than the stream).

A small GPT (token and learned position embeddings, positions counted within
each piece; pre-LN attention + MLP blocks; tied output) is trained on it,
data-parallel over `dp` processes (gloo, gradients all-reduced every step,
--threads torch threads each). Attention is per document piece, as
FlashAttention's varlen kernels do it: causal attention over each piece's L
positions only (L x L scores; equal lengths batched), so it costs sum(L^2), and
padding positions attend to nothing but still go through the linear layers
and the output layer. "fixed" placements compute every sequence as a row of
seq_len positions (the tail is padding); "varlen" ones compute a micro-batch as
one row of its pieces. Loss: next-token cross-entropy within each piece (a
piece's last position has no label), summed, over the step's labelled
positions of all ranks.

Every micro-batch of every placement is built as tensors first, then, per
repeat (the placements' order reversed on odd repeats), each placement trains
all its steps from the same initial model and AdamW state. Measured: every
micro-batch's forward+backward seconds, every rank's compute seconds per step
(the sum of its micro-batches) and every step's wall seconds (with the
all-reduce and the optimizer step). Reported per placement: tokens trained,
the wall seconds of each repeat and their median, tokens/s, the straggler
fraction (mean over steps of (max - mean) rank compute / step wall), and the
loss of the first and last step; and the speedups of msd_greedy and
msd_tokens over the baselines (the same tokens, so median time ratios).
--shapes-out writes repeat 0's micro-batch shapes (JSON lines) and seconds
(FILE.times), the input of `msd-plan calibrate --shapes/--times`.
"""

import argparse
import datetime
import glob
import json
import math
import os
import signal
import socket
import statistics
import sys
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
BASELINES = ("megatron", "megatron_docmask", "megatron_dp_balanced")
RECORD_ONLY = ("megatron_docmask", "msd_greedy")
# Scores of a batch of equal-length segments: at most this many L*L elements
# per head (one 4096 segment, or e.g. 16 of 512) in one matmul.
GROUP_ELEMENTS = 1 << 24
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
    steps = placement.get("steps")
    if not isinstance(steps, list):
        raise BenchError(f"{where}: no steps list")
    positions = 0
    for t, step in enumerate(steps):
        if not isinstance(step, list) or len(step) != dp:
            raise BenchError(f"{where}: step {t} has {len(step) if isinstance(step, list) else 'no'} ranks, dp is {dp}")
        for rank, micro_batches in enumerate(step):
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


class MicroBatch:
    """One micro-batch as tensors, its attention segments grouped by length."""

    def __init__(self, rows, width, seq_len, tokens_of, group_elements=GROUP_ELEMENTS):
        self.rows, self.length = len(rows), width
        count = self.rows * width
        tokens = np.zeros(count, np.int64)
        positions = np.zeros(count, np.int64)
        labels = np.full(count, -100, np.int64)
        segments = []  # (length, flat start)
        for r, row in enumerate(rows):
            offset = r * width
            for doc, begin, length in row:
                ids = tokens_of(doc, begin, length)
                tokens[offset:offset + length] = ids
                positions[offset:offset + length] = np.arange(length)
                labels[offset:offset + length - 1] = ids[1:]
                segments.append((length, offset))
                offset += length
        segments.sort(key=lambda s: (-s[0], s[1]))
        self.groups, index = [], []
        i = 0
        while i < len(segments):
            length = segments[i][0]
            j = i
            while j < len(segments) and segments[j][0] == length:
                j += 1
            per_chunk = max(1, group_elements // (length * length))
            for c in range(i, j, per_chunk):
                chunk = segments[c:min(j, c + per_chunk)]
                self.groups.append((length, len(chunk)))
                index.extend(np.arange(start, start + length) for _, start in chunk)
            i = j
        shape = (self.rows, width)
        self.tokens = torch.from_numpy(tokens).view(shape)
        self.positions = torch.from_numpy(positions).view(shape)
        self.labels = torch.from_numpy(labels).view(shape)
        self.index = torch.from_numpy(np.concatenate(index) if index else np.zeros(0, np.int64))
        self.used = int(self.index.numel())
        self.labelled = int((labels != -100).sum())

    def to(self, device):
        for name in ("tokens", "positions", "labels", "index"):
            setattr(self, name, getattr(self, name).to(device))
        return self


def micro_batch_rows(sequences, rows):
    """The rows a micro-batch computes: one per sequence (fixed) or one of all its pieces (varlen)."""
    if rows == "varlen":
        pieces = [p for s in sequences for p in s]
        return [pieces] if pieces else []
    return sequences if any(sequences) else []


def micro_batch_shape(sequences, rows, seq_len):
    """The shape msd-plan calibrate reads, or None for an empty micro-batch."""
    computed = micro_batch_rows(sequences, rows)
    if not computed:
        return None
    out = []
    for row in computed:
        lengths = [p[2] for p in row]
        out.append({"segments": lengths, "patches": [0] * len(lengths),
                    "padding": 0 if rows == "varlen" else seq_len - sum(lengths)})
    return {"sequences": out}


def build_micro_batch(sequences, rows, seq_len, tokens_of):
    computed = micro_batch_rows(sequences, rows)
    if not computed:
        return None
    width = sum(p[2] for p in computed[0]) if rows == "varlen" else seq_len
    return MicroBatch(computed, width, seq_len, tokens_of)


# ---------------------------------------------------------------- model


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        if width % heads:
            raise BenchError(f"--width {width} is not a multiple of --heads {heads}")
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def attention(self, h, mb, future):
        """Causal attention inside each segment of `mb` only; zero at padding."""
        rows, length, width = h.shape
        heads = self.heads
        head = width // heads
        out = h.new_zeros(rows * length, width)
        if mb.used == 0:
            return out.view(rows, length, width)
        qkv = self.qkv(h).view(rows * length, 3, heads, head).index_select(0, mb.index)
        scale = 1.0 / math.sqrt(head)
        outs, offset = [], 0
        for size, count in mb.groups:
            chunk = qkv[offset:offset + size * count].view(count, size, 3, heads, head)
            offset += size * count
            q, k, v = (chunk[:, :, i].transpose(1, 2) for i in range(3))  # [count, heads, size, head]
            scores = torch.matmul(q * scale, k.transpose(-2, -1))  # [count, heads, size, size]
            scores = scores.masked_fill(future[:size, :size], float("-inf"))
            o = torch.matmul(scores.softmax(-1), v)
            outs.append(o.transpose(1, 2).reshape(size * count, width))
        return out.index_copy(0, mb.index, torch.cat(outs)).view(rows, length, width)

    def forward(self, x, mb, future):
        x = x + self.proj(self.attention(self.norm1(x), mb, future))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab, width, layers, heads, seq_len):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Embedding(seq_len, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        for embedding in (self.embed, self.position):
            nn.init.normal_(embedding.weight, std=0.02)
        # future[i, j]: j after i. A top-left [L, L] slice is the causal mask of L positions.
        self.register_buffer("future", torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1), persistent=False)

    def logits(self, mb):
        x = self.embed(mb.tokens) + self.position(mb.positions)
        for block in self.blocks:
            x = block(x, mb, self.future)
        return self.norm(x) @ self.embed.weight.t()  # every position, padding too

    def forward(self, mb):
        """Summed next-token cross-entropy over the micro-batch's labelled positions."""
        logits = self.logits(mb)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), mb.labels.view(-1), ignore_index=-100,
                               reduction="sum")


# ---------------------------------------------------------------- self-check


def _dense_attention(block, h, segment):
    """Reference: one [T, T] block-diagonal causal mask per row (segment ids, -1 padding)."""
    rows, length, width = h.shape
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    heads, head = block.heads, width // block.heads
    q, k, v = block.qkv(h).view(rows, length, 3, heads, head).unbind(2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(head)
    pad = segment < 0
    same = (segment[:, :, None] == segment[:, None, :]) & ~pad[:, :, None]
    allowed = same & ~future | torch.eye(length, dtype=torch.bool) & pad[:, :, None]
    p = scores.masked_fill(~allowed[:, None], float("-inf")).softmax(-1)
    o = (p @ v).transpose(1, 2).reshape(rows, length, width)
    return o.masked_fill(pad[:, :, None], 0.0)


def _self_check():
    """Per-segment attention equals dense block-diagonal causal attention; the packed model's
    loss and gradients equal those of every piece computed alone. Raises AssertionError."""
    torch.manual_seed(0)
    seq_len, width, heads, vocab = 24, 16, 2, 50
    rng = np.random.default_rng(0)
    documents = [5, 7, 1, 3, 24, 10, 10, 4, 30, 2]
    stream = rng.integers(0, vocab, sum(documents))
    starts = np.concatenate([[0], np.cumsum(documents)[:-1]])

    def tokens_of(doc, begin, length):
        return stream[starts[doc] + begin:starts[doc] + begin + length]

    # Rows with several segments and padding, a full row, equal lengths (batched together), a split doc.
    sequences = [[[0, 0, 5], [1, 0, 7], [2, 0, 1], [3, 0, 3]], [[4, 0, 24]], [[5, 0, 10], [6, 0, 10], [7, 0, 4]],
                 [[8, 0, 20]], [[8, 20, 10], [9, 0, 2]]]
    model = GPT(vocab, width, 2, heads, seq_len).double()
    checked = 0
    for rows in ("fixed", "varlen"):
        for group_elements in (GROUP_ELEMENTS, 100):  # batched equal lengths, and one segment per matmul
            computed = micro_batch_rows(sequences, rows)
            length = sum(p[2] for p in computed[0]) if rows == "varlen" else seq_len
            mb = MicroBatch(computed, length, seq_len, tokens_of, group_elements)
            assert mb.used == sum(p[2] for s in sequences for p in s)
            assert mb.labelled == sum(p[2] - 1 for s in sequences for p in s)
            segment = torch.full((mb.rows, length), -1, dtype=torch.int64)
            for r, row in enumerate(computed):
                offset = 0
                for i, (_, _, n) in enumerate(row):
                    segment[r, offset:offset + n] = i
                    offset += n
            block = model.blocks[0]
            h = torch.randn(mb.rows, length, width, dtype=torch.float64, requires_grad=True)
            mine = block.attention(h, mb, model.future)
            dense = _dense_attention(block, h, segment)
            assert torch.allclose(mine, dense, atol=1e-12), f"{rows}: attention differs from the dense mask"
            assert bool((mine[segment < 0] == 0).all()), "padding attends"
            weight = torch.randn_like(mine)
            g_mine = torch.autograd.grad((mine * weight).sum(), [h, block.qkv.weight])
            g_dense = torch.autograd.grad((dense * weight).sum(), [h, block.qkv.weight])
            for a, b in zip(g_mine, g_dense):
                assert torch.allclose(a, b, atol=1e-12), f"{rows}: attention gradients differ"

            # The packed model against every piece alone (its own row, no padding, no neighbours).
            model.zero_grad()
            packed = model(mb)
            packed.backward()
            g_packed = [p.grad.clone() for p in model.parameters()]
            model.zero_grad()
            alone = 0.0
            for piece in (p for s in sequences for p in s):
                loss = model(MicroBatch([[piece]], piece[2], seq_len, tokens_of))
                loss.backward()
                alone += loss.item()
            assert math.isclose(packed.item(), alone, rel_tol=1e-12), f"{rows}: loss {packed.item()} != {alone}"
            for p, g in zip(model.parameters(), g_packed):
                assert torch.allclose(p.grad, g, atol=1e-12), f"{rows}: parameter gradients differ"
            checked += 1
    print(f"{PROG}: self-check passed ({checked} micro-batches: per-segment attention = dense block-diagonal "
          "causal mask, packed loss and gradients = every piece alone)")


# ---------------------------------------------------------------- training (one rank)


def now(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def train_placement(model_args, steps, counts, device, args):
    """Trains `steps` (this rank's micro-batches per step) from the seed's model; returns the timings."""
    torch.manual_seed(args.seed)
    model = GPT(*model_args).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    params = list(model.parameters())
    mb_seconds, step_ends, loss_shares = [], [], []
    dist.barrier()
    start = now(device)
    for t, micro_batches in enumerate(steps):
        optimizer.zero_grad(set_to_none=True)
        seconds, share = [], 0.0
        for mb in micro_batches:
            if mb is None:
                seconds.append(0.0)
                continue
            begin = now(device)
            loss = model(mb) / counts[t]
            loss.backward()
            seconds.append(now(device) - begin)
            share += loss.item()
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
        dist.all_reduce(flat)
        offset = 0
        for p in params:
            p.grad = flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        optimizer.step()
        step_ends.append(now(device) - start)
        mb_seconds.append(seconds)
        loss_shares.append(share)
    dist.barrier()
    total = now(device) - start
    return {"seconds": total, "mb_seconds": mb_seconds, "step_ends": step_ends, "loss_shares": loss_shares}


def inject(args, rank, phase):
    if args.inject_failure == f"{rank}:{phase}":
        raise RuntimeError(f"--inject-failure {args.inject_failure}: rank {rank} fails in {phase}")


def rank_main(rank, args, port, job):
    """One data-parallel rank (a torch.multiprocessing child). Exit status 1: it failed;
    LOST_PEERS: a collective broke or timed out because another rank is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the ranks
    try:
        run_rank(rank, args, port, job)
    except BenchError as e:
        print(f"{PROG}: rank {rank}: error: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - every failure must end the rank with a status the parent reads
        text = str(e)
        first = text.strip().splitlines()[0] if text.strip() else type(e).__name__
        if isinstance(e, RuntimeError) and any(s in text for s in PEER_ERRORS):
            print(f"{PROG}: rank {rank}: lost the other ranks: {first}", file=sys.stderr, flush=True)
            sys.exit(LOST_PEERS)
        traceback.print_exc()
        print(f"{PROG}: rank {rank}: error: {type(e).__name__}: {first}", file=sys.stderr, flush=True)
        sys.exit(1)


def run_rank(rank, args, port, job):
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    world, seq_len, names = job["dp"], job["seq_len"], job["names"]
    if args.device == "cuda":
        count = torch.cuda.device_count()
        device = torch.device("cuda", rank % count)
        torch.cuda.set_device(device)
        backend = "nccl" if count >= world else "gloo"
    else:
        device, backend = torch.device("cpu"), "gloo"

    stream, starts = job["stream"], job["starts"]

    def tokens_of(doc, begin, length):
        first = (starts[doc] + begin) % stream.size
        if first + length <= stream.size:
            return stream[first:first + length]
        return stream[np.arange(first, first + length) % stream.size]

    inject(args, rank, "build")
    built = time.perf_counter()
    mine = {}  # name -> [step][micro-batch] MicroBatch or None, this rank's
    for name in names:
        placement = job["placements"][name]
        mine[name] = [[None if mb is None else mb.to(device) for mb in
                       (build_micro_batch(seqs, placement["rows"], seq_len, tokens_of) for seqs in step[rank])]
                      for step in placement["steps"]]
    built = time.perf_counter() - built

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, init_method="env://", world_size=world, rank=rank,
                            timeout=datetime.timedelta(seconds=args.collective_timeout))
    try:
        model_args = (job["vocab"], args.width, args.layers, args.heads, seq_len)
        if rank == 0:
            print(f"{PROG}: {sum(mb is not None for n in names for s in mine[n] for mb in s)} micro-batches of "
                  f"{len(names)} placements built on rank 0 in {built:.1f} s; training on {job['device_name']}, "
                  f"{world} ranks x {args.threads} thread(s)", file=sys.stderr, flush=True)
        if args.warmup_steps > 0:  # untimed: first-touch allocations, lazy initialisation
            first = names[0]
            train_placement(model_args, mine[first][:args.warmup_steps], job["counts"][first][:args.warmup_steps],
                            device, args)
        inject(args, rank, "train")
        results = {name: [] for name in names}
        for repeat in range(args.repeats):
            for name in (names if repeat % 2 == 0 else names[::-1]):
                run = train_placement(model_args, mine[name], job["counts"][name], device, args)
                results[name].append(run)
                if rank == 0:
                    print(f"{PROG}: {name} repeat {repeat + 1}/{args.repeats}: {run['seconds']:.2f} s "
                          f"({len(mine[name])} steps)", file=sys.stderr, flush=True)
        gathered = [None] * world if rank == 0 else None
        dist.gather_object(results, gathered, dst=0)
        if rank == 0:
            report(gathered, job, args, sum(p.numel() for p in GPT(*model_args).parameters()))
        dist.barrier()
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------- report (rank 0)


def write_shapes(gathered, job, path):
    """Repeat 0's non-empty micro-batches: shapes as JSON lines to `path`, seconds to path.times."""
    lines = 0
    with open(path, "w") as shapes, open(path + ".times", "w") as times:
        for name in job["names"]:  # repeat 0 ran them in this order
            placement = job["placements"][name]
            for t, step in enumerate(placement["steps"]):
                for rank, micro_batches in enumerate(step):
                    for m, seqs in enumerate(micro_batches):
                        shape = micro_batch_shape(seqs, placement["rows"], job["seq_len"])
                        if shape is None:
                            continue
                        shapes.write(json.dumps(shape, separators=(",", ":")) + "\n")
                        times.write(f"{gathered[rank][name][0]['mb_seconds'][t][m]:.9g}\n")
                        lines += 1
    print(f"{PROG}: {lines} micro-batch shapes to {path}, their seconds to {path}.times", file=sys.stderr, flush=True)


def report(gathered, job, args, parameters):
    names, seq_len = job["names"], job["seq_len"]
    if args.shapes_out:
        write_shapes(gathered, job, args.shapes_out)
    if args.record_only:  # no statistics: the shapes and times are the point
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"record_only": True, "seq_len": seq_len, "dp": job["dp"], "seed": job["seed"],
                           "placements": {n: {"rows": job["placements"][n]["rows"], "tokens": job["tokens"][n],
                                              "seconds_runs": [gathered[0][n][0]["seconds"]]} for n in names}}, f)
                f.write("\n")
        for name in names:
            print(f"{name}: {job['tokens'][name]} tokens in {gathered[0][name][0]['seconds']:.2f} s (recorded)")
        return
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
        lengths = [p[2] for step in placement["steps"] for mbs in step for seqs in mbs for seq in seqs for p in seq]
        padding = 0
        if placement["rows"] == "fixed":
            padding = sum(seq_len - sum(p[2] for p in seq) for step in placement["steps"] for mbs in step
                          for seqs in mbs if any(seqs) for seq in seqs)
        placements[name] = {
            "rows": placement["rows"], "steps": len(placement["steps"]), "tokens": job["tokens"][name],
            "seconds_runs": seconds_runs, "seconds_median": median,
            "tokens_per_s": job["tokens"][name] / median if median > 0 else None,
            "straggler_fraction": statistics.fmean(fractions) if fractions else 0.0,
            "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
            "pieces": len(lengths), "padding_positions": padding, "sum_l2": sum(n * n for n in lengths),
        }

    def ratio(baseline, msd):
        if baseline in placements and msd in placements and not job["truncated"]:
            return placements[baseline]["seconds_median"] / placements[msd]["seconds_median"]
        return None

    # Row shapes: megatron, msd_tokens, msd_greedy fixed; megatron_varlen,
    # msd_greedy_varlen varlen. msd_greedy_over_megatron_varlen crosses them.
    speedup = {"msd_greedy_over_megatron": ratio("megatron", "msd_greedy"),
               "msd_greedy_over_megatron_varlen": ratio("megatron_varlen", "msd_greedy"),
               "msd_tokens_over_megatron": ratio("megatron", "msd_tokens"),
               "msd_greedy_varlen_over_megatron_varlen": ratio("megatron_varlen", "msd_greedy_varlen"),
               "msd_greedy_varlen_over_megatron": ratio("megatron", "msd_greedy_varlen"),
               "every_msd_greedy_run_beats_every_megatron_run": None}
    if "megatron" in placements and "msd_greedy" in placements and not job["truncated"]:
        speedup["every_msd_greedy_run_beats_every_megatron_run"] = \
            max(placements["msd_greedy"]["seconds_runs"]) < min(placements["megatron"]["seconds_runs"])

    common = {job["tokens"][n] for n in names}
    out = {
        "placements": placements, "speedup": speedup, "dp": job["dp"], "seq_len": seq_len,
        "repeats": args.repeats, "threads_per_rank": args.threads,
        "model": {"width": args.width, "layers": args.layers, "heads": args.heads, "vocab": job["vocab"],
                  "parameters": parameters, "seed": args.seed, "lr": args.lr},
        "device": job["device_name"], "tokens": common.pop() if len(common) == 1 else None,
        "seed": job["seed"], "lengths": job["lengths"], "truncated": job["truncated"],
        "record_only": args.record_only, "warmup_steps": args.warmup_steps,
        "placements_file": os.path.abspath(args.placements), "corpus": args.corpus,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")

    print(f"{'placement':<16} {'rows':<6} {'tokens':>9} {'median s':>9} {'tokens/s':>9} {'straggler':>9}  runs (s)")
    for name, p in placements.items():
        runs = " ".join(f"{s:.2f}" for s in p["seconds_runs"])
        tps = f"{p['tokens_per_s']:.0f}" if p["tokens_per_s"] else "-"
        print(f"{name:<16} {p['rows']:<6} {p['tokens']:>9} {p['seconds_median']:>9.2f} {tps:>9} "
              f"{p['straggler_fraction']:>9.3f}  {runs}")
    shown = [f"{k.replace('_over_', ' over ')} {v:.3f}x" for k, v in speedup.items() if isinstance(v, float)]
    if shown:
        beats = speedup["every_msd_greedy_run_beats_every_megatron_run"]
        print("speedup: " + ", ".join(shown) +
              ("" if beats is None else f"; every msd_greedy run beats every megatron run: {'yes' if beats else 'no'}"))
    elif job["truncated"]:
        print("speedup: not computed (--max-steps truncated the placements: their tokens differ)")
    if args.json:
        print(f"{PROG}: wrote {args.json}", file=sys.stderr, flush=True)
    sys.stdout.flush()


# ---------------------------------------------------------------- main (parent)


def prepare(args):
    """Reads and checks the inputs once, before any rank starts; the job every rank gets."""
    data = load_placements(args.placements)
    available = list(data["placements"])
    if args.modes:
        names = args.modes.split(",")
    elif args.record_only:
        names = [n for n in RECORD_ONLY if n in available]
    else:
        names = available
    for name in names:
        if name not in available:
            raise BenchError(f"--placements {args.placements}: no placement {name!r} (it has {', '.join(available)})")
    if not names:
        raise BenchError(f"--placements {args.placements}: none of {', '.join(RECORD_ONLY)} for --record-only")
    documents = data["documents"]
    total = sum(documents)
    if "positions" in data and data["positions"] != total:
        raise BenchError(f"--placements {args.placements}: positions {data['positions']} != sum of documents {total}")
    job = {"dp": data["dp"], "seq_len": data["seq_len"], "names": names, "placements": {}, "tokens": {},
           "counts": {}, "seed": data.get("seed"), "lengths": data.get("lengths"), "truncated": False}
    for name in names:
        placement = dict(data["placements"][name])
        positions = check_placement(name, placement, data, args.placements)
        if args.max_steps is not None and len(placement["steps"]) > args.max_steps:
            placement["steps"] = placement["steps"][:args.max_steps]
            job["truncated"] = True
            positions = sum(p[2] for step in placement["steps"] for mbs in step for seqs in mbs for seq in seqs
                            for p in seq)
        else:
            if positions != total or placement.get("positions", positions) != positions:
                raise BenchError(f"--placements {args.placements}: {name} places {positions} positions, "
                                 f"not the documents' {total}")
            check_coverage(name, placement, documents, args.placements)
        job["placements"][name] = placement
        job["tokens"][name] = positions
        # Labelled positions of each step over all ranks: the loss's divisor.
        job["counts"][name] = [max(1, sum(p[2] - 1 for mbs in step for seqs in mbs for seq in seqs for p in seq))
                               for step in placement["steps"]]
    job["placements"] = {n: {"rows": p["rows"], "steps": p["steps"]} for n, p in job["placements"].items()}
    stream, largest = read_corpus(args.corpus, max(1, total))
    vocab = args.vocab or (largest + 1 + 127) // 128 * 128
    if largest >= vocab:
        raise BenchError(f"--corpus {args.corpus}: token id {largest} is not below --vocab {vocab}")
    job.update(stream=stream, starts=np.concatenate([[0], np.cumsum(documents, dtype=np.int64)[:-1]]),
               vocab=vocab)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            raise BenchError("--device cuda: torch sees no CUDA device")
        job["device_name"] = torch.cuda.get_device_name(0)
    else:
        job["device_name"] = "cpu"
    return job


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


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench_trainer.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--placements", metavar="FILE", help="msd-plan place --json output")
    parser.add_argument("--corpus", metavar="PREFIX|GLOB",
                        help="Megatron indexed dataset: PREFIX (PREFIX.idx/.bin) or a quoted glob of .idx files")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    parser.add_argument("--shapes-out", metavar="FILE", help="write repeat 0's micro-batch shapes here (JSON lines) "
                        "and their forward+backward seconds to FILE.times (msd-plan calibrate --shapes/--times)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N",
                        help="runs of every placement (default %(default)s; at least 3 for real figures)")
    parser.add_argument("--modes", metavar="A,B", help="the placements to run, in this order (default: all in the "
                        "file; with --record-only: megatron,msd_greedy)")
    parser.add_argument("--record-only", action="store_true", help="only record shapes and times: one repeat of "
                        "megatron and msd_greedy, for --shapes-out")
    parser.add_argument("--max-steps", type=int, metavar="N", help="train only each placement's first N steps "
                        "(a quick check: the placements' tokens then differ, the JSON says truncated)")
    parser.add_argument("--width", type=int, default=64, metavar="N", help="model width (default %(default)s)")
    parser.add_argument("--layers", type=int, default=2, metavar="N", help="transformer blocks (default %(default)s)")
    parser.add_argument("--heads", type=int, default=4, metavar="N", help="attention heads (default %(default)s)")
    parser.add_argument("--vocab", type=int, default=0, metavar="N",
                        help="vocabulary size (default: the corpus's largest id + 1, rounded up to 128)")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, metavar="N", help="model initialisation seed, the same "
                        "for every placement and repeat (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="torch threads per rank (default %(default)s)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default), or cuda (rank r "
                        "on GPU r mod the GPUs; nccl when every rank has its own)")
    parser.add_argument("--warmup-steps", type=int, default=1, metavar="N",
                        help="untimed steps of the first placement before the timed runs (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600, metavar="S",
                        help="seconds the whole run may take; then the ranks are stopped, exit status 124 "
                        "(default %(default)s)")
    parser.add_argument("--collective-timeout", type=float, default=300, metavar="S",
                        help="seconds init_process_group and a collective may wait for the other ranks "
                        "(default %(default)s)")
    parser.add_argument("--self-check", action="store_true", help="check the per-document attention and exit")
    parser.add_argument("--inject-failure", metavar="RANK:PHASE", help=argparse.SUPPRESS)  # build|train, for tests
    args = parser.parse_args(argv)
    if not args.self_check:
        for option in ("placements", "corpus"):
            if getattr(args, option) is None:
                parser.error(f"--{option.replace('_', '-')} is required (or --self-check)")
    if args.record_only:
        args.repeats = 1
    if args.repeats < 1 or args.threads < 1 or (args.max_steps is not None and args.max_steps < 1):
        parser.error("--repeats, --threads and --max-steps must be at least 1")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.self_check:
        _self_check()
        return 0
    try:
        job = prepare(args)
    except BenchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    started = time.monotonic()
    spawn, port = mp.get_context("spawn"), free_port()
    processes = [spawn.Process(target=rank_main, args=(rank, args, port, job), name=f"{PROG}-rank{rank}")
                 for rank in range(job["dp"])]
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
                print(f"{PROG}: error: the run took more than --timeout {args.timeout:g} s; stopped the ranks",
                      file=sys.stderr)
                return 124
            wait([p.sentinel for p in processes if p.exitcode is None], timeout=1)
    except KeyboardInterrupt:
        stop(processes)
        print(f"{PROG}: interrupted; stopped the ranks", file=sys.stderr)
        return 130
    grace = time.monotonic() + 5  # the others notice the lost peer and exit by themselves
    for p in processes:
        p.join(max(0.0, grace - time.monotonic()))
    codes = [p.exitcode for p in processes]
    stop(processes)
    said = []
    for rank, code in enumerate(codes):
        if code is None:
            said.append(f"rank {rank} was stopped")
        elif code == LOST_PEERS:
            said.append(f"rank {rank} lost the other ranks")
        elif code < 0:
            name = signal.Signals(-code).name
            said.append(f"rank {rank} was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else ""))
        elif code != 0:
            said.append(f"rank {rank} failed (exit status {code}, its error is above)")
    print(f"{PROG}: error: " + "; ".join(said), file=sys.stderr)
    return 1

if __name__ == "__main__":
    sys.exit(main())
