#!/usr/bin/env bash
# blink-topo from the outside: what a user types, checked against what it must print.
# Usage: topo_tool.sh BLINK_TOPO_BINARY
set -uo pipefail
topo=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && cat "$work/out"; [ -f "$work/err" ] && cat "$work/err"; exit 1; }
run() { "$topo" "$@" >"$work/out" 2>"$work/err"; }

# This machine has no GPU: discovery gives a CPU-only node.
env -u BLINK_TOPO -u BLINK_TOPO_GPUS "$topo" show >"$work/out" 2>"$work/err" || fail "show on this machine exited $?"
grep -q "CPU-only" "$work/out" || fail "show on this machine does not say CPU-only"
grep -q "^Topology .*: 1 node" "$work/out" || fail "show has no summary line"

# A fragment of a DGX-1V renders with graphviz.
run export --topo dgx1-v100 --gpus 0,1,2,4 --format dot || fail "export dot exited $?"
grep -q '"gpu4"' "$work/out" || fail "the dot output lacks gpu4"
grep -q '"gpu3"' "$work/out" && fail "the dot output has gpu3, which is outside the allocation"
if command -v dot >/dev/null; then
  dot -Tsvg "$work/out" >"$work/frag.svg" || fail "dot -Tsvg rejected the output"
  grep -q "<svg" "$work/frag.svg" || fail "dot produced no SVG"
fi

# JSON export, then the exported file used as --topo, gives the same summary.
run export --topo dgx1-v100:2 --output "$work/cluster.json" || fail "export json exited $?"
run show --topo dgx1-v100:2 && cp "$work/out" "$work/show_zoo"
run show --topo "$work/cluster.json" || fail "show of the exported file exited $?"
cmp -s "$work/out" "$work/show_zoo" || fail "the exported file does not describe the same machine"

# BLINK_TOPO and BLINK_TOPO_GPUS are the defaults of --topo and --gpus.
BLINK_TOPO=dgx1-p100 BLINK_TOPO_GPUS=0,5 "$topo" show >"$work/out" 2>&1 || fail "env defaults exited $?"
grep -q "^Topology dgx1-p100\[0,5\]: 1 node, 2 gpu" "$work/out" || fail "BLINK_TOPO/BLINK_TOPO_GPUS ignored"

# Bad input: exit 1 with a message naming the problem; bad usage: exit 2.
run show --topo dgx9; [ $? -eq 1 ] || fail "unknown zoo name should exit 1"
grep -q "known: dgx1-p100" "$work/err" || fail "unknown zoo name does not list the known ones"
run show --topo /nonexistent.json; [ $? -eq 1 ] || fail "missing file should exit 1"
run show --topo dgx1-v100 --gpus 0,9; [ $? -eq 1 ] || fail "GPU outside the machine should exit 1"
grep -q "GPU 9 is not in topology" "$work/err" || fail "no message for GPU 9"
run show --topo dgx1-v100 --gpus 0,1,1; [ $? -eq 1 ] || fail "a repeated GPU should exit 1"
grep -q "1 repeats" "$work/err" || fail "no message for a repeated GPU"
BLINK_TOPO=dgx1-v100 BLINK_TOPO_GPUS=2,2 "$topo" show >"$work/out" 2>"$work/err"
[ $? -eq 1 ] || fail "a repeated GPU in BLINK_TOPO_GPUS should exit 1"
grep -q "BLINK_TOPO_GPUS" "$work/err" || fail "no message naming BLINK_TOPO_GPUS"
printf '%s\n' '{"format": "blink-topology", "version": 1, "devices": [{"id": "a", "kind": "gpu"},' \
  '{"id": "b", "kind": "gpu"}], "links": [{"from": "a", "to": "b", "kind": "pcie", "gbps": 0}]}' \
  >"$work/slow.json"
run show --topo "$work/slow.json"; [ $? -eq 1 ] || fail "a bandwidth of 0 should exit 1"
grep -q "slow.json: links\[0\].gbps: " "$work/err" || fail "no message naming slow.json and gbps"
echo '{"format": "blink-topology", "version": 1, "devices": [' >"$work/trunc.json"
run show --topo "$work/trunc.json"; [ $? -eq 1 ] || fail "truncated file should exit 1"
grep -q "trunc.json: line " "$work/err" || fail "truncated file error lacks file and line"
run export --format svg --topo dgx2; [ $? -eq 2 ] || fail "--format svg should exit 2"
run frobnicate; [ $? -eq 2 ] || fail "unknown command should exit 2"
run; [ $? -eq 2 ] || fail "no command should exit 2"

run list || fail "list exited $?"
for m in dgx1-p100 dgx1-v100 dgx2 dgx-a100 hgx-h100 pcie-8gpu; do
  grep -q "^$m " "$work/out" || fail "list lacks $m"
done
run links || fail "links exited $?"
grep -q "^nvlink2 .*25" "$work/out" || fail "links lacks nvlink2 at 25 GB/s"
run links --link-gbps nvlink2=22.5 && grep -q "^nvlink2 .*22.5" "$work/out" || fail "--link-gbps ignored"
echo "topo_tool: OK"
