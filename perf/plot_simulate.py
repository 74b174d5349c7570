#!/usr/bin/python3
"""Plots perf/results/simulate.csv (written by simulate_bench).

Top row, one panel per machine: speedup of Blink's trees over NCCL-style rings at
1 GiB for Broadcast and AllReduce on every distinct allocation, each collective
sorted by speedup; allocations with no NVLink ring are drawn hollow. Bottom row,
one panel per machine: the size sweep's algbw against buffer size for Blink and the
ring on each sweep allocation.

Run with Debian's /usr/bin/python3 (matplotlib, Agg backend).
"""

import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

BIG = 1 << 30
COLLECTIVES = ("broadcast", "allreduce")
COLOURS = {"broadcast": "tab:blue", "allreduce": "tab:orange"}


def size_label(b):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if b >= 1 << shift:
            return f"{b >> shift}{unit}"
    return str(b)


def read(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r["bytes"] = int(r["bytes"])
            for k in ("blink_us", "ring_us", "tree_us", "speedup", "blink_algbw_gbps",
                      "ring_algbw_gbps", "blink_over_optimal"):
                r[k] = float(r[k])
            for k in ("representative", "sweep", "nvlink_ring"):
                r[k] = r[k] == "1"
            rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", default="perf/results/simulate.csv", help="input (default: %(default)s)")
    ap.add_argument("--output", default="perf/results/simulate.png",
                    help="output image (default: %(default)s)")
    args = ap.parse_args()
    try:
        rows = read(args.csv)
    except (OSError, KeyError, ValueError) as e:
        print(f"plot_simulate.py: cannot read {args.csv}: {e}", file=sys.stderr)
        return 1
    machines = list(dict.fromkeys(r["machine"] for r in rows))
    if not machines:
        print(f"plot_simulate.py: {args.csv} has no rows", file=sys.stderr)
        return 1

    fig, axes = plt.subplots(2, len(machines), figsize=(7.5 * len(machines), 10), squeeze=False)
    for col, machine in enumerate(machines):
        ax = axes[0][col]
        for coll in COLLECTIVES:
            pts = sorted((r for r in rows if r["machine"] == machine and r["collective"] == coll
                          and r["representative"] and r["bytes"] == BIG),
                         key=lambda r: r["speedup"])
            if not pts:
                continue
            xs = range(len(pts))
            ax.plot(xs, [r["speedup"] for r in pts], "-", color=COLOURS[coll], lw=0.8, alpha=0.5)
            for filled in (True, False):
                sel = [(i, r) for i, r in enumerate(pts) if r["nvlink_ring"] == filled]
                ax.scatter([i for i, _ in sel], [r["speedup"] for _, r in sel], s=28,
                           marker="o", edgecolors=COLOURS[coll],
                           facecolors=COLOURS[coll] if filled else "none", linewidths=1.3,
                           zorder=3)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{machine}: speedup over rings, 1 GiB, per distinct allocation")
        ax.set_xlabel("allocations, sorted by speedup (per collective)")
        ax.set_ylabel("ring time / Blink time")
        ax.grid(True, alpha=0.3)
        handles = [Line2D([], [], color=COLOURS[c], marker="o", ls="-", label=c)
                   for c in COLLECTIVES]
        handles += [Line2D([], [], color="k", marker="o", ls="", markerfacecolor="k",
                           label="NVLink ring exists"),
                    Line2D([], [], color="k", marker="o", ls="", markerfacecolor="none",
                           label="no NVLink ring")]
        ax.legend(handles=handles, loc="upper left", fontsize=8)

        ax = axes[1][col]
        sweep = defaultdict(list)
        for r in rows:
            if r["machine"] == machine and r["sweep"]:
                sweep[(r["allocation"], r["collective"])].append(r)
        allocs = list(dict.fromkeys(a for a, _ in sweep))
        styles = ["-", "--", ":"]
        markers = ["o", "s", "^"]
        for (alloc, coll), pts in sweep.items():
            pts.sort(key=lambda r: r["bytes"])
            i = allocs.index(alloc) % len(styles)
            xs = [r["bytes"] for r in pts]
            ax.plot(xs, [r["blink_algbw_gbps"] for r in pts], styles[i], marker=markers[i],
                    ms=4, color=COLOURS[coll], label=f"blink {coll} {{{alloc}}}")
            ax.plot(xs, [r["ring_algbw_gbps"] for r in pts], styles[i], marker=markers[i],
                    ms=4, color=COLOURS[coll], alpha=0.35, label=f"ring {coll} {{{alloc}}}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({r["bytes"] for pts in sweep.values() for r in pts})
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks], fontsize=8)
        ax.set_title(f"{machine}: algbw vs size (dark: Blink, light: ring)")
        ax.set_xlabel("bytes")
        ax.set_ylabel("algbw, GB/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6.5, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"plot_simulate.py: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
