#!/usr/bin/env bash
# The Horovod-style mpi4py example, with and without the interposer: the same
# losses step by step (relative difference at most 1e-4: float32 gradients summed
# in another order), and Blink's accounting shows it took the fused gradient
# Allreduce of every step.
# Usage: train_data_parallel.sh REPO_ROOT LIBBLINK_MPI NP
set -euo pipefail
root=$1 lib=$2 np=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; tail -n 40 "$f"; done; exit 1; }
python=/usr/bin/python3
"$python" -c 'import mpi4py, numpy' 2>/dev/null || fail "Debian's python3-mpi4py and python3-numpy are needed"
steps=20
"$root/scripts/run_mpi.sh" --no-blink -np "$np" -- "$python" "$root/scripts/train_data_parallel.py" --steps $steps \
  >"$work/native.out" 2>"$work/native.err" || fail "native run failed"
BLINK_DEBUG=INFO "$root/scripts/run_mpi.sh" --lib "$lib" -np "$np" -- "$python" "$root/scripts/train_data_parallel.py" --steps $steps \
  >"$work/blink.out" 2>"$work/blink.err" || fail "run with Blink failed"
paste <(grep '^step' "$work/native.out") <(grep '^step' "$work/blink.out") | awk -v want=$steps '
  { n++; a = $4; b = $8; d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a;
    if (d > 1e-4 * m + 1e-7) { print "step " $2 ": loss " a " natively, " b " with Blink"; bad = 1 } }
  END { if (n != want) { print "expected " want " steps, got " n; bad = 1 } exit bad }' ||
  fail "losses differ"
handled=$(grep -o 'blink-accounting allreduce handled=[0-9]*' "$work/blink.err" | cut -d= -f2)
[ "${handled:-0}" -ge $steps ] || fail "Blink handled ${handled:-0} Allreduce calls, expected at least $steps"
grep -q "median step time" "$work/blink.out" || fail "no step time printed"
echo "train_data_parallel: OK ($np ranks, $handled Allreduce calls by Blink; $(grep 'median' "$work/native.out" | sed 's/.*median/native median/'), $(grep 'median' "$work/blink.out" | sed 's/.*median/Blink median/'))"
