#!/usr/bin/python3
"""Markdown tables from perf/run_multihost.sh's CSV (medians over repetitions).

Usage: summarize_multihost.py [--criterion | --calls] CSV

With --calls the CSV is perf/run_multihost.sh --calls's: config,impl,bytes,calls,min_us,
median_us,wrong,rep (per-call minimum and median of perf/multihost_call_times).

Columns of the CSV: layout,nics,config,impl,collective,bytes,dtype,op,inplace,time_us,
algbw_gbps,busbw_gbps,wrong,rep. A configuration "ucx+ob1" holds Blink over UCX (impl
blink) and Open MPI's ob1/tcp (impl mpi); "pmpi+ucx" Blink over PMPI and Open MPI's pml
ucx; "predicted" the planner's predicted time (the simulator blink-sim runs).
"""

import csv
import statistics
import sys
from collections import defaultdict

NAMES = {
    ("ucx+ob1", "blink"): "blink-ucx",
    ("pmpi+ucx", "blink"): "blink-pmpi",
    ("ucx+ob1", "mpi"): "ompi-ob1",
    ("pmpi+ucx", "mpi"): "ompi-ucx",
    ("predicted", "predicted"): "predicted",
}


def size_label(b):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def bus_factor(collective, ranks):
    if collective == "allreduce":
        return 2 * (ranks - 1) / ranks
    if collective in ("allgather", "reducescatter"):
        return (ranks - 1) / ranks
    return 1.0


def load(path):
    times = defaultdict(list)  # (layout, nics, collective, bytes, name) -> [time_us]
    with open(path) as f:
        for row in csv.DictReader(f):
            name = NAMES.get((row["config"], row["impl"]))
            if name is None or not row["time_us"]:
                continue
            key = (row["layout"], int(row["nics"]), row["collective"], int(row["bytes"]), name)
            times[key].append(float(row["time_us"]))
    return times


def busbw(key, us):
    layout, _, collective, size, _ = key
    ranks = sum(int(r) for r in layout.split("+"))
    return size / (us * 1e3) * bus_factor(collective, ranks)


def median(times, key):
    values = times.get(key)
    return statistics.median(values) if values else None


def criterion(times):
    print("| size | Blink 1 NIC busbw | Blink 2 NICs busbw | 2 NICs / 1 NIC | predicted 2-NIC "
          "busbw | measured / predicted | Open MPI ob1 (2 NICs) | Open MPI ucx (2 NICs) | "
          "Blink over PMPI (2 NICs) | Blink / best Open MPI |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    sizes = sorted({k[3] for k in times if k[0] == "2+2"})
    verdict = {"scaling": True, "prediction": True, "mpi": True}
    for size in sizes:
        def t(nics, name):
            return median(times, ("2+2", nics, "allreduce", size, name))

        one, two, pred = t(1, "blink-ucx"), t(2, "blink-ucx"), t(2, "predicted")
        ob1, ucx, pmpi = t(2, "ompi-ob1"), t(2, "ompi-ucx"), t(2, "blink-pmpi")
        if one is None or two is None:
            continue
        k = ("2+2", 2, "allreduce", size, "")
        best = min(x for x in (ob1, ucx) if x is not None) if (ob1 or ucx) else None
        cells = [
            size_label(size),
            f"{busbw(k, one):.3f}",
            f"{busbw(k, two):.3f}",
            f"{one / two:.2f}x",
            f"{busbw(k, pred):.3f}" if pred else "n/a",
            f"{pred / two:.0%}" if pred else "n/a",
            f"{busbw(k, ob1):.3f}" if ob1 else "n/a",
            f"{busbw(k, ucx):.3f}" if ucx else "n/a",
            f"{busbw(k, pmpi):.3f}" if pmpi else "n/a",
            f"{best / two:.2f}x" if best else "n/a",
        ]
        print("| " + " | ".join(cells) + " |")
        if size >= 16 << 20:
            verdict["scaling"] &= one / two >= 1.8
            verdict["prediction"] &= pred is not None and pred / two >= 0.9
        if size >= 64 << 10 and best is not None:
            verdict["mpi"] &= best / two >= 1.0
    print()
    print("Bus bandwidth in GB/s (medians over the repetitions); ratios of times. Criterion: "
          f"2 NICs >= 1.8x one NIC at >= 16 MiB: {'met' if verdict['scaling'] else 'NOT met'}; "
          f">= 90% of the prediction at >= 16 MiB: {'met' if verdict['prediction'] else 'NOT met'}; "
          f"at least as fast as the best Open MPI at >= 64 KiB: "
          f"{'met' if verdict['mpi'] else 'NOT met'}.")


def matrix(times):
    names = ["blink-ucx", "blink-pmpi", "ompi-ob1", "ompi-ucx"]
    spread = names[:2]
    print("| hosts x ranks | NICs | collective | size | " + " | ".join(names) +
          " | best Blink / best Open MPI | " + " | ".join(n + " lowest-highest" for n in spread) +
          " |")
    print("|---|---|---|---|" + "---|" * len(names) + "---|" + "---|" * len(spread))
    cells = sorted({k[:4] for k in times}, key=lambda k: (k[0], k[1], k[2], k[3]))
    for cell in cells:
        row = {n: median(times, cell + (n,)) for n in names}
        bw = [f"{busbw(cell + (n,), row[n]):.3f}" if row[n] else "n/a" for n in names]
        blink = [row[n] for n in names[:2] if row[n]]
        mpi = [row[n] for n in names[2:] if row[n]]
        ratio = f"{min(mpi) / min(blink):.2f}x" if blink and mpi else "n/a"
        ranges = []
        for n in spread:
            values = [busbw(cell + (n,), t) for t in times.get(cell + (n,), [])]
            ranges.append(f"{min(values):.3f}-{max(values):.3f}" if values else "n/a")
        print(f"| {cell[0]} | {cell[1]} | {cell[2]} | {size_label(cell[3])} | " + " | ".join(bw) +
              f" | {ratio} | " + " | ".join(ranges) + " |")
    print()
    print("Bus bandwidth in GB/s (medians over the repetitions); \"best Blink / best Open MPI\" "
          "is the best Open MPI time over the best Blink time (above 1, Blink is faster); the "
          "last columns give each Blink configuration's lowest and highest busbw over the "
          "repetitions.")


def calls(path):
    """Per size and configuration: medians over the repetitions of each one's minimum and
    median call time, and MPI's over Blink's (above 1, Blink is faster)."""
    seen = defaultdict(lambda: defaultdict(list))  # (bytes, config) -> column -> values
    wrong = 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (int(row["bytes"]), row["config"])
            seen[key][row["impl"] + " min"].append(float(row["min_us"]))
            seen[key][row["impl"] + " median"].append(float(row["median_us"]))
            wrong += int(row["wrong"] or 0)
    print("| size | configuration | Blink min | Open MPI min | min: MPI / Blink "
          "| Blink median | Open MPI median | median: MPI / Blink |")
    print("|---|---|---|---|---|---|---|---|")
    for (b, config) in sorted(seen):
        m = {k: statistics.median(v) for k, v in seen[(b, config)].items()}
        print(f"| {size_label(b)} | Blink {NAMES[(config, 'blink')][6:]}, Open MPI "
              f"{NAMES[(config, 'mpi')][5:]} | {m['blink min']:.0f} | {m['mpi min']:.0f} "
              f"| {m['mpi min'] / m['blink min']:.2f} | {m['blink median']:.0f} "
              f"| {m['mpi median']:.0f} | {m['mpi median'] / m['blink median']:.2f} |")
    print()
    print("AllReduce float32, 2 hosts x 2 ranks, 2 NICs at 1 Gbit/s; per-call times in us "
          "(medians over the repetitions); Blink's results against PMPI's: "
          + ("all equal." if wrong == 0 else f"{wrong} elements differ."))


def main():
    args = sys.argv[1:]
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 1:
        sys.exit(__doc__)
    if "--calls" in args:
        calls(paths[0])
        return
    times = load(paths[0])
    criterion(times) if "--criterion" in args else matrix(times)


if __name__ == "__main__":
    main()
