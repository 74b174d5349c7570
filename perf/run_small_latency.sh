#!/usr/bin/env bash
# Small calls across emulated hosts, one call at a time (scripts/emulate-hosts.sh; root and
# `ip netns` needed): perf/multihost_call_times for each collective, Blink's C API and
# PMPI_* alternating call by call in one job (a barrier before each call, its time the
# slowest rank's), so both see the same load; the median over many calls is robust to a
# machine shared with other work, where blink_perf's averages of back-to-back calls
# swing by 10x between runs (perf/README.md, small calls across hosts).
#
# Usage: perf/run_small_latency.sh [--build-dir DIR] [--layouts "1,1,1 2,2,1"]
#            [--sizes "8 512 4K"] [--calls N] [--reps N] [--gap-us US] [--transport NAME]
#            [--tag NAME] [-- MPIRUN_OPTIONS...]
# --gap-us US: every rank sleeps US between the barrier and its call (0 by default), as a
# training loop computes between MPI calls (multihost_call_times --gap-us: without a gap,
# Open MPI's Reduce root reads the senders' bytes while still in the barrier).
# (EMULATE_PREFIX: the hosts' namespace prefix, default sl<pid>.) --transport NAME sets
# BLINK_TRANSPORT=between=NAME; MPIRUN_OPTIONS (e.g. -x VAR=VALUE) go to every job.
# Writes perf/results/small_latency[-TAG].csv (layout,rep,collective,impl,bytes,calls,
# min_us,median_us,wrong) and .md: per layout, collective and size the median over the
# repetitions of each side's median call time and of the ratio MPI / Blink (above 1:
# Blink is faster), and per (layout, collective) the median ratio over the sizes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build layouts="1,1,1 2,2,1" sizes="8 512 4K" calls=400 reps=2 gap_us=0 transport="" tag=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --build-dir) build=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --gap-us) gap_us=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run_small_latency.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
extra=("$@")
emulate=$root/scripts/emulate-hosts.sh
why=$("$emulate" check) || { echo "run_small_latency.sh: $why" >&2; exit 1; }
prefix=${EMULATE_PREFIX:-sl$$}
prefix=${prefix:0:8}
trap '"$emulate" teardown --prefix "$prefix" >/dev/null 2>&1 || true' EXIT
[[ -z $transport ]] || extra+=(-x "BLINK_TRANSPORT=between=$transport")
mkdir -p "$root/perf/results"
stem=$root/perf/results/small_latency${tag:+-$tag}
echo "layout,rep,collective,impl,bytes,calls,min_us,median_us,wrong" >"$stem.csv"
read -ra size_list <<<"$sizes"
for layout in $layouts; do
  name=${layout//,/+}
  "$emulate" setup --prefix "$prefix" --hosts $(($(tr -cd , <<<"$layout" | wc -c) + 1)) >/dev/null
  for rep in $(seq 1 "$reps"); do
    for coll in allreduce broadcast reduce allgather reducescatter; do
      "$emulate" run --prefix "$prefix" --ranks "$layout" "${extra[@]+"${extra[@]}"}" \
        "$build/perf/multihost_call_times" --calls "$calls" --pause-us 0 --gap-us "$gap_us" --collective "$coll" \
        "${size_list[@]}" | tail -n +2 | sed "s/^/$name,$rep,$coll,/" >>"$stem.csv"
    done
  done
done
/usr/bin/python3 "$root/perf/summarize_small_latency.py" "$stem.csv" "$stem.md"
