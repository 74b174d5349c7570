#!/usr/bin/env bash
# Formats every tracked C, C++ and CUDA source with the root .clang-format.
# Usage: scripts/format.sh [--help]
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,3p' "$0" | sed 's/^# //'; exit 0 ;; esac
cd "$(dirname "$0")/.."
git ls-files --cached --others --exclude-standard -- '*.c' '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' \
  | xargs -r clang-format -i
