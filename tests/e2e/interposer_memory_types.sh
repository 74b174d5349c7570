#!/usr/bin/env bash
# CUDA-aware MPI calls under LD_PRELOAD of libblink_mpi.so, with the fake CUDA driver
# first on LD_LIBRARY_PATH. The interposer's rule for device buffers (README, "Device
# buffers"), each branch with its accounting:
#   - memory of the ranks' Blink devices (BLINK_DEVICE=EMULATED, blinkMemAlloc) is
#     Blink's: handled, on the device data path;
#   - device buffers Blink cannot move (the fake's, on every rank or on rank 1 only;
#     with or without a Blink device) go to the MPI library on every rank where it is
#     CUDA-aware (BLINK_MPI_CUDA_AWARE=1: Debian's Open MPI is not), counted as
#     fallback.memory_type, and give the right results;
#   - otherwise (AUTO: MPIX_Query_cuda_support() says 0 here) every rank fails them
#     with MPI_ERR_BUFFER, counted as refused.memory_type, with a message naming the
#     rank, the buffer and why MPI cannot take it either.
#   - a CUDA error while the device path sets up (injected on the emulated device)
#     takes the same rule, on every rank, for that call and the later ones.
# A later call on host buffers is Blink's in every run.
# Usage: interposer_memory_types.sh LIBBLINK_MPI PROGRAM FAKE_CUDA_DIR NP MPIEXEC [FLAGS...]
set -euo pipefail
lib=$1 prog=$2 fake_dir=$3 np=$4 mpiexec=$5
shift 5
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

preload=$lib
asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
[ -n "$asan" ] && preload="$asan:$lib"

fail() { echo "FAIL: $*"; for f in "$work"/*; do echo "== $f"; tail -n 40 "$f"; done; exit 1; }
# count RUN COLLECTIVE FIELD: a number from the accounting line, 0 when absent.
count() {
  local line
  line=$(grep "blink-accounting $2 " "$work/$1.err" || true)
  [ -n "$line" ] || fail "$1: no accounting line for $2"
  echo "$line" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k {print $2; found=1} END {if (!found) print 0}'
}
# run NAME MODE [VAR=VALUE...]: the program under the interposer.
run() {
  local name=$1 mode=$2
  shift 2
  local env=()
  for v in "$@"; do env+=(-x "$v"); done
  # A split decision would leave ranks waiting in different libraries: fail fast.
  "$mpiexec" "${flags[@]}" -x LD_PRELOAD="$preload" -x LD_LIBRARY_PATH="$fake_dir" \
    -x BLINK_DEBUG=INFO -x BLINK_TIMEOUT_S=30 "${env[@]}" -np "$np" "$prog" "$mode" \
    >"$work/$name.out" 2>"$work/$name.err" || fail "$name: the program failed (exit $?)"
  grep -q "^0 wrong$" "$work/$name.out" || fail "$name: wrong results"
}
# expect NAME HANDLED FALLBACK REFUSED: allreduce counts (the bcast: 1 in one column).
expect() {
  local name=$1
  [ "$(count "$name" allreduce handled)" -eq "$2" ] || fail "$name: allreduce handled != $2"
  [ "$(count "$name" allreduce fallback.memory_type)" -eq "$3" ] ||
    fail "$name: allreduce fallback.memory_type != $3"
  [ "$(count "$name" allreduce refused.memory_type)" -eq "$4" ] ||
    fail "$name: allreduce refused.memory_type != $4"
  local b=(0 0 0)
  if [ "$2" -eq 3 ]; then b[0]=1; elif [ "$3" -eq 2 ]; then b[1]=1; else b[2]=1; fi
  [ "$(count "$name" bcast handled)" -eq "${b[0]}" ] || fail "$name: bcast handled != ${b[0]}"
  [ "$(count "$name" bcast fallback.memory_type)" -eq "${b[1]}" ] ||
    fail "$name: bcast fallback.memory_type != ${b[1]}"
  [ "$(count "$name" bcast refused.memory_type)" -eq "${b[2]}" ] ||
    fail "$name: bcast refused.memory_type != ${b[2]}"
  local refused=$(( $4 + b[2] ))
  grep -q "^$refused refused$" "$work/$name.out" || fail "$name: not $refused calls refused"
}

# Blink's device path: 2 device allreduces + the host one, and the bcast.
run blink blink BLINK_DEVICE=EMULATED
expect blink 3 0 0
grep -q "memory: host memory (pageable or CUDA-registered) and device memory" "$work/blink.err" ||
  fail "blink: the communicator did not accept device memory"

for mode in all one; do
  run "$mode.aware" "$mode" BLINK_MPI_CUDA_AWARE=1
  expect "$mode.aware" 1 2 0
  run "$mode.refused" "$mode"
  expect "$mode.refused" 1 0 2
done
grep -q "allreduce of 262144 bytes goes to MPI: rank 1 passed CUDA device memory (sendbuff)" \
  "$work/one.aware.err" || fail "one.aware: the fallback does not name rank 1 and its buffer"
grep -q "MPI_allreduce of 262144 bytes refused: rank 1 passed CUDA device memory (sendbuff).*the MPI library is not CUDA-aware (MPIX_Query_cuda_support() = 0)" \
  "$work/one.refused.err" || fail "one.refused: the error does not name rank 1, its buffer and why"

# A CUDA error while the device path sets up (IPC, injected): every rank refuses the
# call, and later calls on device buffers, with the reason; host calls stay Blink's.
run ipcfail blink BLINK_DEVICE=EMULATED BLINK_DEVICE_EMULATION_FAIL_IPC=1 BLINK_MPI_CUDA_AWARE=0
expect ipcfail 1 0 2
grep -q "refused: the device data path failed to set up: .*opening a peer's memory failed" \
  "$work/ipcfail.err" || fail "ipcfail: the error does not say why"

# Memory of another device than the ranks' Blink devices: no path, MPI's or refused.
run other.aware all BLINK_DEVICE=EMULATED BLINK_MPI_CUDA_AWARE=1
expect other.aware 1 2 0
run other.refused all BLINK_DEVICE=EMULATED BLINK_MPI_CUDA_AWARE=0
expect other.refused 1 0 2
grep -q "not memory of its Blink device.*BLINK_MPI_CUDA_AWARE=0" "$work/other.refused.err" ||
  fail "other.refused: the error does not say why"
# Memory of the ranks' Blink devices where the communicator has no device path (the
# ranks as two nodes: no device transport between nodes): refused.
# (-x applies to the first app context only: the environment goes through env.)
span_env=(LD_PRELOAD="$preload" LD_LIBRARY_PATH="$fake_dir" BLINK_DEBUG=INFO BLINK_TIMEOUT_S=30
          BLINK_DEVICE=EMULATED BLINK_MPI_CUDA_AWARE=0)
"$mpiexec" "${flags[@]}" -np 1 env "${span_env[@]}" BLINK_NODE_ID=d18-node-a "$prog" blink : \
  -np $((np - 1)) env "${span_env[@]}" BLINK_NODE_ID=d18-node-b "$prog" blink \
  > "$work/span.out" 2> "$work/span.err" || fail "span: the program failed (exit $?)"
grep -q "^0 wrong$" "$work/span.out" || fail "span: wrong results"
expect span 1 0 2
grep -q "refused: device buffers, but this communicator has no GPU data path" "$work/span.err" ||
  fail "span: the error does not say why"
echo "interposer_memory_types: OK ($np ranks)"
