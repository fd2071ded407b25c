#!/usr/bin/env python3
"""The placement model behind msd's placement defaults (docs/cost-and-balance.md,
"Choosing the defaults").

For each case (DP ranks, seq_len S, length mix) and seed, `msd-plan place` places
one stream of synthetic documents under Megatron's cut and under msd's
placements, and this script charges every rank of every step the planner's
cost, a*L + L^2 per document piece (document-masked attention, a = S / 5 by
default) plus --overhead per micro-batch, and sums the heaviest rank over the
steps: the run's compute time in units of cost. Every placement has the same
steps (msd-plan place forms them by tokens: Megatron's global batches). The baseline is
Megatron with document-masked attention: the stream's documents concatenated
and cut into rows of S (msd-plan place's "megatron"), the rows shuffled and
dealt to the ranks, each row a micro-batch computing all S positions. Every
placement trains the same tokens, so the ratio of the sums is a speedup.

Usage: tools/placement-model.py [--msd-plan PATH] [--seeds 3] [--steps 50]
       [--cases 16:8192:pile,8:4096:pile,16:8192:longtail] [--placements ...]
       [--hold-above 0.625] [--hold-steps 8] [--overhead 0] [--json FILE]
"""
import argparse
import json
import math
import random
import statistics
import subprocess
import sys

# The Pile's mean document: token share over document share of corpus_mix("pile").
PILE_MEAN_TOKENS = 1512.0
LONGTAIL_MEAN_TOKENS = None  # computed from the pareto mix below


def longtail_mean(seq_len):
    # 85% log-normal (median 600, sigma 1), 15% Pareto from S/4, alpha 1.1,
    # capped at 16 S (simulate.cc synthetic_step, lengths pareto).
    web = 600 * math.exp(0.5)
    lo, cap, alpha = seq_len / 4, 16 * seq_len, 1.1
    # E[min(X, cap)] for Pareto(lo, alpha)
    pareto = alpha * lo / (alpha - 1) * (1 - (lo / cap) ** (alpha - 1)) + cap * (lo / cap) ** alpha
    return 0.85 * web + 0.15 * pareto


def planned_overhead(args):
    """The per-micro-batch cost the placement is told (--planned-overhead, default --overhead)."""
    return args.overhead if args.planned_overhead is None else args.planned_overhead


def place(args, dp, seq_len, mix, seed, placements, hold_above):
    mean = PILE_MEAN_TOKENS if mix == "pile" else longtail_mean(seq_len)
    per_rank = max(1, round(seq_len / mean))  # about one row of S per rank and step
    cmd = [args.msd_plan, "place", "--dp", str(dp), "--seq-len", str(seq_len), "--micro-batches", "1",
           "--samples-per-gpu", str(per_rank), "--steps", str(args.steps), "--seed", str(seed),
           "--cost-a", str(seq_len * args.a_over_s),
           "--cost-micro-batch", str(planned_overhead(args) * seq_len * seq_len),
           "--hold-above", str(hold_above), "--hold-steps", str(args.hold_steps),
           "--modes", ",".join(["megatron"] + placements)]
    if mix == "pile":
        cmd += ["--lengths", "pile"]
    else:
        cmd += ["--lengths", "pareto", "--long-share", "0.15"]
    if args.max_positions:
        cmd += ["--max-positions-per-micro-batch", str(int(args.max_positions * seq_len))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out), per_rank


def rank_cost(micro_batches, a, seq_len, varlen, overhead):
    total = 0.0
    for mb in micro_batches:
        if not mb:
            continue
        total += overhead
        for row in mb:
            used = sum(p[2] for p in row)
            total += a * (used if varlen else seq_len) + sum(p[2] * p[2] for p in row)
    return total


def run_cost(steps, a, seq_len, varlen, overhead):
    return sum(max(rank_cost(rank, a, seq_len, varlen, overhead) for rank in step) for step in steps)


def shuffled_megatron(placed, seed):
    """Megatron's rows (stream order) shuffled, dealt in the same step shape."""
    rows = [row for step in placed for rank in step for mb in rank for row in mb]
    random.Random(seed).shuffle(rows)
    out, k = [], 0
    for step in placed:
        new_step = []
        for rank in step:
            new_rank = []
            for mb in rank:
                new_rank.append(rows[k:k + len(mb)])
                k += len(mb)
            new_step.append(new_rank)
        out.append(new_step)
    return out


def measure(args, case, placements, hold_above):
    dp, seq_len, mix = case
    a = seq_len * args.a_over_s
    overhead = args.overhead * seq_len * seq_len
    per_seed = []
    for seed in range(1, args.seeds + 1):
        data, per_rank = place(args, dp, seq_len, mix, seed, placements, hold_above)
        p = data["placements"]
        base = run_cost(shuffled_megatron(p["megatron"]["steps"], seed), a, seq_len, False, overhead)
        row = {"seed": seed, "docs_per_rank": per_rank, "megatron": base}
        for name in placements:
            e = p[name]
            row[name] = {"cost": run_cost(e["steps"], a, seq_len, e["rows"] == "varlen", overhead),
                         "pieces": e["pieces"], "held": e["hold"]["held"], "mean_delay": e["hold"]["mean_delay"],
                         "max_delay": e["hold"]["max_delay"]}
        row["megatron_pieces"] = p["megatron"]["pieces"]
        per_seed.append(row)
    return per_seed


def summarize(case, per_seed, placements):
    lines = []
    for name in placements:
        speedups = [r["megatron"] / r[name]["cost"] for r in per_seed]
        pieces = sum(r[name]["pieces"] for r in per_seed) / sum(r["megatron_pieces"] for r in per_seed)
        held = statistics.mean(r[name]["held"] for r in per_seed)
        delay = statistics.mean(r[name]["mean_delay"] for r in per_seed)
        lines.append({"placement": name, "speedup_mean": statistics.mean(speedups),
                      "speedup_min": min(speedups), "speedup_max": max(speedups),
                      "pieces_over_megatron": pieces, "held_per_run": held, "mean_delay": delay,
                      "max_delay": max(r[name]["max_delay"] for r in per_seed)})
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--msd-plan", default="build/release/app/msd-plan")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--cases", default="16:8192:pile,8:4096:pile,16:8192:longtail")
    parser.add_argument("--placements",
                        default="msd_greedy,msd_greedy_varlen,msd_greedy_vmb,msd_greedy_cut_vmb,msd_greedy_vmb_hold,"
                                "msd_greedy_cut_vmb_hold")
    parser.add_argument("--a-over-s", type=float, default=0.2, help="the cost's a over S (default 1/5)")
    parser.add_argument("--overhead", type=float, default=0.0, help="cost per micro-batch, x S^2")
    parser.add_argument("--planned-overhead", type=float, default=None,
                        help="the per-micro-batch cost msd's placement is told, x S^2 (default: --overhead)")
    parser.add_argument("--max-positions", type=float, default=0.0, help="micro-batch budget, x S (0: default)")
    parser.add_argument("--hold-above", type=float, default=0.625)
    parser.add_argument("--hold-steps", type=int, default=8)
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    placements = args.placements.split(",")
    report = {"a_over_s": args.a_over_s, "overhead": args.overhead, "hold_above": args.hold_above,
              "hold_steps": args.hold_steps, "seeds": args.seeds, "steps": args.steps, "cases": []}
    print(f"cost a*L + L^2, a = {args.a_over_s} S, {args.overhead} S^2 per micro-batch; hold above "
          f"{args.hold_above} S for at most {args.hold_steps} steps; {args.seeds} seeds x {args.steps} steps")
    print(f"{'case':22} {'placement':28} {'speedup':>8} {'min':>7} {'max':>7} {'pieces/M':>9} {'held':>7} "
          f"{'delay':>6} {'max':>4}")
    for text in args.cases.split(","):
        dp, seq_len, mix = text.split(":")
        case = (int(dp), int(seq_len), mix)
        per_seed = measure(args, case, placements, args.hold_above)
        lines = summarize(case, per_seed, placements)
        report["cases"].append({"dp": case[0], "seq_len": case[1], "mix": mix, "placements": lines,
                                "per_seed": per_seed})
        for line in lines:
            print(f"{text:22} {line['placement']:28} {line['speedup_mean']:8.3f} {line['speedup_min']:7.3f} "
                  f"{line['speedup_max']:7.3f} {line['pieces_over_megatron']:9.3f} {line['held_per_run']:7.1f} "
                  f"{line['mean_delay']:6.2f} {line['max_delay']:4d}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
