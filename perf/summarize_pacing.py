#!/usr/bin/python3
"""The markdown table of perf/run_multihost.sh --pacing: per collective and size the
median bus bandwidth (GB/s) of each plan over the repetitions, its ratio to the
hierarchical plan, and blink-sim's predicted bus bandwidth of both plans.

Usage: summarize_pacing.py CSV   (columns as summarize_multihost.py's)
"""

import csv
import statistics
import sys
from collections import defaultdict

from summarize_multihost import bus_factor, size_label

MEASURED = ["hier", "hier-paced", "trees", "trees-paced"]
PREDICTED = ["predicted-hier", "predicted-trees"]
RANKS = 4


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    times = defaultdict(list)  # (collective, bytes, config) -> [time_us]
    with open(sys.argv[1]) as f:
        for row in csv.DictReader(f):
            if row["time_us"]:
                times[(row["collective"], int(row["bytes"]), row["config"])].append(float(row["time_us"]))

    def busbw(coll, size, config):
        t = times.get((coll, size, config))
        if not t:
            return None
        return size / statistics.median(t) / 1e3 * bus_factor(coll, RANKS)

    print("| collective | size | hier | hier-paced | trees | trees-paced | hier-paced / hier "
          "| trees / hier | trees-paced / hier | trees-paced / trees | predicted hier "
          "| predicted trees |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for coll, size in sorted({(c, b) for c, b, _ in times}):
        bw = {c: busbw(coll, size, c) for c in MEASURED + PREDICTED}

        def cell(v):
            return "" if v is None else f"{v:.3f}"

        def ratio(a, b):
            return "" if bw[a] is None or bw[b] is None else f"{bw[a] / bw[b]:.2f}x"

        print(f"| {coll} | {size_label(size)} | " + " | ".join(cell(bw[c]) for c in MEASURED) +
              f" | {ratio('hier-paced', 'hier')} | {ratio('trees', 'hier')} | "
              f"{ratio('trees-paced', 'hier')} | "
              f"{ratio('trees-paced', 'trees')} | " +
              " | ".join(cell(bw[c]) for c in PREDICTED) + " |")
    print()
    print("Bus bandwidth in GB/s (medians over the repetitions; busbw = algbw x 1.5 for "
          "AllReduce on 4 ranks, x 1 for Broadcast).")


if __name__ == "__main__":
    main()
