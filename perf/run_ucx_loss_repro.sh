#!/usr/bin/env bash
# The repro of issue 17 (README, "Between nodes"): Reduce.EveryRootAndOp across 3
# emulated hosts of one rank each, BLINK_TIMEOUT_S=3, RUNS times; prints and appends
# "LABEL: F fails / RUNS runs" to perf/results/ucx_loss.md and keeps the output of
# failing runs under ${TMPDIR:-/tmp}/blink-ucx-loss/LABEL/. Before the fix (Blink's
# waits did not let MPI progress) 1 run in 6-30 stalled; the README says why.
# Usage: run_ucx_loss_repro.sh LABEL RUNS [BUILD_DIR [MPIRUN_OPTIONS...]]   (needs root, ip netns)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
label=$1 runs=$2 build=${3:-$root/build}
shift $(($# < 3 ? $# : 3))
emulate=$root/scripts/emulate-hosts.sh
results=$root/perf/results
keep=${TMPDIR:-/tmp}/blink-ucx-loss/$label
mkdir -p "$keep"
prefix=ul$$
prefix=${prefix:0:8}
"$emulate" setup --prefix "$prefix" --hosts 3 >/dev/null || exit 77
trap '"$emulate" teardown --prefix "$prefix" >/dev/null 2>&1 || true' EXIT
fails=0
for i in $(seq 1 "$runs"); do
  # A stalled run ends after BLINK_TIMEOUT_S on the waiting ranks; the rank left in
  # MPI is ended by the timeout.
  if ! timeout -k 5 25 "$emulate" run --prefix "$prefix" --ranks 1,1,1 -x BLINK_TIMEOUT_S=3 "$@" \
    "$build/tests/test_collectives" --gtest_filter=Reduce.EveryRootAndOp >"$keep/$i.log" 2>&1; then
    fails=$((fails + 1))
  else
    rm -f "$keep/$i.log"
  fi
done
line="$label: $fails fails / $runs runs ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
echo "$line"
echo "- $line" >>"$results/ucx_loss.md"
