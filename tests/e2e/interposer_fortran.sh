#!/usr/bin/env bash
# A Fortran program (mpif.h, `use mpi` or `use mpi_f08`, tests/e2e/fortran) run
# natively and under LD_PRELOAD of libblink_mpi.so: every run must verify all its
# own results and print the same line; the accounting (BLINK_DEBUG=INFO, rank 0 at
# MPI_Finalize) must show Blink took each collective the program calls through the
# Fortran bindings, Fortran's INTEGER, REAL and DOUBLE PRECISION reductions included,
# and BLINK_MPI_DISABLE=1 must hand them all to MPI.
# Usage: interposer_fortran.sh LIBBLINK_MPI|linked PROGRAM NP MPIEXEC [MPIEXEC_FLAGS...]
# ("linked": PROGRAM is linked with libblink_mpi.so; the "native" run then uses
# BLINK_MPI_DISABLE=1 as its reference.)
# Exits 77 (a skip) when PROGRAM was not built: no mpifort at configure time.
set -euo pipefail
lib=$1 prog=$2 np=$3 mpiexec=$4
shift 4
flags=("$@")
if [ ! -x "$prog" ]; then
  echo "SKIP: $prog was not built: CMake found no mpifort (install gfortran, reconfigure)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

preload_var=()
if [ "$lib" != linked ]; then
  preload=$lib
  asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
  [ -n "$asan" ] && preload="$asan:$lib"
  preload_var=(LD_PRELOAD="$preload")
else
  # An ASan build of libblink_mpi.so needs its runtime loaded first.
  asan=$(ldd "$prog" | awk '/libasan/ {print $3}')
  [ -n "$asan" ] && preload_var=(LD_PRELOAD="$asan")
fi

fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; tail -n 40 "$f"; done; exit 1; }
launch() {
  local name=$1
  shift
  local exports=()
  for kv in "$@"; do exports+=(-x "$kv"); done
  "$mpiexec" "${flags[@]}" "${exports[@]}" -np "$np" "$prog" >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: the program failed (exit $?)"
}
# count RUN COLLECTIVE FIELD: a number from the accounting line, 0 when absent;
# "none" when the run printed no line for COLLECTIVE.
count() {
  local line
  line=$(grep "blink-accounting $2 " "$work/$1.err" || true)
  [ -n "$line" ] || { echo none; return; }
  echo "$line" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}

if [ "$lib" = linked ]; then
  launch native "${preload_var[@]}" BLINK_MPI_DISABLE=1
else
  launch native
fi
launch preload "${preload_var[@]}" BLINK_DEBUG=INFO
launch disabled "${preload_var[@]}" BLINK_DEBUG=INFO BLINK_MPI_DISABLE=1

grep -q " 0 wrong$" "$work/native.out" || fail "the native run is wrong"
for run in preload disabled; do
  cmp -s "$work/native.out" "$work/$run.out" || fail "$run: output differs from the native run"
done
# The collectives libblink_mpi.so interposes in C today must carry an accounting
# line; the program calls the others too (Allgatherv, Gather, Gatherv, Barrier,
# Reduce_scatter), and where this libblink_mpi.so interposes them in C, their
# accounting line must show Blink took them as well.
checked=()
for coll in allreduce bcast reduce allgather reduce_scatter_block \
            allgatherv gather gatherv barrier reduce_scatter; do
  handled=$(count preload "$coll" handled)
  if [ "$handled" = none ]; then
    case $coll in
      allgatherv | gather | gatherv | barrier | reduce_scatter) continue ;;
    esac
    fail "preload: no accounting line for $coll"
  fi
  [ "$handled" -gt 0 ] || fail "preload: Blink handled no $coll called from Fortran"
  [ "$(count disabled "$coll" handled)" = 0 ] || fail "BLINK_MPI_DISABLE=1: Blink still handled $coll"
  [ "$(count disabled "$coll" fallback.disabled)" -gt 0 ] ||
    fail "BLINK_MPI_DISABLE=1: $coll not counted as disabled"
  checked+=("$coll")
done
# INTEGER, REAL and DOUBLE PRECISION are runs of types Blink reduces.
for coll in allreduce reduce reduce_scatter_block; do
  [ "$(count preload $coll fallback.datatype)" -eq 0 ] || fail "a Fortran type of $coll fell back"
done
echo "interposer_fortran: OK ($np ranks; $(tail -n 1 "$work/native.out"); Blink took ${checked[*]})"
