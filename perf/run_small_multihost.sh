#!/usr/bin/env bash
# Small calls across emulated hosts (scripts/emulate-hosts.sh; root and `ip netns`
# needed): Blink against Open MPI at 8 B..4 KiB for every collective, on several
# layouts of ranks per host.
#
# Usage: perf/run_small_multihost.sh [--build-dir DIR] [--layouts "2,2 2,2,1 1,1,1"]
#                                    [--reps N] [--iters N] [--transport NAME]
#                                    [--tag T] [-- -x VAR=VALUE ...]
# (EMULATE_PREFIX: the hosts' namespace prefix, default sm<pid>; --tag T: the files are
# named small_multihost[-NAME]-T.*; options after -- go to Blink's jobs.)
# --transport NAME: Blink's streams between nodes take NAME (BLINK_TRANSPORT=between=NAME;
# default: Blink's own choice, ucx where built) and the files are named
# small_multihost-NAME.*: run it for ucx and pmpi in turn to compare the two.
# For each layout and repetition:
#   - blink_perf --baseline mpi for allreduce, broadcast, reduce, allgather and
#     reducescatter (float32, out of place, -n ITERS): each size runs through Blink's
#     C API and then through PMPI_* in the same job, on the same buffers;
#   - perf/mpi_small_calls --both (Allreduce BAND/BOR of 8 and 32 bytes, Allgatherv,
#     Barrier) under LD_PRELOAD=libblink_mpi.so with BLINK_MPI_MIN_BYTES=0: each call
#     through MPI_* (interposed: Blink) and PMPI_* (the MPI library's own) in alternated
#     chunks of one job.
# Writes perf/results/small_multihost.csv (layout,rep,source,impl,call,bytes,time_us)
# and perf/results/small_multihost.md: per layout, call and size the median time of
# each side and the median of the repetitions' ratios MPI time / Blink time (above 1:
# Blink is faster).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build layouts="2,2 2,2,1 1,1,1" reps=5 iters=200 transport="" tag=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --build-dir) build=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run_small_multihost.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
emulate=$root/scripts/emulate-hosts.sh
why=$("$emulate" check) || { echo "run_small_multihost.sh: $why" >&2; exit 1; }
prefix=${EMULATE_PREFIX:-sm$$}
prefix=${prefix:0:8}
trap '"$emulate" teardown --prefix "$prefix" >/dev/null 2>&1 || true' EXIT
mkdir -p "$root/perf/results"
stem=$root/perf/results/small_multihost${transport:+-$transport}${tag:+-$tag}
csv=$stem.csv
chosen=()
[[ -z $transport ]] || chosen=(-x "BLINK_TRANSPORT=between=$transport")
chosen+=("$@")
echo "layout,rep,source,impl,call,bytes,time_us" >"$csv"
lib=$build/mpi_glue/libblink_mpi.so
for layout in $layouts; do
  name=${layout//,/+}  # 2+2+1: no commas in a CSV field
  hosts=$(($(tr -cd , <<<"$layout" | wc -c) + 1))
  "$emulate" setup --prefix "$prefix" --hosts "$hosts" >/dev/null
  for rep in $(seq 1 "$reps"); do
    for coll in allreduce broadcast reduce allgather reducescatter; do
      "$emulate" run --prefix "$prefix" --ranks "$layout" "${chosen[@]+"${chosen[@]}"}" \
        "$build/perf/blink_perf" \
        --baseline mpi --collective "$coll" -b 8 -e 4K -n "$iters" -w 20 --inplace 0 \
        --format csv | awk -F, -v l="$name" -v r="$rep" \
        '$1 == "blink" || $1 == "mpi" { print l "," r ",blink_perf," $1 "," $2 "," $3 "," $7 }' \
        >>"$csv"
    done
    # One job under the preload: MPI_* (interposed) and PMPI_* (the library's own) in
    # alternated chunks, so both sides share the set-up and the machine's moment.
    "$emulate" run --prefix "$prefix" --ranks "$layout" -x "LD_PRELOAD=$lib" \
      -x BLINK_MPI_MIN_BYTES=0 "${chosen[@]+"${chosen[@]}"}" \
      "$build/perf/mpi_small_calls" -n $((iters * 10)) --both | tail -n +2 | cut -d, -f1-4 |
      sed "s/^/$name,$rep,interposer,/" >>"$csv"
  done
done
/usr/bin/python3 - "$csv" "$stem.md" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
times = defaultdict(list)   # (layout, source, call, bytes, impl) -> [us]
per_rep = defaultdict(dict)  # (layout, source, call, bytes, rep) -> {impl: us}
for r in rows:
    key = (r["layout"], r["source"], r["call"], int(r["bytes"]))
    times[key + (r["impl"],)].append(float(r["time_us"]))
    per_rep[key + (r["rep"],)][r["impl"]] = float(r["time_us"])
ratios = defaultdict(list)
for key, sides in per_rep.items():
    if "mpi" in sides and "blink" in sides and sides["blink"] > 0:
        ratios[key[:4]].append(sides["mpi"] / sides["blink"])
out = ["| ranks per host | call | bytes | MPI (us) | Blink (us) | MPI/Blink (range) |",
       "|---|---|---:|---:|---:|---|"]
lowest = None
for key in sorted(ratios, key=lambda k: (k[0], k[1], k[2], k[3])):
    layout, source, call, size = key
    m = statistics.median(times[key + ("mpi",)])
    b = statistics.median(times[key + ("blink",)])
    rs = ratios[key]
    med = statistics.median(rs)
    lowest = med if lowest is None else min(lowest, med)
    name = call if source == "blink_perf" else "MPI_" + call + " (interposed)"
    out.append(f"| {layout} | {name} | {size} | {m:.1f} | {b:.1f} | "
               f"**{med:.2f}** ({min(rs):.2f}-{max(rs):.2f}) |")
out.append("")
out.append(f"Lowest median ratio: {lowest:.2f}; {len(set(r['rep'] for r in rows))} repetitions.")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
