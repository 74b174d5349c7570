#!/usr/bin/env bash
# The interposer must be invisible to a program's stdout, announce itself on stderr
# only when BLINK_DEBUG=INFO, and report a bad setting without breaking the job.
# Usage: interposer_passthrough.sh LIBBLINK_MPI PROGRAM NP MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
lib=$1 prog=$2 np=$3 mpiexec=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# launch NAME [VAR=VALUE...]: one run, its stdout and stderr kept as $work/NAME.{out,err}
launch() {
  local name=$1
  shift
  local exports=()
  for kv in "$@"; do exports+=(-x "$kv"); done  # -x: also reaches ranks on other hosts
  "$mpiexec" "${flags[@]}" "${exports[@]}" -np "$np" "$prog" >"$work/$name.out" 2>"$work/$name.err"
}
flags=("$@")

# In an AddressSanitizer build the sanitizer's runtime must be loaded first.
preload=$lib
asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
[ -n "$asan" ] && preload="$asan:$lib"

launch native
launch preload_quiet LD_PRELOAD="$preload"
launch preload_info LD_PRELOAD="$preload" BLINK_DEBUG=INFO
launch preload_bad LD_PRELOAD="$preload" BLINK_DEBUG=LOUD

fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; cat "$f"; done; exit 1; }

grep -q "rank 0 of $np: sums" "$work/native.out" || fail "native run printed no result"
grep -q WRONG "$work/native.out" && fail "native run computed a wrong result"
for v in preload_quiet preload_info preload_bad; do
  cmp -s "$work/native.out" "$work/$v.out" || fail "$v: stdout differs from the native run"
done
grep -q "blink" "$work/preload_quiet.err" && fail "the interposer printed on stderr without BLINK_DEBUG"
grep -q "INFO Blink [0-9.]* (git" "$work/preload_info.err" || fail "no build banner with BLINK_DEBUG=INFO"
[ "$(grep -c 'INFO Blink' "$work/preload_info.err")" -eq 1 ] || fail "the banner must come from rank 0 only"
grep -q "BLINK_DEBUG='LOUD' is invalid" "$work/preload_bad.err" || fail "bad BLINK_DEBUG was not reported"
echo "interposer_passthrough: OK ($np ranks)"
