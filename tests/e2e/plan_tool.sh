#!/usr/bin/env bash
# blink-plan from the outside: its JSON interface, its renderings and its errors.
# Usage: plan_tool.sh BLINK_PLAN_BINARY
set -uo pipefail
plan=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }
run() { "$plan" "$@" >"$work/out" 2>"$work/err"; }
py=/usr/bin/python3

# The stable JSON interface: keys, arcs as [from, to] GPU indices, rate == bound.
run --topo dgx1-v100 --gpus 0,1,2,4 --root 0 --method exact --format json || fail "json exited $?"
"$py" - "$work/out" <<'PY' || fail "the JSON does not have the documented shape"
import json, sys
doc = json.load(open(sys.argv[1]))
for key in ("rate_gbps", "bound_gbps", "method", "millis", "trees"):
    assert key in doc, key
assert doc["method"] == "exact" and doc["root"] == 0
assert abs(doc["rate_gbps"] - doc["bound_gbps"]) <= 1e-9 * doc["bound_gbps"], doc
assert abs(doc["bound_gbps"] - (50 + 1024 / 65)) < 1e-6, doc["bound_gbps"]  # 2 NVLinks + PCIe gen3
total = 0.0
for tree in doc["trees"]:
    assert tree["root"] == 0 and tree["weight_gbps"] > 0
    for arc in tree["arcs"]:
        assert len(arc) == 2
        for end in arc:
            assert (isinstance(end, int) and end in (0, 1, 2, 4)) or isinstance(end, str), arc
    total += tree["weight_gbps"]
assert abs(total - doc["rate_gbps"]) < 1e-9 * total
PY

# NVLink only on the full DGX-1V: 6 lanes of 25 GB/s, at most 6 trees.
run --topo dgx1-v100 --links nvlink --format json || fail "nvlink exited $?"
"$py" -c "import json,sys; d=json.load(open('$work/out')); assert d['bound_gbps']==150 and d['rate_gbps']==150 and len(d['trees'])<=6, d['bound_gbps']" \
  || fail "DGX-1V NVLink broadcast is not 150 GB/s in <= 6 trees"

# Text, AllGather, AllReduce (both shapes named), MWU with minimisation, DOT.
run --topo dgx1-p100 --collective allgather || fail "allgather exited $?"
grep -q "rate/bound 1.000000" "$work/out" || fail "exact allgather does not reach its bound"
run --topo dgx1-v100 --gpus 0,1,2,4 --links nvlink --collective allreduce || fail "allreduce exited $?"
grep -q "reducescatter+allgather .* reduce+broadcast" "$work/out" || fail "allreduce does not name both shapes"
run --topo dgx1-v100 --method mwu --epsilon 0.1 --minimize || fail "mwu exited $?"
grep -q "note: minimize: " "$work/out" || fail "--minimize says nothing"
run --topo dgx1-v100 --gpus 0,1,2,4 --format dot || fail "dot exited $?"
if command -v dot >/dev/null; then dot -Tsvg "$work/out" >/dev/null || fail "dot rejected the DOT output"; fi

# Bad input: exit 1 (cannot plan), exit 2 (bad command line).
run --topo dgx1-v100 --gpus 0,1,2,4 --root 3; [ $? -eq 1 ] || fail "--root outside the allocation should exit 1"
grep -q "is not a GPU" "$work/err" || fail "no message for a root outside the allocation"
run --topo dgx1-v100 --method simplex; [ $? -eq 2 ] || fail "--method simplex should exit 2"
run --topo dgx1-v100 --method mwu --epsilon 2; [ $? -eq 2 ] || fail "--epsilon 2 should exit 2"
run --topo dgx1-v100 --links warp; [ $? -eq 2 ] || fail "--links warp should exit 2"
run --topo dgx1-v100 --collective alltoall; [ $? -eq 2 ] || fail "--collective alltoall should exit 2"
run --topo nowhere.json; [ $? -eq 1 ] || fail "a missing topology file should exit 1"
run --topo dgx1-v100 --budget-ms 0; [ $? -eq 2 ] || fail "--budget-ms 0 should exit 2"
run --topo dgx1-v100 --budget-ms soon; [ $? -eq 2 ] || fail "--budget-ms soon should exit 2"
grep -q -- "--budget-ms" "$work/err" || fail "no message naming --budget-ms"
"$plan" --help | grep -q -- "--budget-ms" || fail "--help does not document --budget-ms"

# A file with an absurd bandwidth or lane count: exit 1, naming the file and the field.
links() { echo '{"format": "blink-topology", "version": 1, "devices": [{"id": "a", "kind": "gpu"},'\
  '{"id": "b", "kind": "gpu"}], "links": [{"from": "a", "to": "b", "kind": "nvlink", '"$1"'}]}'; }
links '"gbps": 25e6' >"$work/fast.json"
run --topo "$work/fast.json"; [ $? -eq 1 ] || fail "a bandwidth of 25e6 GB/s should exit 1"
grep -q "fast.json: links\[0\].gbps: .*0.001..10000" "$work/err" || fail "no message naming fast.json and gbps"
links '"gbps": 25, "multiplicity": 5000' >"$work/wide.json"
run --topo "$work/wide.json"; [ $? -eq 1 ] || fail "5000 lanes should exit 1"
grep -q "wide.json: links\[0\].multiplicity: expected 1..1024" "$work/err" || fail "no message for 5000 lanes"

# A complete graph of 64 GPUs (an NVSwitch-like domain): the packing stops at its
# budget, says so, keeps what it found, and finds the same again (ranks compare plans).
{
  printf '{"format": "blink-topology", "version": 1, "name": "k64", "devices": ['
  for ((i = 0; i < 64; i++)); do printf '%s{"id": "gpu%d", "kind": "gpu"}' "$([ $i -gt 0 ] && echo ,)" $i; done
  printf '], "links": ['
  sep=""
  for ((i = 0; i < 64; i++)); do for ((j = i + 1; j < 64; j++)); do
    printf '%s{"from": "gpu%d", "to": "gpu%d", "kind": "nvlink", "gbps": 25, "duplex": true}' "$sep" $i $j
    sep=,
  done; done
  printf ']}\n'
} >"$work/k64.json"
for collective in broadcast allgather; do
  for attempt in 1 2; do
    run --topo "$work/k64.json" --collective $collective --budget-ms 100 --format json \
      || fail "k64 $collective exited $?"
    cp "$work/out" "$work/k64.$attempt.json"
  done
  "$py" - "$work/k64.1.json" "$work/k64.2.json" <<'PY' || fail "k64 $collective under a budget"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["budget_exhausted"] is True, a["notes"]
assert a["rate_gbps"] < a["bound_gbps"], (a["rate_gbps"], a["bound_gbps"])
assert any("planning budget exhausted" in n for n in a["notes"]), a["notes"]
assert (a["trees"], a["rate_gbps"], a["work"]) == (b["trees"], b["rate_gbps"], b["work"])
PY
done
echo "plan_tool: OK"
