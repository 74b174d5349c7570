#!/usr/bin/env bash
# The README's configuration table must be exactly what the code's registry says.
# Usage: readme_matches_code.sh README.md BLINK_INFO
set -euo pipefail
readme=$1 info=$2
documented=$(sed -n '/<!-- env-table:begin -->/,/<!-- env-table:end -->/p' "$readme" | sed '1d;$d')
generated=$("$info" --env-markdown)
if [ "$documented" != "$generated" ]; then
  echo "README.md's BLINK_* table is out of date; replace it with the output of"
  echo "  blink-info --env-markdown"
  diff <(echo "$documented") <(echo "$generated") || true
  exit 1
fi
echo "readme_matches_code: OK"
