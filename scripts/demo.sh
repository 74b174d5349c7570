#!/usr/bin/env bash
# The main job, from a fresh Debian machine: installs missing packages, builds
# Blink, shows what it sees and decides on this machine, and benchmarks Blink's
# AllReduce against native MPI here (perf/blink_perf: 4 ranks, host buffers,
# float32 sum, 1 KiB..64 MiB, BLINK_DEBUG=INFO for the trees chosen; ~1 min).
#
# Usage: scripts/demo.sh [--help]
set -euo pipefail
source "$(dirname "$0")/common.sh"
case "${1:-}" in
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

blink_setup_and_build
bin=$blink_build_dir/src/tools

echo
echo "== This build"
"$bin/blink-info"

echo
echo "== The machine Blink sees here"
"$bin/blink-topo" show

echo
echo "== A fragmented DGX-1V allocation (GPUs 0,1,2,4), from the built-in zoo"
"$bin/blink-topo" show --topo dgx1-v100 --gpus 0,1,2,4

echo
echo "== Trees Blink packs on that fragment: broadcast from GPU 0 (NVLink and PCIe together)"
"$bin/blink-plan" --topo dgx1-v100 --gpus 0,1,2,4 --root 0

echo
echo "== AllReduce bounds there: reduce+broadcast vs ReduceScatter+AllGather (NVLink only)"
"$bin/blink-plan" --topo dgx1-v100 --gpus 0,1,2,4 --links nvlink --collective allreduce

# ---- blink_perf: Blink against native MPI on this machine ---------------------------
perf=$blink_build_dir/perf/blink_perf
if [ ! -x "$perf" ]; then
  echo "demo.sh: $perf was not built (is BLINK_BUILD_PERF off in $blink_build_dir?)" >&2
  exit 1
fi
np=4
# As root (containers) Open MPI wants these; more ranks than cores need oversubscription,
# and yielding, unbound ranks share the cores fairly.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpirun_flags=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
sweep=(--collective allreduce -d float32 -o sum -b 1K -e 64M --baseline mpi)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# run_perf NAME [mpirun options...]: one sweep; stdout to the terminal and $work/NAME.out,
# stderr (Blink's diagnostics) to $work/NAME.err, shown if the run fails.
run_perf() {
  local name=$1
  shift
  if ! mpirun "${mpirun_flags[@]}" "$@" -np "$np" "$perf" "${sweep[@]}" \
      2>"$work/$name.err" | tee "$work/$name.out"; then
    cat "$work/$name.err" >&2
    echo "demo.sh: blink_perf failed" >&2
    exit 1
  fi
}
# ratios FILE: per size, busbw of Blink and MPI and their ratio, from blink_perf's table.
ratios() {
  printf '%12s  %10s %10s %6s   %10s %10s %6s\n' "size (B)" "blink out" "mpi out" "ratio" \
    "blink in" "mpi in" "ratio"
  awk '!/^#/ && NF == 23 { printf "%12s  %10s %10s %6s   %10s %10s %6s\n", $1, $8, $16, $22, $12, $20, $23 }' "$1"
  grep -E '^# (mpi: )?Avg bus bandwidth|^# Ratio blink/mpi' "$1"
}

echo
echo "== blink_perf: AllReduce of float32 sums, $np ranks on this machine, host buffers,"
echo "   1 KiB..64 MiB, Blink and then native MPI (PMPI_*) at each size, same job and buffers"
run_perf default -x BLINK_DEBUG=INFO

echo
echo "== What Blink decided (BLINK_DEBUG=INFO, on stderr): the communicator, the trees"
echo "   packed (first time each) and the plan chosen for every size"
sed -n 's/^\[blink [^]]*\] INFO //p' "$work/default.err" |
  awk '/^communicator|^planner:/ { print; next }
       /^treegen:/ { key = $0; sub(/ \(.*/, "", key); if (!seen[key]++) print }'

echo
echo "== Blink against native MPI: bus bandwidth (GB/s) and the ratio blink/mpi, per size"
ratios "$work/default.out"

# Open MPI allocates temporaries on every large Allreduce, and fresh pages are slow on
# some machines (ENVIRONMENT.md); glibc's malloc can be told to keep them instead.
tunables=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295
echo
echo "== The same, with GLIBC_TUNABLES=$tunables"
echo "   (malloc keeps what Open MPI frees for reuse: the fairer native baseline)"
run_perf tuned -x GLIBC_TUNABLES="$tunables" >/dev/null
ratios "$work/tuned.out"
