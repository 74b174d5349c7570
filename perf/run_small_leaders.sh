#!/usr/bin/env bash
# The node leaders' round with and without MPI's own collectives among the leaders
# (BLINK_LEADERS_MPI=1, the default, against 0: Blink's shapes only), small calls across
# emulated hosts, against Open MPI: for each repetition run_small_latency.sh (one call at
# a time) and run_small_multihost.sh (back to back), the two settings in turn, the order
# alternating between repetitions. (EMULATE_PREFIX: the hosts' namespace prefix.)
#
# Usage: perf/run_small_leaders.sh [--build-dir DIR] [--layouts "1,1,1 2,2,1 2,2"]
#            [--reps N] [--transport NAME]
# Writes perf/results/small_leaders.md: per layout and collective the median over sizes
# and repetitions of MPI time / Blink time (above 1: Blink is faster) for each setting
# and each script, besides each run's own files (small_latency-leaders-mpiS-rN.*,
# small_multihost[-NAME]-leaders-mpiS-rN.*).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build layouts="1,1,1 2,2,1 2,2" reps=3 transport=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --build-dir) build=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    *) echo "run_small_leaders.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
chosen=()
[[ -z $transport ]] || chosen=(--transport "$transport")
for rep in $(seq 1 "$reps"); do
  order="1 0"
  ((rep % 2 == 0)) && order="0 1"
  for setting in $order; do
    tag=leaders-mpi$setting-r$rep
    "$root/perf/run_small_latency.sh" --build-dir "$build" --layouts "$layouts" --reps 1 \
      "${chosen[@]+"${chosen[@]}"}" --tag "$tag" -- -x "BLINK_LEADERS_MPI=$setting" >/dev/null
    "$root/perf/run_small_multihost.sh" --build-dir "$build" --layouts "$layouts" --reps 1 \
      "${chosen[@]+"${chosen[@]}"}" --tag "$tag" -- -x "BLINK_LEADERS_MPI=$setting" >/dev/null
  done
done
/usr/bin/python3 - "$root/perf/results" "${transport:+-$transport}" "$root/perf/results/small_leaders.md" <<'PY'
import csv, glob, statistics, sys
from collections import defaultdict
results, transport, out = sys.argv[1], sys.argv[2], sys.argv[3]
colls = ["allreduce", "broadcast", "reduce", "allgather", "reducescatter"]
def ratios(pattern, key_of, time_field):
    got = defaultdict(list)  # (layout, collective) -> MPI / Blink per size and run
    for path in sorted(glob.glob(pattern)):
        times = {}
        for row in csv.DictReader(open(path)):
            key = key_of(row)
            if key is not None:
                times[key + (row["impl"],)] = float(row[time_field])
        for key, t in times.items():
            if key[-1] == "blink" and key[:-1] + ("mpi",) in times and t > 0:
                got[key[:2]].append(times[key[:-1] + ("mpi",)] / t)
    return got
lines = []
for name, pattern, key_of, field in [
        ("one call at a time (run_small_latency.sh)", "small_latency-leaders-mpi{}-r*.csv",
         lambda r: (r["layout"], r["collective"], r["bytes"]), "median_us"),
        ("back to back (run_small_multihost.sh, blink_perf)",
         "small_multihost" + transport + "-leaders-mpi{}-r*.csv",
         lambda r: (r["layout"], r["call"], r["bytes"]) if r["source"] == "blink_perf" else None,
         "time_us")]:
    lines += ["", name + ": median of MPI time / Blink time over sizes and repetitions", "",
              "| ranks per host | BLINK_LEADERS_MPI | " + " | ".join(colls) + " |",
              "|---|---|" + "---|" * len(colls)]
    by = {s: ratios(results + "/" + pattern.format(s), key_of, field) for s in ("1", "0")}
    for layout in sorted({k[0] for s in by for k in by[s]}):
        for s in ("1", "0"):
            cells = [f"{statistics.median(by[s][(layout, c)]):.2f}" if by[s][(layout, c)] else "-"
                     for c in colls]
            lines.append(f"| {layout} | {s} | " + " | ".join(cells) + " |")
open(out, "w").write("\n".join(lines[1:]) + "\n")
print("\n".join(lines[1:]))
PY
