#!/usr/bin/env bash
# mpi_mixed_datatypes gives its ranks different datatypes of equal signature in one
# call (legal MPI). Under LD_PRELOAD of libblink_mpi.so every run must finish with
# exact results, print what the native run prints, and the accounting (rank 0, at
# MPI_Finalize, BLINK_DEBUG=INFO) must show where each call went (the native run
# reduces plain types only: Open MPI rejects predefined ops on derived types, which
# the interposer reduces as their predefined element type, in Blink or below its
# thresholds in MPI):
# - default thresholds: every call handled by Blink or below its threshold, except
#   the Bcasts whose signature is no run of one predefined type (fallback.datatype,
#   as many as the program reports), and Blink handled some of every collective;
# - BLINK_MPI_MIN_BYTES=0: Blink handled every call the program made but those;
# - one rank with another BLINK_MPI_MIN_BYTES, or an invalid one: the ranks disable
#   Blink together (one warning naming the setting) instead of hanging, and MPI
#   does every call.
# Usage: interposer_mixed_datatypes.sh LIBBLINK_MPI PROGRAM NP MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
lib=$1 prog=$2 np=$3 mpiexec=$4
shift 4
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

preload=$lib
asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
[ -n "$asan" ] && preload="$asan:$lib"

fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; tail -n 40 "$f"; done; exit 1; }
# launch NAME [VAR=VALUE...]: all ranks alike (PROGRAM_ARGS, if set, after the program). launch_split NAME VAR=VALUE: rank 0 only
# gets the extra setting.
launch() {
  local name=$1
  shift
  local exports=()
  for kv in "$@"; do exports+=(-x "$kv"); done
  "$mpiexec" "${flags[@]}" "${exports[@]}" -np "$np" "$prog" ${program_args:-} >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: the program failed (exit $?)"
}
launch_split() {
  local name=$1 extra=$2
  local common=(-x LD_PRELOAD="$preload" -x BLINK_DEBUG=INFO)
  "$mpiexec" "${flags[@]}" "${common[@]}" -x "$extra" -np 1 "$prog" ${program_args:-} : "${common[@]}" -np $((np - 1)) "$prog" ${program_args:-} \
    >"$work/$name.out" 2>"$work/$name.err" || fail "$name: the program failed (exit $?)"
}
# count RUN COLLECTIVE FIELD: a number from the accounting line, 0 when absent.
count() {
  local line
  line=$(grep "blink-accounting $2 " "$work/$1.err" || true)
  [ -n "$line" ] || fail "$1: no accounting line for $2"
  echo "$line" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}
# other_fallbacks RUN COLLECTIVE: the sum of its fallback counts other than
# below_threshold and datatype.
other_fallbacks() {
  grep "blink-accounting $2 " "$work/$1.err" | tr ' ' '\n' |
    awk -F= '$1 ~ /^fallback\./ && $1 != "fallback.below_threshold" && $1 != "fallback.datatype" {n += $2} END {print n + 0}'
}
# calls COLLECTIVE: how many calls of it the program made (its own count).
calls() {
  tr ' ' '\n' <"$work/native.out" | awk -F= -v k="$1" '$1 == k {print $2}'
}

# Open MPI rejects predefined ops on derived types: natively, only plain reductions.
program_args=--plain-reductions launch native
launch preload LD_PRELOAD="$preload" BLINK_DEBUG=INFO
launch preload_all LD_PRELOAD="$preload" BLINK_DEBUG=INFO BLINK_MPI_MIN_BYTES=0
# Disabled, Blink hands every call to MPI untouched: plain reductions only.
program_args=--plain-reductions launch_split disagree BLINK_MPI_MIN_BYTES=0
program_args=--plain-reductions launch_split invalid BLINK_MPI_MIN_BYTES=lots

grep -q " 0 wrong$" "$work/native.out" || fail "the native run is wrong"
for run in preload preload_all disagree invalid; do
  cmp -s "$work/native.out" "$work/$run.out" || fail "$run: output differs from the native run"
done
not_run=$(calls bcast_not_run)
[ "${not_run:-0}" -gt 0 ] || fail "the program reports no Bcast of a type that is no run"
for coll in allreduce bcast reduce allgather reduce_scatter_block; do
  n=$(calls $coll) expect_datatype=0
  [ "${n:-0}" -gt 0 ] || fail "the program reports no $coll calls"
  [ $coll = bcast ] && expect_datatype=$not_run
  handled=$(count preload $coll handled) small=$(count preload $coll fallback.below_threshold)
  [ "$handled" -gt 0 ] || fail "preload: Blink handled no $coll"
  [ "$(other_fallbacks preload $coll)" -eq 0 ] || fail "preload: a $coll fell back for a reason other than its size or type"
  for run in preload preload_all; do
    [ "$(count $run $coll fallback.datatype)" -eq $expect_datatype ] ||
      fail "$run: $(count $run $coll fallback.datatype) ${coll}s fell back for their type, expected $expect_datatype"
  done
  [ $((handled + small + expect_datatype)) -eq "$n" ] ||
    fail "preload: $coll handled $handled + small $small + not a run $expect_datatype != $n calls"
  [ "$(count preload_all $coll handled)" -eq $((n - expect_datatype)) ] ||
    fail "BLINK_MPI_MIN_BYTES=0: Blink handled $(count preload_all $coll handled) of $n ${coll}s"
  for run in disagree invalid; do
    [ "$(count $run $coll handled)" -eq 0 ] || fail "$run: Blink still handled $coll"
    [ "$(count $run $coll fallback.disabled)" -eq "$n" ] || fail "$run: $coll not all counted as disabled"
  done
done
[ "$(grep -c "disagree on BLINK_MPI_MIN_BYTES" "$work/disagree.err")" -eq 1 ] ||
  fail "disagreeing ranks: not exactly one warning naming BLINK_MPI_MIN_BYTES"
[ "$(grep -c "disagree on BLINK_MPI_DISABLE (or some rank has an invalid" "$work/invalid.err")" -eq 1 ] ||
  fail "a rank with an invalid setting: not exactly one warning of the disagreement"
echo "interposer_mixed_datatypes: OK ($np ranks; $(tail -n 1 "$work/native.out"))"
