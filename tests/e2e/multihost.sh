#!/usr/bin/env bash
# Blink across emulated hosts (scripts/emulate-hosts.sh: network namespaces, a
# hostname and a /dev/shm of their own per host), so that streams between nodes
# cross a network and no two hosts share memory.
#
# Usage: multihost.sh CASE RANKS BUILD_DIR [VARIABLE=VALUE...]
#   RANKS: ranks per host, e.g. 2,2 (two hosts) or 2,1,1 (three, unequal).
#   VARIABLE=VALUE: set for every rank, e.g. BLINK_TRANSPORT=between=pmpi (without
#                it, streams between nodes take the default: MULTIHOST_DEFAULT_BETWEEN,
#                ucx unless set; ctest sets it to what the build has).
#   collectives  tests/test_collectives (every collective through the C API, in
#                place and not, checked against PMPI_* or an exact oracle; every
#                collective at 0..4 KiB, which must take the node leaders' algorithm);
#                the cases there that group ranks by BLINK_NODE_ID across hosts are
#                left out (node_identity covers that).
#   interposer   tests/mpi_collectives_check under LD_PRELOAD=libblink_mpi.so with
#                BLINK_MPI_MIN_BYTES=0: every result right, Blink handled every
#                interposed collective, small calls took the node leaders'
#                algorithm, and no communicator fell back.
#   train        scripts/train_data_parallel.py (mpi4py) natively and under
#                LD_PRELOAD with BLINK_MPI_MIN_BYTES=0 (its 8-byte loss Allreduce too):
#                the same losses step by step (relative 1e-4: float32 sums in
#                another order).
#   node_identity  one BLINK_NODE_ID for every host: blinkCommInitFromMPI fails on
#                every rank naming a rank and host that cannot see its node's shared
#                memory; the interposer falls back once per communicator (counted),
#                with right results.
#   nics         2 NICs per host, each limited to 1 Gbit/s (tc), BLINK_PROBE_LINKS=1:
#                16 MiB AllReduces through blink_perf (results checked); each NIC
#                of node 0 is in the graph at a measured rate below 2 Gbit/s (not
#                the veth's 10 Gbit/s), INFO prints the rank -> NIC map (local rank
#                i of each host on nic i), and, over ucx, each NIC of host 0 carried
#                at least 40% of the bytes it sent (the probe's included); then every
#                collective at 64-256 KiB, results checked (AllReduce of 64 KiB takes the
#                hierarchical plan, its chunks chosen by simulation).
#   paced        flat trees across the hosts (BLINK_ALGO=trees) with their streams
#                between nodes paced (BLINK_PACE_BETWEEN_NODES=1, pieces of 4 KiB so
#                that messages split, the last piece shorter): every collective
#                through blink_perf at 4 KiB-1 MiB, in place and not, results checked
#                (-c 1); INFO says the streams between nodes are paced.
#   rooted_loop  tests/rooted_loop: 3000 Broadcasts of 32 bytes from rank 0 back to
#                back, 3000 Reduces to it, the same rooted on the last rank (of the
#                last host); then the same calls through PMPI_*, every result
#                compared; the node leaders' rounds carry them between nodes (over
#                ucx it stalled before the progress thread: see
#                src/transport/ucx/ucx_transport.hpp).
#   mpi_progress tests/mpi_send_then_blink: rank 1 calls blinkAllReduce while its
#                MPI_Isend of 1 MiB to rank 0 is still under way, rank 0 only after
#                receiving it (MPI_Recv): 20 rounds, every result right, within
#                BLINK_TIMEOUT_S=10 (Blink's waits let MPI progress; without that,
#                every round stalled until the timeout).
#   fallback     (builds with UCX) rank 1 cannot set UCX up (UCX_TLS names no
#                transport there): by default every rank takes pmpi between nodes,
#                INFO says why, and rooted_loop's results are right; with
#                BLINK_TRANSPORT=between=ucx the program fails instead.
#   kill         a rank of the last host is killed (SIGKILL) during 4 MiB AllReduce
#                calls: every other rank's call fails within BLINK_TIMEOUT_S + 2 s, a
#                rank of another host names the dead rank and its host, every process
#                ends, and no host has a Blink segment left in its /dev/shm. Over
#                pmpi a survivor may instead be ended by Open MPI's ob1 (its send to
#                the dead rank failed): accepted with ob1's FATAL line for it, or, where
#                that line was lost, the rank's record of an _exit from Open MPI's
#                libraries or of no catchable end at all (SIGKILL from Open MPI's daemon).
# Exits 77 (skipped) where the machine cannot emulate hosts (not root, no ip netns).
set -euo pipefail
case=$1 ranks=$2 build=$3
setting=()
# The transport streams between nodes must take: the one named, else the default.
between=${MULTIHOST_DEFAULT_BETWEEN:-ucx} named=0
for variable in "${@:4}"; do
  setting+=(-x "$variable")
  [[ $variable != BLINK_TRANSPORT=between=* ]] || {
    between=${variable#BLINK_TRANSPORT=between=}
    named=1
  }
done
here=$(cd "$(dirname "$0")" && pwd)
emulate=$here/../../scripts/emulate-hosts.sh

if ! why=$("$emulate" check); then
  echo "SKIPPED: $why"
  exit 77
fi

prefix=mh$$
prefix=${prefix:0:8}
work=$(mktemp -d)
cleanup() {
  "$emulate" teardown --prefix "$prefix" || true
  rm -rf "$work"
}
trap cleanup EXIT
hosts=$(($(tr -cd , <<<"$ranks" | wc -c) + 1))
if [[ $case == nics ]]; then
  "$emulate" setup --prefix "$prefix" --hosts "$hosts" --nics 2 --rate 1gbit
else
  "$emulate" setup --prefix "$prefix" --hosts "$hosts"
fi
shm_root=/dev/shm/emuhosts-$prefix

fail() {
  echo "FAIL: $case $ranks: $*"
  for f in "$work"/*; do
    [[ -f $f ]] || continue
    echo "== $f"
    # GoogleTest's failures first: the tail alone ends after them.
    grep -A 12 -E ': Failure$' "$f" | head -n 80 && echo "== $f (its end)"
    tail -n 40 "$f"
  done
  exit 1
}
# run NAME LIMIT [MPIRUN_OPTIONS...] PROGRAM [ARGS...]: across the hosts, bounded.
run() {
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" "$emulate" run --prefix "$prefix" --ranks "$ranks" \
    -x BLINK_TIMEOUT_S="${BLINK_TIMEOUT_S:-60}" "${setting[@]+"${setting[@]}"}" "$@" \
    >"$work/$name.out" 2>"$work/$name.err"
}
blink_left() {
  find "$shm_root" -name 'blink-*' 2>/dev/null || true
}
accounting() {  # accounting FILE COLLECTIVE FIELD
  grep "blink-accounting $2 " "$1" | head -n 1 | tr ' ' '\n' |
    awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}

case "$case" in
  collectives)
    run collectives 240 -x BLINK_DEBUG=INFO "$build/tests/test_collectives" \
      --gtest_filter=-Communicators.EmulatedNodesStreamBetweenThem:SmallCalls.OnNodesEmulatedByNodeId ||
      fail "test_collectives failed (exit $?)"
    grep -q "PASSED" "$work/collectives.out" || fail "no PASSED line"
    grep -q "streams: shm within a node, $between between nodes" "$work/collectives.err" ||
      fail "streams between nodes did not take $between"
    ;;
  interposer)
    run interposer 240 -x LD_PRELOAD="$build/mpi_glue/libblink_mpi.so" -x BLINK_DEBUG=INFO \
      -x BLINK_MPI_MIN_BYTES=0 "$build/tests/mpi_collectives_check" ||
      fail "mpi_collectives_check failed (exit $?)"
    grep -q " 0 wrong$" "$work/interposer.out" || fail "wrong results"
    grep -q "streams: shm within a node, $between between nodes" "$work/interposer.err" ||
      fail "streams between nodes did not take $between"
    grep -q "decided allreduce of [0-9]* bytes on .*: leaders (predicted" "$work/interposer.err" ||
      fail "no small AllReduce took the node leaders' algorithm"
    for coll in allreduce bcast reduce allgather reduce_scatter_block; do
      [[ $(accounting "$work/interposer.err" $coll handled) -gt 0 ]] || fail "Blink handled no $coll"
      [[ $(accounting "$work/interposer.err" $coll fallback.unavailable) -eq 0 ]] ||
        fail "a $coll fell back because Blink was unavailable"
    done
    ;;
  train)
    python=/usr/bin/python3
    if ! "$python" -c 'import mpi4py, numpy' 2>/dev/null; then
      echo "SKIPPED: Debian's python3-mpi4py and python3-numpy are needed"
      exit 77
    fi
    steps=10
    train=("$python" "$here/../../scripts/train_data_parallel.py" --steps $steps)
    run native 240 "${train[@]}" || fail "the native run failed (exit $?)"
    run blink 240 -x LD_PRELOAD="$build/mpi_glue/libblink_mpi.so" -x BLINK_DEBUG=INFO \
      -x BLINK_MPI_MIN_BYTES=0 "${train[@]}" || fail "the run with Blink failed (exit $?)"
    paste <(grep '^step' "$work/native.out") <(grep '^step' "$work/blink.out") | awk -v want=$steps '
      { n++; a = $4; b = $8; d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a;
        if (d > 1e-4 * m + 1e-7) { print "step " $2 ": loss " a " natively, " b " with Blink"; bad = 1 } }
      END { if (n != want) { print "expected " want " steps, got " n; bad = 1 } exit bad }' ||
      fail "the losses differ"
    [[ $(accounting "$work/blink.err" allreduce handled) -ge $((2 * steps)) ]] ||
      fail "Blink did not handle both Allreduce calls of every step"
    grep -q ": leaders (predicted" "$work/blink.err" || fail "the loss Allreduce did not take leaders"
    ;;
  node_identity)
    mkdir -p "$work/capi"
    # LINGER 30: each rank waits (at most that) until every rank wrote its result.
    run capi 60 -x BLINK_NODE_ID=one "$build/tests/fault_collective_loop" "$work/capi" \
      allreduce 4096 30 && fail "the C API program succeeded"
    total=$(tr , '\n' <<<"$ranks" | awk '{s += $1} END {print s}')
    for ((r = 0; r < total; ++r)); do
      read -r status _ message <"$work/capi/result.$r" || fail "rank $r reported nothing"
      [[ $status == 2 ]] || fail "rank $r: status $status, not blinkInvalidUsage: $message"
      [[ $message == *"grouped as node 'one'"*"do not share shared memory: rank "*" on host '$prefix-h"* ]] ||
        fail "rank $r: the message names no rank and host: $message"
    done
    run interposed 60 -x BLINK_NODE_ID=one -x LD_PRELOAD="$build/mpi_glue/libblink_mpi.so" \
      -x BLINK_DEBUG=INFO -x BLINK_MPI_MIN_BYTES=0 "$build/tests/plain_mpi_program" ||
      fail "the interposed program failed (exit $?)"
    grep -q "ok" "$work/interposed.out" || fail "the interposed program saw wrong results"
    [[ $(grep -c "WARN Blink is unavailable on this communicator" "$work/interposed.err") -eq 1 ]] ||
      fail "not exactly one warning for the one communicator"
    [[ $(accounting "$work/interposed.err" allreduce fallback.unavailable) -ge 1 ]] ||
      fail "the fallback was not counted"
    ! grep -q "plans differ" "$work/interposed.err" || fail "a per-call 'plans differ' message"
    ;;
  nics)
    tx() { "$emulate" exec --prefix "$prefix" --host 0 cat "/sys/class/net/$1/statistics/tx_bytes"; }
    before0=$(tx eth0) before1=$(tx eth1)
    run nics 120 -x BLINK_PROBE_LINKS=1 -x BLINK_DEBUG=INFO "$build/perf/blink_perf" \
      -b 16M -e 16M -n 2 -w 1 --inplace 0 -c 1 || fail "blink_perf failed (exit $?)"
    sent0=$(($(tx eth0) - before0)) sent1=$(($(tx eth1) - before1))
    grep -q "streams: shm within a node, $between between nodes" "$work/nics.err" ||
      fail "streams between nodes did not take $between"
    for k in 0 1; do
      line=$(grep -m1 "^  n0.nic$k eth$k " "$work/nics.err") || fail "no speed line for n0.nic$k"
      [[ $line == *" from measured"* ]] || fail "n0.nic$k is not at a measured rate: $line"
      awk -v g="$(awk '{print $3}' <<<"$line")" 'BEGIN { exit !(g > 0 && g < 2) }' ||
        fail "n0.nic$k measured outside 0-2 Gbit/s: $line"
    done
    map=$(grep -m1 "rank -> NIC" "$work/nics.err") || fail "no rank -> NIC map"
    r=0 node=0
    for count in $(tr , ' ' <<<"$ranks"); do
      for ((i = 0; i < count; ++i, ++r)); do
        [[ $map == *"rank $r (node $node) -> n$node.nic$((i % 2)) eth$((i % 2))"* ]] ||
          fail "rank $r is not on its node's nic$((i % 2)): $map"
      done
      node=$((node + 1))
    done
    # Mid sizes, where the planner picks the hierarchical plan's chunks by simulation
    # (whole pieces at 64 KiB on this graph): every collective's results checked;
    # AllReduce takes the hierarchical plan (the others may take a ring on unequal
    # nodes, where it is predicted faster).
    for coll in allreduce broadcast reduce allgather reducescatter; do
      run "mid_$coll" 120 -x BLINK_PROBE_LINKS=1 -x BLINK_DEBUG=INFO "$build/perf/blink_perf" \
        --collective "$coll" -b 64K -e 256K -n 2 -w 1 -c 1 ||
        fail "blink_perf $coll 64K-256K failed (exit $?)"
    done
    first=$(grep -m1 "decided allreduce of 65536 bytes" "$work/mid_allreduce.err") ||
      fail "no decision for the AllReduce of 64 KiB"
    [[ $first == *": hierarchical ("* ]] || fail "AllReduce of 64 KiB: $first"
    if [[ $between == ucx ]]; then
      total=$((sent0 + sent1))
      for sent in $sent0 $sent1; do
        ((sent * 10 >= total * 4)) || fail "one NIC carried $sent of $total bytes: eth0 $sent0, eth1 $sent1"
      done
      echo "nics: host 0 sent $sent0 bytes on eth0, $sent1 on eth1"
    fi
    ;;
  paced)
    for coll in allreduce broadcast reduce allgather reducescatter; do
      run "paced_$coll" 120 -x BLINK_ALGO=trees -x BLINK_PACE_BETWEEN_NODES=1 \
        -x BLINK_PACE_PIECE_BYTES=4096 -x BLINK_DEBUG=INFO "$build/perf/blink_perf" \
        --collective "$coll" -b 4K -e 1M -n 2 -w 1 --inplace both -c 1 ||
        fail "blink_perf $coll failed (exit $?)"
      grep -q "streams: shm within a node, $between between nodes.*paced by the plan's channel shares" \
        "$work/paced_$coll.err" || fail "streams between nodes were not paced ($coll)"
      grep -q "decided $coll of 4096 bytes .*: trees" "$work/paced_$coll.err" ||
        fail "no flat trees across the hosts ($coll)"
    done
    ;;
  mpi_progress)
    BLINK_TIMEOUT_S=10 run mpi_progress 120 -x BLINK_DEBUG=INFO "$build/tests/mpi_send_then_blink" 20 ||
      fail "mpi_send_then_blink failed (exit $?)"
    grep -q "mpi_send_then_blink: 20 rounds, 0 wrong" "$work/mpi_progress.out" || fail "wrong results"
    grep -q "streams: shm within a node, $between between nodes" "$work/mpi_progress.err" ||
      fail "streams between nodes did not take $between"
    ;;
  rooted_loop)
    run rooted_loop 240 -x BLINK_DEBUG=INFO "$build/tests/rooted_loop" 3000 ||
      fail "rooted_loop failed (exit $?)"
    grep -q "rooted_loop: 12000 calls, 0 wrong" "$work/rooted_loop.out" || fail "wrong results"
    grep -q "streams: shm within a node, $between between nodes" "$work/rooted_loop.err" ||
      fail "streams between nodes did not take $between"
    if [[ $named == 1 || $between == pmpi ]]; then
      grep -Eq "rounds between 2 leaders over $between( \(|\$)" "$work/rooted_loop.err" ||
        fail "the calls did not take the node leaders' rounds over $between"
    else
      # By default the leaders' rounds take whichever of ucx, pmpi and sockets is
      # measured fastest at set-up, and INFO says what was measured.
      grep -Eq "rounds between 2 leaders over (ucx|pmpi|sockets) \(measured at set-up.*ucx [0-9.e+]+ us, pmpi [0-9.e+]+ us, sockets [0-9.e+]+ us[;)]" \
        "$work/rooted_loop.err" || fail "the leaders' rounds were not measured at set-up"
    fi
    # MPI's own collectives among the leaders, and on every rank where a host has
    # several ranks, were timed against Blink's (BLINK_LEADERS_MPI).
    on_all=""
    [[ $ranks =~ [2-9] ]] && on_all=" / MPI's own on every rank"
    grep -Eq "Blink's shape / MPI's own among the leaders$on_all: .*MPI's own among the leaders takes: " \
      "$work/rooted_loop.err" || fail "MPI's collectives were not measured at set-up (expected '$on_all')"
    ;;
  fallback)
    cat >"$work/break_rank1.sh" <<'EOF'
#!/bin/sh
[ "$OMPI_COMM_WORLD_RANK" != 1 ] || export UCX_TLS=no_such_transport
exec "$@"
EOF
    chmod +x "$work/break_rank1.sh"
    run fallback 120 -x BLINK_DEBUG=INFO "$work/break_rank1.sh" "$build/tests/rooted_loop" 200 ||
      fail "rooted_loop failed (exit $?)"
    grep -q "rooted_loop: 800 calls, 0 wrong" "$work/fallback.out" || fail "wrong results"
    grep -q "streams: shm within a node, pmpi between nodes (ucx could not be set up on every rank" \
      "$work/fallback.err" || fail "streams between nodes did not fall back to pmpi with the reason"
    run named 120 -x BLINK_TRANSPORT=between=ucx "$work/break_rank1.sh" \
      "$build/tests/rooted_loop" 200 && fail "BLINK_TRANSPORT=between=ucx did not fail"
    ;;
  kill)
    dir=$work/kill
    mkdir -p "$dir"
    total=$(tr , '\n' <<<"$ranks" | awk '{s += $1} END {print s}')
    victim=$((total - 1))
    # orte_enable_recovery: mpirun does not end the job when a rank dies, so the
    # survivors must notice by themselves; they linger 3 s after failing, then exit.
    # (mpirun itself then waits for ever: it is ended once the ranks are gone.)
    launch() {
      rm -f "$dir"/*
      timeout -k 5 60 "$emulate" run --prefix "$prefix" --ranks "$ranks" -x BLINK_TIMEOUT_S=3 \
        "${setting[@]+"${setting[@]}"}" \
        --mca orte_enable_recovery 1 "$build/tests/fault_collective_loop" "$dir" allreduce \
        $((4 << 20)) 3 >"$work/kill.out" 2>"$work/kill.err" &
      job=$!
    }
    # Open MPI 4.1's mpirun, with orte_enable_recovery, now and then segfaults in its
    # PMIx log handler (pmix_server_log -> orte_rml_oob_send_buffer_nb) when a rank
    # dies, and takes every rank down with it (about 1 run in 5 with PMPI between
    # hosts). No Blink code runs in mpirun, so that run is repeated, and said so.
    launcher_crashed() {
      ! kill -0 $job 2>/dev/null && grep -q "pmix_server_log" "$work/kill.err"
    }
    # wait_for COUNT PATTERN TENTHS: until COUNT files match PATTERN; 3 when the
    # launcher crashed.
    wait_for() {
      local waited
      for ((waited = 0; waited < $3; ++waited)); do
        [[ $(compgen -G "$2" | wc -l) -ge $1 ]] && return 0
        if ! kill -0 $job 2>/dev/null; then
          launcher_crashed && return 3
          fail "the job ended early, waiting for $2"
        fi
        sleep 0.1
      done
      fail "only $(compgen -G "$2" | wc -l) of $1 $2 after $(($3 / 10)) s"
    }
    # Over pmpi, Open MPI's ob1 ends a rank itself when its TCP send to the dead rank
    # fails ("pml_ob1_sendreq.c:... FATAL", then abort: ob1 has no error path for a
    # lost peer), so such a survivor has no result file. It did not hang: it counts
    # as ended when its process is gone and the job's stderr has ob1's FATAL line
    # for its pid (Open MPI pads it with zeros), noticed within the same 5 s as a failed call.
    # That FATAL line is a show_help message the rank sends to mpirun before it ends,
    # and now and then it is lost (mpirun logs "ORTE_ERROR_LOG: Data unpack would read
    # past end of buffer in file .../show_help.c", or nothing; about 1 run in 30).
    # Then the rank's own record decides: fault_collective_loop writes ended.R from
    # its atexit handler, its _exit (which Open MPI's libraries call too) with the
    # calls that led there, and its SIGABRT/SEGV/BUS/TERM handlers. An _exit called
    # from Open MPI's libraries counts; so does no record at all, which leaves only
    # SIGKILL, which nothing here sends but Open MPI's daemons (this script kills the
    # victim alone). A Blink crash leaves a signal record, a hang a live process.
    ended_by_mpi() {
      local pid
      pid=$(cat "$dir/pid.$1")
      kill -0 "$pid" 2>/dev/null && return 1
      grep -Eq ":0*$pid\] .*pml_ob1.*FATAL" "$work/kill.err" && return 0
      [[ -e $dir/ended.$1 ]] || return 0
      head -n 1 "$dir/ended.$1" | grep -q '^_exit' &&
        grep -Eq 'lib(mpi|open-rte|open-pal)\.so' "$dir/ended.$1"
    }
    # Where a survivor neither failed nor was ended: its threads' stacks, so that a rare
    # straggler in CI says where it waits (gdb, where installed).
    stragglers_stacks() {
      local r pid
      for ((r = 0; r < victim; ++r)); do
        [[ -e $dir/result.$r ]] && continue
        pid=$(cat "$dir/pid.$r")
        if ! kill -0 "$pid" 2>/dev/null; then
          echo "== straggler rank $r (pid $pid) is gone without a result: $(cat "$dir/ended.$r" 2>/dev/null || echo 'no ended record (SIGKILL)')"
          continue
        fi
        command -v gdb >/dev/null || continue
        echo "== stacks of straggler rank $r (pid $pid)"
        timeout 20 gdb -p "$pid" -batch -ex "thread apply all bt 30" 2>/dev/null |
          grep -E '^(#|Thread )' || true
      done
    }
    declare -A ended_at=()
    wait_for_survivors() {
      local waited r done
      for ((waited = 0; waited < $1; ++waited)); do
        done=0
        for ((r = 0; r < victim; ++r)); do
          if [[ -e $dir/result.$r ]]; then
            done=$((done + 1))
          elif ended_by_mpi "$r"; then
            [[ -n ${ended_at[$r]:-} ]] || ended_at[$r]=$(date +%s.%N)
            done=$((done + 1))
          fi
        done
        ((done >= victim)) && return 0
        if ! kill -0 $job 2>/dev/null; then
          launcher_crashed && return 3
          fail "the job ended early, waiting for the survivors"
        fi
        sleep 0.1
      done
      stragglers_stacks
      fail "only $done of $victim survivors failed or were ended by MPI after $(($1 / 10)) s"
    }
    for ((attempt = 1; ; ++attempt)); do
      launch
      ended_at=()
      crashed=0
      wait_for "$total" "$dir/ready.*" 600 || crashed=1
      if ((!crashed)); then
        victim_pid=$(cat "$dir/pid.$victim")
        killed=$(date +%s.%N)
        kill -KILL "$victim_pid"
        wait_for_survivors 150 || crashed=1
      fi
      ((crashed)) || break
      wait $job || true
      ((attempt < 3)) || fail "Open MPI's launcher crashed in $attempt runs out of $attempt"
      echo "kill: Open MPI's launcher crashed in pmix_server_log (run $attempt); running again"
    done
    named=0
    by_mpi=0
    for ((r = 0; r < victim; ++r)); do
      if [[ ! -e $dir/result.$r && -n ${ended_at[$r]:-} ]]; then
        awk -v a="${ended_at[$r]}" -v k="$killed" 'BEGIN { exit !(a - k <= 5) }' ||
          fail "rank $r was ended by Open MPI only $(awk -v a="${ended_at[$r]}" -v k="$killed" 'BEGIN { print a - k }') s after the kill"
        [[ $between == pmpi ]] || fail "rank $r was ended by Open MPI's ob1 over $between"
        by_mpi=$((by_mpi + 1))
        continue
      fi
      read -r status at message <"$dir/result.$r" || fail "rank $r reported no failure"
      [[ $status != 0 ]] || fail "rank $r: status 0"
      awk -v a="$at" -v k="$killed" 'BEGIN { exit !(a - k <= 5) }' ||
        fail "rank $r failed $(awk -v a="$at" -v k="$killed" 'BEGIN { print a - k }') s after the kill: $message"
      [[ $message == *"rank $victim on host '$prefix-h$((hosts - 1))'"* ]] && named=$((named + 1))
    done
    # Over ucx and sockets a rank of another host learns of the death from its connection.
    [[ ($between != ucx && $between != sockets) || $named -gt 0 ]] ||
      fail "no rank named the dead rank $victim and its host"
    for ((r = 0; r < total; ++r)); do
      pid=$(cat "$dir/pid.$r")
      for ((waited = 0; waited < 100; ++waited)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      ! kill -0 "$pid" 2>/dev/null || fail "rank $r (pid $pid) still runs 10 s after failing"
    done
    kill -TERM $job 2>/dev/null || true
    rc=0
    wait $job || rc=$?
    echo "kill: mpirun returned $rc; $named rank(s) named the dead one; $by_mpi ended by Open MPI's ob1"
    ;;
  *)
    echo "multihost.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
left=$(blink_left)
[[ -z $left ]] || fail "Blink segments left in the hosts' /dev/shm: $left"
echo "multihost $case ($ranks ranks per host): OK"
