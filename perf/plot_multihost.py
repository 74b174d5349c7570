#!/usr/bin/python3
"""Plots perf/results/multihost.csv (perf/run_multihost.sh --matrix): bus bandwidth
against size, one panel per (hosts x ranks, NICs, collective), one line per
configuration (Blink over UCX and over PMPI, Open MPI ob1/tcp and pml ucx).

Usage: plot_multihost.py CSV PNG (Debian's /usr/bin/python3: matplotlib, Agg).
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from summarize_multihost import busbw, load, median  # noqa: E402

NAMES = ["blink-ucx", "blink-pmpi", "ompi-ob1", "ompi-ucx"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    times = load(sys.argv[1])
    panels = sorted({k[:3] for k in times})
    columns = 3
    rows = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.5 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        sizes = sorted({k[3] for k in times if k[:3] == panel})
        for name in NAMES:
            xs, ys = [], []
            for s in sizes:
                t = median(times, panel + (s, name))
                if t:
                    xs.append(s)
                    ys.append(busbw(panel + (s, name), t))
            if xs:
                ax.plot(xs, ys, marker="o", markersize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{panel[0]} ranks, {panel[1]} NIC(s), {panel[2]}", fontsize=9)
        ax.set_xlabel("bytes")
        ax.set_ylabel("busbw GB/s")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=70)


if __name__ == "__main__":
    main()
