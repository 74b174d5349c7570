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
echo "plan_tool: OK"
