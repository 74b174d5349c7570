#!/usr/bin/env bash
# Small calls across emulated hosts with Blink's streams between nodes over ucx and
# over pmpi, alternated: perf/run_small_multihost.sh --transport ucx / pmpi in turn
# (the order reversed every other round), each run with Open MPI in the same jobs.
#
# Usage: perf/run_small_transports.sh [--rounds N] [--layouts "2,2 2,2,1"]
#                                     [--build-dir DIR]
# (EMULATE_PREFIX as for run_small_multihost.sh; about 3 minutes a round on a
# loaded 2-core machine.) Writes perf/results/small_transports.csv (the runs' rows,
# `rep` = round, `impl` blink/mpi, plus a `transport` column) and
# perf/results/small_transports.md: per layout, call and size the median time of
# Blink over each transport, pmpi time / ucx time (above 1: ucx is faster), and Open
# MPI's median over both runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=2 layouts="2,2 2,2,1" build=$root/build
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --rounds) rounds=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "run_small_transports.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
results=$root/perf/results
out=$results/small_transports.csv
echo "transport,layout,rep,source,impl,call,bytes,time_us" >"$out"
for round in $(seq 1 "$rounds"); do
  order="ucx pmpi"
  ((round % 2 == 0)) && order="pmpi ucx"
  for t in $order; do
    "$root/perf/run_small_multihost.sh" --build-dir "$build" --reps 1 --layouts "$layouts" \
      --transport "$t" >/dev/null
    tail -n +2 "$results/small_multihost-$t.csv" | sed "s/^\([^,]*\),1,/$t,\1,$round,/" >>"$out"
  done
done
/usr/bin/python3 - "$out" "$results/small_transports.md" <<'PY'
import csv, statistics, sys
from collections import defaultdict
blink, mpi = defaultdict(lambda: defaultdict(list)), defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    key = (r["layout"], r["source"], r["call"], int(r["bytes"]))
    if r["impl"] == "blink":
        blink[key][r["transport"]].append(float(r["time_us"]))
    else:
        mpi[key].append(float(r["time_us"]))
out = ["| ranks per host | call | bytes | Blink ucx (us) | Blink pmpi (us) | pmpi/ucx | Open MPI (us) |",
       "|---|---|---:|---:|---:|---:|---:|"]
ratios = []
for key in sorted(blink):
    if "ucx" not in blink[key] or "pmpi" not in blink[key]:
        continue
    u, p = statistics.median(blink[key]["ucx"]), statistics.median(blink[key]["pmpi"])
    ratios.append(p / u)
    name = key[2] if key[1] == "blink_perf" else "MPI_" + key[2] + " (interposed)"
    out.append(f"| {key[0]} | {name} | {key[3]} | {u:.1f} | {p:.1f} | **{p / u:.2f}** | "
               f"{statistics.median(mpi[key]):.1f} |")
out += ["", f"Median pmpi/ucx over {len(ratios)} cells: {statistics.median(ratios):.2f} "
        f"(ucx slower in {sum(r < 1 for r in ratios)}, faster in {sum(r > 1 for r in ratios)})."]
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
