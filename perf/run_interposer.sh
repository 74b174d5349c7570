#!/usr/bin/env bash
# perf/interposer: MPI_Allreduce (float sum) from a plain MPI program, natively and
# through libblink_mpi.so, 1 KiB..64 MiB at 2 and 4 ranks, plus the cost of the
# interposer's eligibility check and fallback on an 8-byte call.
set -euo pipefail

usage() {
  cat <<'EOF2'
Usage: perf/run_interposer.sh [--build-dir DIR] [--ranks "2 4"] [--iters N] [--pairs N]
                              [-h|--help]

Builds mpi_allreduce_sweep and blink_mpi in DIR (default: build; it must be
configured), runs the sweep natively and under LD_PRELOAD for each rank count, N
pairs of runs (default 5) one right after the other, so that each pair sees about
the same machine load, and writes:

  perf/results/interposer.csv   pair,impl,ranks,bytes,time_us,busbw_gbps,wrong
  perf/results/interposer.md    per size: median bus bandwidths and the median (and
                                range) of each pair's own ratio
  perf/results/interposer.png   bus bandwidth against size, native and Blink

The native baseline runs with Open MPI's defaults. Exit codes: 0 success, 1 a step
failed, 2 bad command line.
EOF2
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir=build ranks="2 4" iters=20 pairs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "run_interposer.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --ranks) [[ $# -ge 2 ]] || { echo "run_interposer.sh: --ranks needs a value" >&2; exit 2; }; ranks=$2; shift 2 ;;
    --iters) [[ $# -ge 2 ]] || { echo "run_interposer.sh: --iters needs a value" >&2; exit 2; }; iters=$2; shift 2 ;;
    --pairs) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "run_interposer.sh: --pairs needs a positive integer" >&2; exit 2; }; pairs=$2; shift 2 ;;
    *) echo "run_interposer.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cd "$root"
cmake --build "$build_dir" --target mpi_allreduce_sweep blink_mpi >/dev/null
sweep="$build_dir/perf/mpi_allreduce_sweep"
lib="$build_dir/mpi_glue/libblink_mpi.so"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
flags=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
mkdir -p perf/results
csv=perf/results/interposer.csv
echo "pair,impl,ranks,bytes,time_us,busbw_gbps,wrong" >"$csv"
for np in $ranks; do
  for pair in $(seq 1 "$pairs"); do
    for impl in mpi blink; do
      extra=()
      [[ $impl == blink ]] && extra=(-x "LD_PRELOAD=$lib")
      mpirun "${flags[@]}" "${extra[@]}" -np "$np" "$sweep" -n "$iters" | tail -n +2 |
        sed "s/^/$pair,$impl,/" >>"$csv"
    done
  done
done
native=$(mpirun "${flags[@]}" -np 1 "$sweep" --overhead | cut -d, -f2)
interposed=$(mpirun "${flags[@]}" -x "LD_PRELOAD=$lib" -np 1 "$sweep" --overhead | cut -d, -f2)
/usr/bin/python3 perf/plot_interposer.py "$csv" perf/results/interposer.md perf/results/interposer.png \
  "$native" "$interposed" "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
cat perf/results/interposer.md
