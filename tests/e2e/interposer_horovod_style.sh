#!/usr/bin/env bash
# A Horovod-style controller loop (mpi4py; bit-vector MPI_Allreduce with MPI_BAND /
# MPI_BOR on MPI_LONG_LONG_INT, MPI_Allgatherv of uneven byte lists, MPI_Barrier) run
# natively and under LD_PRELOAD of libblink_mpi.so: the program checks its own
# results and every run must print the same lines. With the default settings Blink
# handles every one of these calls (the default AllReduce threshold is 0 bytes: no
# Allreduce falls back, for its size, op or type); with a threshold above the 8-32 byte
# vectors (BLINK_MPI_MIN_BYTES=allreduce=64) every Allreduce goes to MPI by size while
# Blink still takes the Allgathervs and barriers.
# Usage: interposer_horovod_style.sh LIBBLINK_MPI PROGRAM.py NP MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
lib=$1 prog=$2 np=$3 mpiexec=$4
shift 4
flags=("$@")
python=/usr/bin/python3  # Debian's, with mpi4py and numpy (ENVIRONMENT.md)
if ! "$python" -c 'import mpi4py, numpy' 2>/dev/null; then
  echo "interposer_horovod_style: SKIPPED (no mpi4py/numpy for $python)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
preload=$lib
asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
[ -n "$asan" ] && preload="$asan:$lib"

fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; tail -n 30 "$f"; done; exit 1; }
launch() {
  local name=$1
  shift
  local exports=()
  for kv in "$@"; do exports+=(-x "$kv"); done
  "$mpiexec" "${flags[@]}" "${exports[@]}" -np "$np" "$python" "$prog" 300 \
    >"$work/$name.out" 2>"$work/$name.err" || fail "$name: the program failed (exit $?)"
}
count() {
  local line
  line=$(grep "blink-accounting $2 " "$work/$1.err" || true)
  [ -n "$line" ] || fail "$1: no accounting line for $2"
  echo "$line" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}

launch native
launch preload LD_PRELOAD="$preload" BLINK_DEBUG=INFO
launch preload_threshold LD_PRELOAD="$preload" BLINK_DEBUG=INFO BLINK_MPI_MIN_BYTES=allreduce=64
grep -q "^300 cycles, 0 wrong$" "$work/native.out" || fail "the native run is wrong"
for run in preload preload_threshold; do
  cmp -s "$work/native.out" "$work/$run.out" || fail "$run: output differs from the native run"
  # 300 cycles: a BAND and a BOR each, one Allgatherv, a barrier every 50th.
  for why in op datatype; do
    [ "$(count $run allreduce fallback.$why)" -eq 0 ] || fail "$run: allreduces fell back ($why)"
  done
  [ "$(count $run allgatherv handled)" -eq 300 ] || fail "$run: Blink did not handle every allgatherv"
  [ "$(count $run barrier handled)" -ge 6 ] || fail "$run: Blink did not handle the barriers"
done
[ "$(count preload allreduce handled)" -ge 600 ] || fail "Blink handled fewer than 600 allreduces"
[ "$(count preload allreduce fallback.below_threshold)" -eq 0 ] ||
  fail "the default threshold left allreduces to MPI"
[ "$(count preload_threshold allreduce fallback.below_threshold)" -ge 600 ] ||
  fail "BLINK_MPI_MIN_BYTES=allreduce=64 did not send the 8-32 byte allreduces to MPI"
echo "interposer_horovod_style: OK ($np ranks; $(tail -n 1 "$work/native.out"))"
