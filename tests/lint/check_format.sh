#!/usr/bin/env bash
# Fails when a tracked C/C++/CUDA source differs from what clang-format makes of it.
# Usage: check_format.sh CLANG_FORMAT SOURCE_DIR   (fix with: scripts/format.sh)
set -euo pipefail
clang_format=$1
cd "$2"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
    '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh')
else
  mapfile -t files < <(find src include mpi_glue tests perf -name '*.c' -o -name '*.cpp' \
    -o -name '*.h' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh')
fi
bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "check_format: ${#files[@]} files formatted"
exit "$bad"
