#!/usr/bin/python3
"""Draws `msd-bench sweep --csv` rows: msd_greedy's speedup over each baseline
against the data-parallel size, one panel per baseline, a line per
(seq_len, mix, pp). Usage: plot_sweep.py ROWS.csv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[1])))
    baselines = ["colocated_samples", "colocated_tokens"]
    fig, axes = plt.subplots(1, 2, figsize=(14, 6), sharey=False)
    series = {}
    for row in rows:
        series.setdefault((int(row["seq_len"]), row["mix"], int(row["pp"])), []).append(row)
    seq_lens = sorted({key[0] for key in series})
    colors = {s: plt.cm.viridis(i / max(1, len(seq_lens) - 1)) for i, s in enumerate(seq_lens)}
    styles = {"longtail_text": "-", "text_image": "--", "demo": ":"}
    for ax, baseline in zip(axes, baselines):
        for (seq_len, mix, pp), points in sorted(series.items()):
            points.sort(key=lambda r: int(r["dp"]))
            ax.plot([int(r["dp"]) for r in points], [float(r["over_" + baseline]) for r in points],
                    linestyle=styles.get(mix, "-"), marker="o" if pp == 1 else "s", markersize=3,
                    color=colors[seq_len], label=f"{seq_len // 1024}k {mix} pp{pp}")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("data-parallel ranks")
        ax.set_ylabel(f"msd_greedy tokens/s over {baseline}")
        ax.set_title(f"over {baseline}")
        ax.grid(True, alpha=0.3)
    axes[1].legend(fontsize=6, ncol=2, loc="upper left")
    fig.suptitle("msd-bench sweep: msd_greedy on the device model")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
