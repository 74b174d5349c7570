#!/usr/bin/env bash
# A rank that stops (SIGSTOP) or dies (SIGKILL) in the middle of large collectives.
# Each case runs fault_collective_loop (one collective in a loop through the C API,
# BLINK_ALGO forced, BLINK_TIMEOUT_S=3) and, once every rank has finished a call,
# signals the last rank:
#   stop: every other rank returns blinkTimeout within BLINK_TIMEOUT_S + 2 s of the
#         signal, with a message naming the bytes, the channel (or the direct path's
#         mechanism) and the rank it waited for, and naming the stopped rank as
#         stopped (every rank on the stopped one's machine looks at it, also a rank
#         that waited for a neighbour waiting in turn; emulated nodes share this
#         machine); then the stopped rank is killed and mpirun returns.
#   kill: mpirun returns, and no rank of the job is left running.
# Either way no shared-memory segment of the job's ranks is left in /dev/shm (Blink
# names them /blink-<creator pid>-...; a plain before/after listing would also see
# the segments of tests running alongside), and every mpirun is bounded by `timeout`.
# Before the first case the script plants a segment as a rank killed during set-up
# would leave it (its creator's pid has ended): the first job must remove it.
# A case is SIGNAL:COLLECTIVE:ALGO:NP:NODES[:VARIABLE=VALUE], e.g.
# stop:allreduce:direct:3:1:BLINK_SHM_STAGING_BYTES=0; with NODES > 1, rank r runs as
# node r % NODES (BLINK_NODE_ID), so plans cross emulated nodes over PMPI.
# Usage: fault_injection.sh PROGRAM CASE... -- MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
program=$1
shift
cases=()
while [[ $# -gt 0 && $1 != -- ]]; do
  cases+=("$1")
  shift
done
shift  # the --
mpiexec=$1
shift
flags=("$@")

readonly timeout_s=3 bytes=$((4 << 20)) linger_s=60 job_limit_s=60
# How late a survivor's blinkTimeout may come after the signal: BLINK_TIMEOUT_S plus 2 s.
readonly late_s=$((timeout_s + 2))
work=$(mktemp -d)
mpirun_pid=
cleanup() {
  # A failed assertion may leave the job running: end it (and a stopped rank with it).
  # (mpirun_pid is `timeout`'s, which passes SIGTERM on to mpirun.)
  if [[ -n $mpirun_pid ]] && kill -0 "$mpirun_pid" 2>/dev/null; then
    for f in "$work"/*/pid.*; do
      if [[ -f $f ]]; then kill -KILL "$(cat "$f")" 2>/dev/null || true; fi
    done
    kill -TERM "$mpirun_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  [[ -z ${stale:-} ]] || rm -f "$stale"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $current: $*"
  for f in "$dir"/*; do
    [[ -f $f ]] || continue
    echo "== $f"
    cat "$f"
  done
  exit 1
}

now() { date +%s.%N; }
# later_than A B LIMIT: true when A - B > LIMIT (decimal seconds).
later_than() { awk -v a="$1" -v b="$2" -v l="$3" 'BEGIN { exit !(a - b > l) }'; }

# wait_for_files PATTERN COUNT SECONDS: until COUNT files match, or fail.
wait_for_files() {
  local pattern=$1 count=$2 deadline
  deadline=$(($(date +%s) + $3))
  while true; do
    local found
    found=$(compgen -G "$pattern" | wc -l || true)
    [[ $found -ge $count ]] && return 0
    [[ $(date +%s) -lt $deadline ]] || fail "only $found of $count $pattern after $3 s"
    kill -0 "$mpirun_pid" 2>/dev/null || fail "mpirun ended early waiting for $pattern"
    sleep 0.05
  done
}

# A segment whose creator is a rank of this job.
left_in_dev_shm() {
  local r
  for ((r = 0; r < np; ++r)); do
    compgen -G "/dev/shm/blink-$(cat "$dir/pid.$r")-*" || true
  done
}

run_case() {
  local signal collective algo nodes setting
  IFS=: read -r signal collective algo np nodes setting <<<"$current"
  local extra=()
  [[ -z $setting ]] || extra=(-x "$setting")
  dir=$(mktemp -d "$work/case.XXXXXX")
  victim=$((np - 1))
  local started
  started=$(now)
  # shellcheck disable=SC2016  # expanded by the inner shell, once per rank
  timeout -k 5 $job_limit_s "$mpiexec" "${flags[@]}" -np "$np" \
    -x BLINK_TIMEOUT_S=$timeout_s -x BLINK_ALGO="$algo" "${extra[@]+"${extra[@]}"}" \
    sh -c 'if [ "$0" -gt 1 ]; then export BLINK_NODE_ID=node$((OMPI_COMM_WORLD_RANK % $0)); fi
           exec "$@"' "$nodes" \
    "$program" "$dir" "$collective" "$bytes" "$linger_s" >"$dir/stdout" 2>"$dir/stderr" &
  mpirun_pid=$!
  wait_for_files "$dir/ready.*" "$np" 30
  local victim_pid signalled r latest=0
  victim_pid=$(cat "$dir/pid.$victim")
  signalled=$(now)
  if [[ $signal == stop ]]; then
    kill -STOP "$victim_pid"
    wait_for_files "$dir/result.*" $((np - 1)) $((late_s + 10))
    for ((r = 0; r < np - 1; ++r)); do
      local status at message
      read -r status at message <"$dir/result.$r"
      [[ $status == 5 ]] || fail "rank $r ended with status $status, not blinkTimeout: $message"
      [[ $message == *"rank $victim (pid $victim_pid) on this machine is stopped"* ]] ||
        fail "rank $r does not name the stopped rank $victim: $message"
      # The bytes, and where they were to move: a plan's channel and transport, or
      # the direct path's mechanism.
      [[ $message =~ [0-9]+\ bytes && ($message =~ on\ channel\ [0-9]+\ via\ (shm|pmpi|ucx) ||
        $message == *"(direct path, "*) ]] || fail "rank $r names no bytes or channel: $message"
      latest=$(awk -v a="$at" -v b="$signalled" -v m="$latest" 'BEGIN { print (a - b > m ? a - b : m) }')
      if later_than "$at" "$signalled" "$late_s"; then
        fail "rank $r timed out $(awk -v a="$at" -v b="$signalled" 'BEGIN { print a - b }') s \
after the signal, more than BLINK_TIMEOUT_S + 2 = $late_s s"
      fi
    done
    [[ -f $dir/result.$victim ]] && fail "the stopped rank reported a result"
    kill -KILL "$victim_pid"
  else
    kill -KILL "$victim_pid"
  fi
  local rc=0
  wait "$mpirun_pid" || rc=$?
  mpirun_pid=
  # mpirun's own status may be 137 (a rank died of SIGKILL): judge `timeout` by the clock.
  if later_than "$(now)" "$started" $((job_limit_s - 1)); then
    fail "mpirun did not return within $job_limit_s s (rc $rc)"
  fi
  [[ $rc -ne 0 ]] || fail "mpirun returned 0 although a rank was killed"
  # mpirun may return while the ranks it signalled are still exiting: give them 10 s.
  for ((r = 0; r < np; ++r)); do
    local pid waited
    pid=$(cat "$dir/pid.$r")
    for ((waited = 0; waited < 200; ++waited)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    ! kill -0 "$pid" 2>/dev/null || fail "rank $r (pid $pid) still runs 10 s after mpirun returned"
  done
  local left
  left=$(left_in_dev_shm)
  [[ -z $left ]] || fail "segments of this job left in /dev/shm: $left"
  local survivors=
  [[ $signal == stop ]] && survivors=$(printf ', blinkTimeout on every survivor after %.1f s' "$latest")
  printf 'ok: %-28s mpirun returned %4.1f s after the signal%s\n' "$current" \
    "$(awk -v a="$(now)" -v b="$signalled" 'BEGIN { print a - b }')" "$survivors"
}

victim=
current=planting
dir=$work
dead_pid=$(sh -c 'echo $$')  # that shell has ended
stale=/dev/shm/blink-$dead_pid-$(stat -Lc %i /proc/self/ns/pid)-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
: >"$stale"
for current in "${cases[@]}"; do
  run_case
  [[ ! -e $stale ]] || fail "the stale segment $stale is still there"
done
echo "PASS"
