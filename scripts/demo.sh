#!/usr/bin/env bash
# The main job, from a fresh Debian machine: installs missing packages, builds
# Blink and shows what it sees and decides on this machine.
#
# Usage: scripts/demo.sh [--help]
set -euo pipefail
source "$(dirname "$0")/common.sh"
case "${1:-}" in
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

blink_setup_and_build
bin=$blink_build_dir/src/tools

echo
echo "== This build"
"$bin/blink-info"

echo
echo "== The machine Blink sees here"
"$bin/blink-topo" show

echo
echo "== A fragmented DGX-1V allocation (GPUs 0,1,2,4), from the built-in zoo"
"$bin/blink-topo" show --topo dgx1-v100 --gpus 0,1,2,4

echo
echo "== Trees Blink packs on that fragment: broadcast from GPU 0 (NVLink and PCIe together)"
"$bin/blink-plan" --topo dgx1-v100 --gpus 0,1,2,4 --root 0

echo
echo "== AllReduce bounds there: reduce+broadcast vs ReduceScatter+AllGather (NVLink only)"
"$bin/blink-plan" --topo dgx1-v100 --gpus 0,1,2,4 --links nvlink --collective allreduce
