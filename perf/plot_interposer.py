#!/usr/bin/python3
"""Summarises perf/run_interposer.sh: per (ranks, bytes) the median bus bandwidth of
each impl over the pairs of runs, the median (and range) of each pair's own ratio
Blink/native, in a Markdown table, and a PNG plot of the medians.

Usage: plot_interposer.py CSV MARKDOWN PNG NATIVE_US INTERPOSED_US MACHINE"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 7 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    src, md_path, png_path, native_us, interposed_us, machine = argv[1:]
    runs = defaultdict(list)  # (impl, ranks, bytes) -> busbw of each pair
    by_pair = {}  # (pair, impl, ranks, bytes) -> busbw
    wrong = defaultdict(int)
    with open(src) as f:
        for row in csv.DictReader(f):
            key = (row["impl"], int(row["ranks"]), int(row["bytes"]))
            runs[key].append(float(row["busbw_gbps"]))
            by_pair[(row["pair"],) + key] = float(row["busbw_gbps"])
            wrong[key] += int(row["wrong"])
    best = {k: statistics.median(v) for k, v in runs.items()}
    pair_ratios = defaultdict(list)
    for (pair, impl, n, b), v in by_pair.items():
        m = by_pair.get((pair, "mpi", n, b), 0.0)
        if impl == "blink" and m > 0:
            pair_ratios[(n, b)].append(v / m)
    ranks = sorted({k[1] for k in best})
    sizes = sorted({k[2] for k in best})
    pairs = len({k[0] for k in by_pair})
    lines = [f"Machine: {machine}. MPI_Allreduce, float32 sum, bus bandwidth in GB/s: medians "
             f"over {pairs} pairs of runs (native, then preloaded); ratio: the median of each "
             "pair's own Blink/native ratio, lowest-highest in brackets.", "",
             "| bytes | " + " | ".join(f"native {n}r | Blink {n}r | ratio {n}r" for n in ranks) + " |",
             "|---:|" + "---:|---:|---|" * len(ranks)]
    ratios = []
    for b in sizes:
        cells = []
        for n in ranks:
            m, k = best.get(("mpi", n, b), 0.0), best.get(("blink", n, b), 0.0)
            rs = pair_ratios.get((n, b), [float("nan")])
            r = statistics.median(rs)
            ratios.append((n, b, r))
            cells.append(f"{m:.2f} | {k:.2f} | **{r:.2f}** ({min(rs):.2f}-{max(rs):.2f})")
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    worst = min(ratios, key=lambda t: t[2])
    lines += ["", f"Lowest median ratio: {worst[2]:.2f} ({worst[0]} ranks, {worst[1]} bytes). "
              f"Wrong elements: {sum(wrong.values())}.",
              f"An 8-byte MPI_Allreduce on MPI_COMM_SELF: {float(native_us):.3f} us natively, "
              f"{float(interposed_us):.3f} us through the interposer (eligibility check and "
              f"fallback: {float(interposed_us) - float(native_us):.3f} us)."]
    with open(md_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n in ranks:
        for impl, style in (("mpi", "--"), ("blink", "-")):
            ys = [best.get((impl, n, b), 0.0) for b in sizes]
            ax.plot(sizes, ys, style, marker="o", label=f"{'native MPI' if impl == 'mpi' else 'Blink (LD_PRELOAD)'}, {n} ranks")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per rank")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("MPI_Allreduce through libblink_mpi.so vs the MPI library")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
