#!/usr/bin/env bash
# Arrows point one way between the library's folders (DESIGN.md): a file may include
# headers of its own folder and of folders below it, never above. The order, lowest
# first, is the list below; a folder not in it is an error too (add it here, in its
# place, when you create one). mpi_glue, above them all, includes the public C API and
# runtime/interposer_support.h only.
# Usage: check_layering.sh SOURCE_ROOT
set -euo pipefail
root=${1:?usage: check_layering.sh SOURCE_ROOT}
order=(common topology treegen plan transport algorithms runtime tools)
rank_of() {
  local i
  for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo -1
}
bad=0
while IFS= read -r file; do
  rel=${file#"$root"/src/}
  folder=${rel%%/*}
  mine=$(rank_of "$folder")
  if [ "$mine" -lt 0 ]; then
    echo "$file: folder '$folder' has no place in the layering (tests/lint/check_layering.sh)"
    bad=1
    continue
  fi
  while IFS= read -r included; do
    dep=${included%%/*}
    theirs=$(rank_of "$dep")
    [ "$theirs" -lt 0 ] && continue  # not one of ours (e.g. blink/blink.h, generated headers)
    if [ "$theirs" -gt "$mine" ]; then
      echo "$file includes $included: $folder may not depend on $dep (above it)"
      bad=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(find "$root/src" -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.h' | sort)
# The interposer reaches the library through its C API and one internal header.
while IFS= read -r file; do
  while IFS= read -r included; do
    case "$included" in
      blink/blink.h | runtime/interposer_support.h) ;;
      */*)
        echo "$file includes $included: mpi_glue uses blink/blink.h and runtime/interposer_support.h only"
        bad=1
        ;;
    esac
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(find "$root/mpi_glue" -name '*.hpp' -o -name '*.cpp' -o -name '*.h' | sort)
if [ "$bad" -ne 0 ]; then
  echo "FAILED: includes point upwards between folders"
  exit 1
fi
echo "layering: every include points down or within its folder"
