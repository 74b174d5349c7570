#!/usr/bin/env bash
# perf/small_calls: the latency of small control calls (bit-vector MPI_Allreduce with
# BAND/BOR on MPI_LONG_LONG_INT, MPI_Allgatherv of short lists, MPI_Barrier), natively
# and through libblink_mpi.so, in alternated runs.
set -euo pipefail

usage() {
  cat <<'EOF2'
Usage: perf/run_small_calls.sh [--build-dir DIR] [--ranks "2 4"] [--iters N] [--pairs N]
                               [--realtime] [-h|--help]

Builds mpi_small_calls and blink_mpi in DIR (default: build; it must be configured)
and, for each rank count, runs N pairs (default 7) of runs, native and under
LD_PRELOAD (with the interposer's default settings, under which calls below
BLINK_MPI_MIN_BYTES go to MPI; BLINK_* variables set in the environment are passed
on, e.g. BLINK_MPI_MIN_BYTES=0 to time Blink on every call), the order within a pair alternating so that neither
side always runs first. Writes:

  perf/results/small_calls.csv  pair,impl,ranks,call,bytes,time_us,best_us
  perf/results/small_calls.md   per call: the median time of each side and the
                                median (and range) of each pair's ratio native/blink
                                (> 1: Blink faster), over the whole run (time_us) and
                                over its fastest tenth (best_us, the least disturbed
                                by other work on a shared machine)

--realtime runs every mpirun under `chrt -f 10` (root only): the ranks then run ahead
of other work on a shared machine (Linux keeps 5% of each second for the rest), which
gives the times of a quiet machine; sched_yield hands the core to another rank of the
job only, as it does on an otherwise idle machine. Unset: the normal scheduler.

Exit codes: 0 success, 1 a step failed, 2 bad command line.
EOF2
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir=build ranks="2 4" iters=20000 pairs=7 launcher=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "run_small_calls.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --ranks) [[ $# -ge 2 ]] || { echo "run_small_calls.sh: --ranks needs a value" >&2; exit 2; }; ranks=$2; shift 2 ;;
    --iters) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "run_small_calls.sh: --iters needs a positive integer" >&2; exit 2; }; iters=$2; shift 2 ;;
    --realtime) launcher=(chrt -f 10); shift ;;
    --pairs) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "run_small_calls.sh: --pairs needs a positive integer" >&2; exit 2; }; pairs=$2; shift 2 ;;
    *) echo "run_small_calls.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cd "$root"
cmake --build "$build_dir" --target mpi_small_calls blink_mpi >/dev/null
bench="$build_dir/perf/mpi_small_calls"
lib="$build_dir/mpi_glue/libblink_mpi.so"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
flags=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
for v in $(env | grep -o '^BLINK_[A-Z_]*' || true); do flags+=(-x "$v"); done
mkdir -p perf/results
load=$(cut -d' ' -f1-3 /proc/loadavg)
csv=perf/results/small_calls.csv
echo "pair,impl,ranks,call,bytes,time_us,best_us" >"$csv"
for np in $ranks; do
  for pair in $(seq 1 "$pairs"); do
    order="mpi blink"
    (( pair % 2 == 0 )) && order="blink mpi"
    for impl in $order; do
      extra=()
      [[ $impl == blink ]] && extra=(-x "LD_PRELOAD=$lib")
      "${launcher[@]}" mpirun "${flags[@]}" "${extra[@]}" -np "$np" "$bench" -n "$iters" | tail -n +2 |
        sed "s/^/$pair,$impl,$np,/" >>"$csv"
    done
  done
done
settings=$(env | grep '^BLINK_' | sort | tr '\n' ' ' || true)
[[ ${#launcher[@]} -gt 0 ]] && load="$load, ranks under ${launcher[*]} (--realtime)"
python3 - "$csv" "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
  "${settings:-none}" "$load" \
  >perf/results/small_calls.md <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted({(int(r["ranks"]), r["call"], int(r["bytes"])) for r in rows})
print("# Small control calls: native MPI against libblink_mpi.so\n")
print("Machine: %s, load average before the runs: %s. Time per call (us): the slowest"
      " rank's average over the whole run (mean), and over the fastest of its ten chunks"
      " (best, what a shared machine disturbs least); medians over the pairs of alternated"
      " runs. Ratio = native time / Blink time of each pair, > 1: Blink faster; its median"
      " and range over the pairs. BLINK_* settings of both runs: %s.\n" % (
          sys.argv[2], sys.argv[4], sys.argv[3]))
print("| ranks | call | bytes | native mean | blink mean | ratio of means | native best"
      " | blink best | ratio of bests |")
print("|---|---|---|---|---|---|---|---|---|")
for np, call, nbytes in keys:
    cells = []
    for column in ("time_us", "best_us"):
        t = {}
        for impl in ("mpi", "blink"):
            t[impl] = {r["pair"]: float(r[column]) for r in rows
                       if (int(r["ranks"]), r["call"], int(r["bytes"]), r["impl"]) ==
                       (np, call, nbytes, impl)}
        ratios = [t["mpi"][p] / t["blink"][p] for p in t["mpi"]
                  if p in t["blink"] and t["blink"][p] > 0]
        cells.append("%.2f | %.2f | **%.2f** (%.2f-%.2f)" % (
            statistics.median(t["mpi"].values()), statistics.median(t["blink"].values()),
            statistics.median(ratios), min(ratios), max(ratios)))
    print("| %d | %s | %d | %s |" % (np, call, nbytes, " | ".join(cells)))
PY
cat perf/results/small_calls.md
