"""A small GPT trained on msd's batches, on CPU, data-parallel over MPI.

    mpirun -n $(msd-run --config configs/train-demo.ini --print-world-size) \\
        python3 -m mpi4py examples/train_gpt.py --config configs/train-demo.ini [--steps N] [--summary-json FILE]

(tools/train-demo.sh builds, makes the data and runs this.) Every rank runs
this script: msd makes one rank the planner and some loaders, which serve;
the client ranks train. Packed sequences are trained with document masking:
a position attends only to earlier positions of its own document piece
(segments from cu_seqlens), with learned position embeddings indexed by the
piece-relative positions msd gives. Gradients are averaged over job.dp with
mpi4py, over the step's labelled positions msd counts for the whole step
(batch.global_loss_tokens), so ranks holding different token counts
(job.micro_batch_count = variable) weigh each token alike. Options other than those below are msd options (--steps N,
--job.seq_len=..., --checkpoint.dir=...). --summary-json writes msd's
summary plus loss_first, loss_last and the loss of every step.
"""

import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from mpi4py import MPI

import msd


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, mask):
        rows, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
        shape = (rows, length, self.heads, width // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(width // self.heads)
        scores = scores.masked_fill(~mask[:, None], float("-inf"))
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(rows, length, width)
        x = x + self.proj(attended)
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab, width, layers, heads, max_position):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Embedding(max_position, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        for embedding in (self.embed, self.position):
            nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's: small logits from the tied output at the start

    def forward(self, tokens, positions, mask):
        x = self.embed(tokens) + self.position(positions)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x) @ self.embed.weight.t()  # tied output embedding


def document_mask(cu_seqlens, rows, length):
    """[rows, length, length] bool: causal attention inside each segment."""
    starts = torch.zeros(rows * length, dtype=torch.int64)
    starts[cu_seqlens[1:-1].long()] = 1
    segment = starts.cumsum(0).view(rows, length)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    return (segment[:, :, None] == segment[:, None, :]) & causal


def step_loss(model, mb):
    """Mean loss over the micro-batch's counted positions (and their count)."""
    mask = document_mask(mb.cu_seqlens, mb.sequences, mb.seq_len)
    logits = model(mb.tokens.long(), mb.positions.long(), mask)
    losses = F.cross_entropy(logits.flatten(0, 1), mb.labels.long().flatten(), ignore_index=-100, reduction="none")
    weights = mb.loss_mask.flatten().float()
    return (losses * weights).sum(), weights.sum()


def wait(request):
    """Completes an MPI request without spinning a core."""
    while not request.Test():
        time.sleep(0.0005)


def allreduce_gradients(model, loss_sum, counted, dp, global_tokens):
    """Sums gradients, loss and counted positions over dp; returns the
    step's mean loss. Gradients become the mean over the step's counted
    positions: msd's global_loss_tokens when the batch carries it (every
    rank divides by the same count, whatever its own share, so a rank with
    more tokens weighs more), else the counts summed here."""
    params = [p for p in model.parameters() if p.grad is not None]
    flat = np.concatenate([p.grad.numpy().ravel() for p in params] + [np.array([loss_sum, counted], np.float32)])
    total = np.empty_like(flat)
    wait(dp.Iallreduce(flat, total, op=MPI.SUM))
    counted_all = float(global_tokens) if global_tokens else max(float(total[-1]), 1.0)
    if global_tokens and abs(float(total[-1]) - global_tokens) > 1e-6 * global_tokens:
        raise RuntimeError(f"the ranks' loss positions sum to {total[-1]:.0f}, the batch says {global_tokens}")
    offset = 0
    for p in params:
        size = p.grad.numel()
        p.grad.copy_(torch.from_numpy(total[offset:offset + size]).view_as(p.grad) / counted_all)
        offset += size
    return float(total[-2]) / counted_all


def train(job, args):
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = GPT(args.vocab, args.width, args.layers, args.heads, args.max_position)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    dp, losses = job.dp, []
    leader = job.client_index == 0
    start = time.perf_counter()
    for batch in job.batches():
        optimizer.zero_grad()
        loss_sum, counted = 0.0, 0.0
        for mb in batch.micro_batches:
            total, count = step_loss(model, mb)
            total.backward()  # summed: allreduce_gradients divides by the counted positions
            loss_sum, counted = loss_sum + total.item(), counted + count.item()
        losses.append(allreduce_gradients(model, loss_sum, counted, dp, batch.global_loss_tokens))
        optimizer.step()
        if leader and (batch.step % args.log_every == 0 or batch.step + 1 == job.steps):
            print(f"step {batch.step:4d}  loss {losses[-1]:.4f}  ({time.perf_counter() - start:.1f} s)", flush=True)
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="msd configuration (INI)")
    parser.add_argument("--summary-json", help="write msd's summary and the losses here")
    parser.add_argument("--log-every", type=int, default=5, help="print the loss every N steps")
    parser.add_argument("--seed", type=int, default=0, help="model initialization seed")
    parser.add_argument("--vocab", type=int, default=8193, help="vocabulary size of the model (ids must be below)")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--max-position", type=int, default=4096)
    parser.add_argument("--lr", type=float, default=3e-3)
    args, msd_options = parser.parse_known_args()
    torch.set_num_threads(1)  # ranks share the cores; torch's own threads would spin them

    job = msd.Job(args.config, overrides=msd_options)
    losses = train(job, args) if job.role == "client" else job.serve()
    summary = job.finish()
    if job.role == "client" and job.client_index == 0 and losses:
        print(f"trained {len(losses)} steps: loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
              f"batch digest {summary['batch_digest']}", flush=True)
        if args.summary_json:
            summary.update(loss_first=losses[0], loss_last=losses[-1], losses=losses)
            with open(args.summary_json, "w") as out:
                json.dump(summary, out)
                out.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except msd.ConfigError as e:
        # Raised alike on every rank before any work: exit together.
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(f"train_gpt: {e}", file=sys.stderr)
        sys.exit(2)
