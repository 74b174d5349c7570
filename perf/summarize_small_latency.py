"""Summarises perf/run_small_latency.sh's CSV: per layout, collective and size the
median over the repetitions of each side's median call time and of the ratio MPI / Blink
(above 1: Blink is faster); then per (layout, collective) the median ratio over sizes.

Usage: summarize_small_latency.py CSV MD"""
import csv
import statistics
import sys
from collections import defaultdict


def main(csv_path, md_path):
    per_rep = defaultdict(dict)  # (layout, collective, bytes, rep) -> {impl: median_us}
    wrong = 0
    for r in csv.DictReader(open(csv_path)):
        key = (r["layout"], r["collective"], int(r["bytes"]), r["rep"])
        per_rep[key][r["impl"]] = float(r["median_us"])
        wrong = max(wrong, int(r["wrong"]))
    cells = defaultdict(lambda: {"blink": [], "mpi": [], "ratio": []})
    for (layout, coll, size, _), sides in per_rep.items():
        if "blink" in sides and "mpi" in sides and sides["blink"] > 0:
            cell = cells[(layout, coll, size)]
            cell["blink"].append(sides["blink"])
            cell["mpi"].append(sides["mpi"])
            cell["ratio"].append(sides["mpi"] / sides["blink"])
    out = ["| ranks per host | collective | bytes | MPI (us) | Blink (us) | MPI/Blink (range) |",
           "|---|---|---:|---:|---:|---|"]
    by_call = defaultdict(list)
    for key in sorted(cells):
        cell = cells[key]
        med = statistics.median(cell["ratio"])
        by_call[key[:2]].append(med)
        out.append(f"| {key[0]} | {key[1]} | {key[2]} | {statistics.median(cell['mpi']):.1f} | "
                   f"{statistics.median(cell['blink']):.1f} | **{med:.2f}** "
                   f"({min(cell['ratio']):.2f}-{max(cell['ratio']):.2f}) |")
    out += ["", "| ranks per host | " + " | ".join(c for c in
            ["allreduce", "broadcast", "reduce", "allgather", "reducescatter"]) + " |",
            "|---|---|---|---|---|---|"]
    for layout in sorted({k[0] for k in by_call}):
        row = [f"{statistics.median(by_call[(layout, c)]):.2f}" if (layout, c) in by_call else "-"
               for c in ["allreduce", "broadcast", "reduce", "allgather", "reducescatter"]]
        out.append(f"| {layout} | " + " | ".join(row) + " |")
    out += ["", f"Wrong elements (Blink against PMPI, any call): {wrong}."]
    open(md_path, "w").write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
