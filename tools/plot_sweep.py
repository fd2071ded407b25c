#!/usr/bin/python3
"""Draws `msd-bench sweep --csv` rows: msd_greedy's tokens/s over
megatron_docmask's (fixed rows) and, in variable-length rows, over
megatron_dp_balanced's against seq_len, one panel each, a line per (dp, mix,
pp, cp); a row without the comparison (an empty cell) is left out.
Usage: plot_sweep.py ROWS.csv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [("msd_greedy_over_megatron_docmask", "msd_greedy over megatron_docmask (fixed rows)"),
          ("msd_greedy_varlen_over_megatron_dp_balanced", "msd_greedy over megatron_dp_balanced (varlen rows)")]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    fig, axes = plt.subplots(1, len(PANELS), figsize=(14, 6))
    series = {}
    for row in rows:
        series.setdefault((int(row["dp"]), row["mix"], int(row["pp"]), int(row["cp"])), []).append(row)
    dps = sorted({key[0] for key in series})
    colors = {d: plt.cm.viridis(i / max(1, len(dps) - 1)) for i, d in enumerate(dps)}
    styles = ["-", "--", ":", "-.", (0, (1, 3))]
    mixes = sorted({key[1] for key in series})
    for ax, (column, title) in zip(axes, PANELS):
        for (dp, mix, pp, cp), points in sorted(series.items()):
            points = sorted((r for r in points if r[column]), key=lambda r: int(r["seq_len"]))
            if not points:
                continue
            ax.plot([int(r["seq_len"]) for r in points], [float(r[column]) for r in points],
                    linestyle=styles[mixes.index(mix) % len(styles)], marker="o" if pp == 1 else "s", markersize=3,
                    color=colors[dp], alpha=1.0 if cp == 1 else 0.5,
                    label=f"dp{dp} {mix} pp{pp}" + ("" if cp == 1 else f" cp{cp}"))
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("seq_len")
        ax.set_ylabel("tokens/s ratio (geometric mean over seeds)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[-1].legend(fontsize=6, ncol=2, loc="upper left")
    fig.suptitle("msd-bench sweep on the device model")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
