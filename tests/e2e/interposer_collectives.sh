#!/usr/bin/env bash
# A program that knows only mpi.h, run natively and under LD_PRELOAD of
# libblink_mpi.so: every run must verify all its own results and print the same
# lines; the accounting (BLINK_DEBUG=INFO, rank 0 at MPI_Finalize) must show
# Blink took every interposed collective (Iallreduce and Ibcast excepted: MPI's, counted
# as nonblocking) and left the user-defined op, MAXLOC and
# types that are no run of one predefined type (MPI_DOUBLE_INT) to MPI; BLINK_MPI_DISABLE=1 must hand everything to MPI.
# Usage: interposer_collectives.sh LIBBLINK_MPI|linked PROGRAM NP MPIEXEC [MPIEXEC_FLAGS...]
# ("linked": PROGRAM is linked with -lblink_mpi; the "native" run then uses
# BLINK_MPI_DISABLE=1 as its reference.)
set -euo pipefail
lib=$1 prog=$2 np=$3 mpiexec=$4
shift 4
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

preload_var=()
if [ "$lib" != linked ]; then
  preload=$lib
  asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
  [ -n "$asan" ] && preload="$asan:$lib"
  preload_var=(LD_PRELOAD="$preload")
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
# count RUN COLLECTIVE FIELD: a number from the accounting line, 0 when absent.
count() {
  local line
  line=$(grep "blink-accounting $2 " "$work/$1.err" || true)
  [ -n "$line" ] || fail "$1: no accounting line for $2"
  echo "$line" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}

if [ "$lib" = linked ]; then
  launch native BLINK_MPI_DISABLE=1
else
  launch native
fi
launch preload "${preload_var[@]}" BLINK_DEBUG=INFO
launch preload_all "${preload_var[@]}" BLINK_DEBUG=INFO BLINK_MPI_MIN_BYTES=0
launch disabled "${preload_var[@]}" BLINK_DEBUG=INFO BLINK_MPI_DISABLE=1

grep -q " 0 wrong$" "$work/native.out" || fail "the native run is wrong"
for run in preload preload_all disabled; do
  cmp -s "$work/native.out" "$work/$run.out" || fail "$run: output differs from the native run"
done
for coll in allreduce bcast reduce allgather reduce_scatter_block; do
  [ "$(count preload $coll handled)" -gt 0 ] || fail "preload: Blink handled no $coll"
  # The default AllReduce threshold is 0 bytes; the others leave small calls to MPI.
  if [ $coll = allreduce ]; then
    [ "$(count preload $coll fallback.below_threshold)" -eq 0 ] || fail "preload: a small $coll fell back"
  else
    [ "$(count preload $coll fallback.below_threshold)" -gt 0 ] || fail "preload: no small $coll fell back"
  fi
  [ "$(count preload_all $coll fallback.below_threshold)" -eq 0 ] || fail "BLINK_MPI_MIN_BYTES=0 still left small ${coll}s to MPI"
  [ "$(count disabled $coll handled)" -eq 0 ] || fail "BLINK_MPI_DISABLE=1: Blink still handled $coll"
  [ "$(count disabled $coll fallback.disabled)" -gt 0 ] || fail "BLINK_MPI_DISABLE=1: $coll not counted as disabled"
done
# The collectives built on the ones above, and the barrier (no size threshold by default).
for coll in allgatherv gather gatherv reduce_scatter barrier; do
  [ "$(count preload $coll handled)" -gt 0 ] || fail "preload: Blink handled no $coll"
  [ "$(count disabled $coll handled)" -eq 0 ] || fail "BLINK_MPI_DISABLE=1: Blink still handled $coll"
  [ "$(count disabled $coll fallback.disabled)" -gt 0 ] || fail "BLINK_MPI_DISABLE=1: $coll not counted as disabled"
done
# Nonblocking collectives stay MPI's, counted as such.
for coll in iallreduce ibcast; do
  [ "$(count preload $coll handled)" -eq 0 ] || fail "preload: Blink handled $coll"
  [ "$(count preload $coll fallback.nonblocking)" -gt 0 ] || fail "preload: $coll not counted as nonblocking"
done
[ "$(count preload allreduce fallback.op)" -gt 0 ] || fail "the user-defined op did not fall back"
[ "$(count preload allreduce fallback.datatype)" -gt 0 ] || fail "MPI_DOUBLE_INT did not fall back"
[ "$(count preload bcast fallback.datatype)" -gt 0 ] || fail "the MPI_DOUBLE_INT bcast did not fall back"
echo "interposer_collectives: OK ($np ranks; $(tail -n 1 "$work/native.out"))"
