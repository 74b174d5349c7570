#!/usr/bin/env bash
# libblink.so exports the C API and nothing else: every defined dynamic symbol is a
# blink* C function (no C++ names, which would tie programs to Blink's insides).
# Usage: exported_symbols.sh LIBBLINK_SO
set -euo pipefail
lib=${1:?usage: exported_symbols.sh LIBBLINK_SO}
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
[ -n "$symbols" ] || { echo "FAIL: $lib exports nothing"; exit 1; }
others=$(grep -v '^blink[A-Z]' <<<"$symbols" || true)
if [ -n "$others" ]; then
  echo "FAIL: $lib exports symbols outside the C API:"
  head -20 <<<"$others"
  echo "($(wc -l <<<"$others") in all)"
  exit 1
fi
for wanted in blinkCommInitFromMPI blinkAllReduce blinkGetErrorString; do
  grep -qx "$wanted" <<<"$symbols" || { echo "FAIL: $lib does not export $wanted"; exit 1; }
done
echo "ok: $(wc -l <<<"$symbols") symbols, all blink* C functions"
