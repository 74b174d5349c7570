#!/usr/bin/env bash
# Every tool answers --help with exit 0, a bad option with exit 2 and a message
# on stderr naming the tool, and --version where it has one.
# Usage: tools_cli.sh TOOLS_DIR
set -uo pipefail
dir=$1
fail() { echo "FAIL: $*"; exit 1; }
for tool in "$dir"/blink-*; do
  name=$(basename "$tool")
  "$tool" --help >/tmp/tools_cli.$$ 2>&1 || fail "$name --help exited $?"
  grep -q "^Usage: $name" /tmp/tools_cli.$$ || fail "$name --help prints no usage line"
  "$tool" --no-such-option >/dev/null 2>/tmp/tools_cli.$$
  rc=$?
  [ "$rc" -eq 2 ] || fail "$name --no-such-option exited $rc, expected 2"
  grep -q "^$name: " /tmp/tools_cli.$$ || fail "$name's usage error does not name the tool"
done
rm -f /tmp/tools_cli.$$

info="$dir/blink-info"
"$info" --version >/tmp/tools_cli.$$ || fail "blink-info --version exited $?"
head -n 1 /tmp/tools_cli.$$ | grep -q '^Blink [0-9]*\.[0-9]*\.[0-9]* (git .*transports: ' ||
  fail "blink-info --version: no build line"
sed -n 2p /tmp/tools_cli.$$ | grep -q '^This machine: .*CUDA driver.*; CUDA devices: [0-9]' ||
  fail "blink-info --version: no line for this machine"
rm -f /tmp/tools_cli.$$
BLINK_DEBUG=LOUD "$info" --check-env >/dev/null 2>&1
[ $? -eq 1 ] || fail "blink-info --check-env accepted BLINK_DEBUG=LOUD"
BLINK_DEBUG=info "$info" --check-env >/dev/null || fail "blink-info --check-env rejected BLINK_DEBUG=info"
# The graph a job would plan on, each link with its speed and where the speed came from.
out=$(env -u BLINK_TOPO "$info" --topology) || fail "blink-info --topology exited $?"
grep -q '^source: discovered' <<<"$out" || fail "blink-info --topology names no discovered source"
if ! grep -q 'GPU ranks' <<<"$out"; then  # a machine without GPUs: a host rank on a socket
  grep -Eq '^  rank0 +<-> cpu[0-9]+ +shm +shm +10 GB/s x1  table$' <<<"$out" ||
    fail "blink-info --topology shows no shm link of rank0 from the table: $out"
  out=$(env -u BLINK_TOPO BLINK_LINK_GBPS=shm=4 "$info" --topology) || fail "--topology, BLINK_LINK_GBPS"
  grep -Eq '^  rank0 +<-> cpu[0-9]+ +shm +shm +4 GB/s x1  BLINK_LINK_GBPS$' <<<"$out" ||
    fail "blink-info --topology does not show the BLINK_LINK_GBPS override: $out"
fi
BLINK_TOPO=dgx1-v100 "$info" --topology | grep -q '^source: BLINK_TOPO=dgx1-v100' ||
  fail "blink-info --topology ignores BLINK_TOPO"
# Every tool names itself and the build on --version; sizes may be decimal.
for tool in "$dir"/blink-plan "$dir"/blink-sim "$dir"/blink-topo; do
  name=$(basename "$tool")
  out=$("$tool" --version) || fail "$name --version exited $?"
  grep -q "^$name: Blink [0-9]*\.[0-9]*\.[0-9]* (git " <<<"$out" || fail "$name --version: $out"
done
out=$("$dir/blink-sim" --topo dgx1-v100 --gpus 0,1 --collective allreduce --bytes 1.5G) ||
  fail "blink-sim --bytes 1.5G exited $?"
grep -q '1610612736' <<<"$out" || fail "blink-sim --bytes 1.5G is not 1610612736 bytes: $out"
"$dir/blink-sim" --topo dgx1-v100 --bytes 1.5X >/dev/null 2>&1
[ $? -eq 2 ] || fail "blink-sim accepted --bytes 1.5X"
# blink-topo show: the bandwidth columns stay apart (two spaces at least).
out=$("$dir/blink-topo" show --topo dgx1-v100) || fail "blink-topo show exited $?"
grep -Eq 'GB/s[^ ]' <<<"$out" && fail "blink-topo show runs columns together: $out"
echo "tools_cli: OK"
