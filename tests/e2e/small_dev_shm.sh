#!/usr/bin/env bash
# A node whose /dev/shm is small (a default Docker container has 64 MiB): the direct
# path's staging area cannot grow, or cannot be made at all, and the job goes on with
# what it has. Each case runs blink_perf (AllReduce, ReduceScatter, AllGather and
# Broadcast, every result checked, the direct path forced with BLINK_ALGO) at 2 ranks in a private mount namespace whose
# /dev/shm is a tmpfs of the given size, and looks for Blink's explanation.
#   24 MiB: the 4 MiB-per-rank area is made; growing it to 16 MiB for a ReduceScatter,
#           AllGather or Broadcast fails (a WARN), and larger calls go in rounds
#           through the small area. AllReduce's rounds fit the small area anyway.
#    6 MiB: the area cannot be made; the path falls back to cross-memory attach (INFO).
# Needs root (a mount namespace); skipped (exit 77) without one.
# Usage: small_dev_shm.sh BLINK_PERF MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
perf=$1 mpiexec=$2
shift 2
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! unshare -m true 2>/dev/null; then
  echo "SKIP: no mount namespace (needs root)"
  exit 77
fi

fail() {
  echo "FAIL: $*"
  for f in "$work"/*; do echo "== $f"; cat "$f"; done
  exit 1
}

run_case() {  # run_case SIZE EXPECTED_LINE [ALLREDUCE_EXPECTED_LINE]
  local size=$1 collective expect
  for collective in allreduce reducescatter allgather broadcast; do
    expect=$2
    [[ $collective == allreduce && $# -ge 3 ]] && expect=$3
    local out="$work/$size-$collective"
    # shellcheck disable=SC2016  # expanded by the inner shell
    unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs -o size="$0" tmpfs /dev/shm &&
                      exec "$@"' "$size" \
      "$mpiexec" "${flags[@]}" -np 2 -x BLINK_DEBUG=INFO -x BLINK_ALGO=direct \
      "$perf" --collective "$collective" -b 1M -e 16M -f 4 -n 2 -w 1 -c 1 --format csv \
      >"$out.csv" 2>"$out.err" || fail "$collective in a $size /dev/shm exited $?"
    grep -q -- "$expect" "$out.err" || fail "$collective in a $size /dev/shm: no '$expect'"
    # Every Blink row checked, and none wrong (the last CSV field).
    [ "$(grep -c '^blink,' "$out.csv")" -eq 6 ] || fail "$collective: not 6 Blink rows"
    awk -F, '$1 == "blink" && $NF != 0 { bad = 1 } END { exit bad }' "$out.csv" ||
      fail "$collective in a $size /dev/shm: wrong elements"
  done
}

run_case 24m "the staging area stays at 4194304 bytes per rank" \
  "from there (4194304 bytes per rank now, growing to at most"
run_case 6m "direct path: every rank reads its peers' buffers with cross-memory attach"
echo "PASS"
