#!/usr/bin/env bash
# Regenerates the zoo part of the seed corpus (corpus/topology_json/zoo-*.json and
# corpus/plan/zoo-*) with blink-topo; the hand-written seeds (the readers' unit-test
# fixtures) are kept as they are. Run it when the file format or the zoo changes.
# Usage: tests/fuzz/make_corpus.sh BUILD_DIR   (a build tree with src/tools/blink-topo)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
topo_tool=${1:?usage: make_corpus.sh BUILD_DIR}/src/tools/blink-topo
json=$here/corpus/topology_json
plan=$here/corpus/plan
rm -f "$json"/zoo-*.json "$plan"/zoo-* "$plan"/xml-*

for machine in $("$topo_tool" list | awk '/^[a-z]/ {print $1}'); do
  "$topo_tool" export --topo "$machine" --output "$json/zoo-$machine.json"
done
"$topo_tool" export --topo dgx1-v100:2 --output "$json/zoo-dgx1-v100-x2.json"
"$topo_tool" export --topo dgx1-v100 --gpus 0,1,2,4 --output "$json/zoo-dgx1-v100-0124.json"

# Planning seeds: 4 parameter bytes (collective, root, element count; see
# fuzz_plan.cpp) before a topology small enough to plan within the target's limits.
plan_seed() {  # NAME PARAMETER-BYTES-AS-OCTAL-ESCAPES BLINK-TOPO-ARGS...
  local name=$1 params=$2
  shift 2
  { printf "$params"; "$topo_tool" export "$@"; } > "$plan/zoo-$name"
}
plan_seed broadcast-dgx1v-0124 '\000\000\000\100' --topo dgx1-v100 --gpus 0,1,2,4
plan_seed reduce-dgx1p '\001\003\001\000' --topo dgx1-p100
plan_seed allgather-dgx1v-01234 '\002\000\000\007' --topo dgx1-v100 --gpus 0,1,2,3,4
plan_seed reducescatter-pcie '\003\000\000\020' --topo pcie-8gpu --gpus 0,1,2
plan_seed allreduce-dgx1v '\004\000\017\377' --topo dgx1-v100
plan_seed allreduce-dgxa100-4 '\004\001\000\001' --topo dgx-a100 --gpus 0,1,2,3
plan_seed broadcast-hgx-h100 '\000\002\000\200' --topo hgx-h100
plan_seed allreduce-2nodes '\004\000\000\100' --topo dgx1-v100:2 --gpus 0,1,8,9
plan_seed broadcast-mwu-dgx1v '\005\000\000\100' --topo dgx1-v100 --gpus 0,1,2,4,5
plan_seed allreduce-minimize-dgx1p '\016\000\001\000' --topo dgx1-p100
plan_seed allgather-mwu-minimize-a100 '\021\000\000\010' --topo dgx-a100 --gpus 0,1,2
for seed in "$here"/corpus/nccl_xml/fixture-*.xml; do
  name=$(basename "$seed" .xml)
  { printf '\004\000\000\100'; cat "$seed"; } > "$plan/xml-allreduce-$name"
done
ls -l "$json" "$plan" | awk '{s += $5} END {print "corpus bytes:", s}'
