#!/usr/bin/env bash
# blink-sim from the outside: the JSON interface, the planner never losing to a
# ring, and its errors.
# Usage: sim_tool.sh BLINK_SIM_BINARY
set -uo pipefail
sim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }
run() { "$sim" "$@" >"$work/out" 2>"$work/err"; }
py=/usr/bin/python3

run --topo dgx1-v100 --gpus 0,1,2,4 --collective allreduce --bytes 64M --format json || fail "json exited $?"
"$py" - "$work/out" <<'PY' || fail "the JSON does not have the documented shape"
import json, sys
d = json.load(open(sys.argv[1]))
for key in ("collective", "bytes", "bound_gbps", "algorithms"):
    assert key in d, key
assert d["collective"] == "allreduce" and d["bytes"] == 64 << 20
names = [a["name"] for a in d["algorithms"]]
assert names == ["blink", "ring", "tree"], names
for a in d["algorithms"]:
    for key in ("time_us", "algbw_gbps", "busbw_gbps"):
        assert a[key] > 0, (a, key)
    assert abs(a["busbw_gbps"] - a["algbw_gbps"] * 2 * 3 / 4) < 1e-9 * a["busbw_gbps"]
    assert a["algbw_gbps"] <= d["bound_gbps"] * (1 + 1e-9), a
blink, ring = d["algorithms"][0], d["algorithms"][1]
# On this fragment no NVLink ring exists: Blink's trees must beat the ring clearly.
assert blink["time_us"] * 2 < ring["time_us"], (blink, ring)
PY

run --topo dgx1-p100 --collective broadcast --sweep --bytes 1M --format json || fail "sweep exited $?"
"$py" -c "import json; d=json.load(open('$work/out')); assert [x['bytes'] for x in d]==[1024,4096,16384,65536,262144,1048576], d" \
  || fail "--sweep does not cover 1K..1M in x4 steps"
run --topo dgx1-v100 --collective allgather --bytes 1M || fail "allgather text exited $?"
grep -q "^bytes .*algbw_gbps" "$work/out" || fail "no header in the text output"

run --topo dgx1-v100 --bytes 12Q; [ $? -eq 2 ] || fail "--bytes 12Q should exit 2"
run --topo dgx1-v100 --collective alltoall; [ $? -eq 2 ] || fail "--collective alltoall should exit 2"
run --topo dgx1-v100 --gpus 0,1 --collective broadcast --root 5; [ $? -eq 1 ] || fail "--root outside should exit 1"
run --topo dgx1-v100 --gpus 3; [ $? -eq 1 ] || fail "one GPU should exit 1"
# --links like blink-plan: NVLink-only trees and the NVLink-only bound (70 GB/s on
# this fragment; 79.45 over every link); the baselines are named.
run --topo dgx1-v100 --gpus 0,1,2,3,4,5 --links nvlink --bytes 64M --format json || fail "--links exited $?"
"$py" - "$work/out" <<'PY' || fail "--links nvlink or the baselines are not as documented"
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["bound_gbps"] - 70) < 1e-6, d["bound_gbps"]
assert "NVLink" in d["baselines"]["ring"] and "tree" in d["baselines"], d["baselines"]
PY
run --topo dgx1-v100:2 --bytes 16M || fail "cluster text exited $?"
grep -q "^baseline ring: NCCL-style, 4 rings, one per NIC between nodes" "$work/out" \
  || fail "the cluster ring baseline is not named"
run --topo dgx1-v100 --links warp; [ $? -eq 2 ] || fail "--links warp should exit 2"
echo "sim_tool: OK"
