#!/usr/bin/env bash
# CUDA-aware MPI calls under LD_PRELOAD of libblink_mpi.so, with the fake CUDA driver
# first on LD_LIBRARY_PATH: collectives on "device" buffers (on every rank, or on
# rank 1 only) must go to the MPI library on every rank, give the right results and
# be counted as fallback.memory_type; a later call on host buffers is Blink's.
# Usage: interposer_memory_types.sh LIBBLINK_MPI PROGRAM FAKE_CUDA_DIR NP MPIEXEC [FLAGS...]
set -euo pipefail
lib=$1 prog=$2 fake_dir=$3 np=$4 mpiexec=$5
shift 5
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

preload=$lib
asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
[ -n "$asan" ] && preload="$asan:$lib"

fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; tail -n 40 "$f"; done; exit 1; }
# count RUN COLLECTIVE FIELD: a number from the accounting line, 0 when absent.
count() {
  local line
  line=$(grep "blink-accounting $2 " "$work/$1.err" || true)
  [ -n "$line" ] || fail "$1: no accounting line for $2"
  echo "$line" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}

for mode in all one; do
  # A split decision would leave ranks waiting in different libraries: fail fast.
  "$mpiexec" "${flags[@]}" -x LD_PRELOAD="$preload" -x LD_LIBRARY_PATH="$fake_dir" \
    -x BLINK_DEBUG=INFO -x BLINK_TIMEOUT_S=30 -np "$np" "$prog" "$mode" \
    >"$work/$mode.out" 2>"$work/$mode.err" || fail "$mode: the program failed (exit $?)"
  grep -q "^0 wrong$" "$work/$mode.out" || fail "$mode: wrong results"
  [ "$(count "$mode" allreduce fallback.memory_type)" -eq 2 ] ||
    fail "$mode: the two device allreduces were not counted as fallback.memory_type"
  [ "$(count "$mode" bcast fallback.memory_type)" -eq 1 ] ||
    fail "$mode: the device bcast was not counted as fallback.memory_type"
  [ "$(count "$mode" allreduce handled)" -eq 1 ] || fail "$mode: Blink did not take the host call"
done
grep -q "allreduce of 262144 bytes goes to MPI: rank 1 passed CUDA device memory (sendbuff)" \
  "$work/one.err" || fail "one: the fallback does not name rank 1 and its buffer"
echo "interposer_memory_types: OK ($np ranks)"
