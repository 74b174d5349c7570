#!/usr/bin/env bash
# Blink against Open MPI across emulated hosts (scripts/emulate-hosts.sh; root and
# `ip netns` needed): blink_perf --baseline mpi, so each size compares the two in the
# same job, right after each other.
#
# Usage: perf/run_multihost.sh [--build-dir DIR] [--ranks 2,2] [--nics K] [--rate RATE]
#                              [--transport pmpi|ucx] [-- BLINK_PERF_ARGS...]
#   --ranks      ranks per host (default 2,2: two hosts of two ranks)
#   --nics       NICs per host (default 1); --rate a tc tbf limit per NIC (e.g. 1gbit)
#   --transport  Blink's streams between nodes (default pmpi, as in the library)
#   BLINK_PERF_ARGS default to `-b 8 -e 4K -n 200 -w 20` (AllReduce, float32)
# Prints blink_perf's table (ratio = Blink time / MPI time; below 1, Blink is faster).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build ranks=2,2 nics=1 rate='' transport=pmpi
args=(-b 8 -e 4K -n 200 -w 20)
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --build-dir) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --nics) nics=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    --) shift; args=("$@"); break ;;
    *) echo "run_multihost.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
emulate=$root/scripts/emulate-hosts.sh
why=$("$emulate" check) || { echo "run_multihost.sh: $why" >&2; exit 1; }
prefix=perf$$
prefix=${prefix:0:8}
trap '"$emulate" teardown --prefix "$prefix"' EXIT
hosts=$(($(tr -cd , <<<"$ranks" | wc -c) + 1))
"$emulate" setup --prefix "$prefix" --hosts "$hosts" --nics "$nics" ${rate:+--rate "$rate"}
"$emulate" run --prefix "$prefix" --ranks "$ranks" -x BLINK_TRANSPORT=between="$transport" \
  "$build/perf/blink_perf" --baseline mpi "${args[@]}"
