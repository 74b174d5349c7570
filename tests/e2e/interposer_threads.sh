#!/usr/bin/env bash
# Concurrent collectives on different communicators from several threads, under
# the interposer: right results, and Blink handled them (not a silent fallback).
# Usage: interposer_threads.sh LIBBLINK_MPI PROGRAM NP MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
lib=$1 prog=$2 np=$3 mpiexec=$4
shift 4
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
preload=$lib
asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
[ -n "$asan" ] && preload="$asan:$lib"
if ! "$mpiexec" "$@" -x LD_PRELOAD="$preload" -x BLINK_DEBUG=INFO -np "$np" "$prog" >"$out" 2>"$err"; then
  echo "FAIL: the program failed"; cat "$out" "$err"; exit 1
fi
grep -q ": 0 wrong$" "$out" || { echo "FAIL: wrong results"; cat "$out" "$err"; exit 1; }
handled=$(grep -o 'blink-accounting allreduce handled=[0-9]*' "$err" | cut -d= -f2)
[ "${handled:-0}" -ge 24 ] || { echo "FAIL: Blink handled ${handled:-0} of 24 Allreduce calls"; cat "$err"; exit 1; }
echo "interposer_threads: OK ($(cat "$out"))"
