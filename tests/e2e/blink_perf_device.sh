#!/usr/bin/env bash
# blink_perf -m device on the emulated device (BLINK_DEVICE=EMULATED, set by ctest):
# small sweeps of every collective at 3 ranks, checked (no wrong element), the CSV
# with one Blink row per size and in-place mode, and the MPI and NCCL baselines skipped
# with a reason (NCCL: where libnccl.so.2 cannot be loaded, and on the emulated device),
# the run still succeeding.
# Usage: blink_perf_device.sh BLINK_PERF MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
perf=$1 mpiexec=$2
shift 2
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for collective in allreduce broadcast reduce allgather reducescatter; do
  out=$work/$collective.csv
  "$mpiexec" "${flags[@]}" -np 3 "$perf" -m device --collective "$collective" -d float16 \
    -b 3K -e 96K -f 32 -n 2 -w 1 --format csv > "$out" 2> "$work/$collective.err" || {
    echo "FAIL: $collective exited non-zero"; cat "$out" "$work/$collective.err"; exit 1; }
  rows=$(grep -c "^blink,$collective," "$out" || true)
  # 3K..96K by 32: two sizes, out of place and in place.
  if [ "$rows" != 4 ]; then echo "FAIL: $collective: $rows Blink rows, not 4"; cat "$out"; exit 1; fi
  if awk -F, '$1 == "blink" && $10 != 0 { bad = 1 } END { exit !bad }' "$out"; then
    echo "FAIL: $collective: wrong elements on device buffers"; cat "$out"; exit 1
  fi
done
"$mpiexec" "${flags[@]}" -np 2 "$perf" -m device -b 1K -e 1K -n 1 -w 1 --baseline mpi \
  > "$work/text" 2>&1
grep -q "device buffers: the MPI baseline is skipped" "$work/text" || {
  echo "FAIL: no note that the MPI baseline is skipped"; cat "$work/text"; exit 1; }
grep -q "rank(s) on 1 MPI host(s), device buffers" "$work/text" || {
  echo "FAIL: the header does not say device buffers"; cat "$work/text"; exit 1; }
# --baseline nccl: a library that is not there is said so, and Blink's sweep runs.
"$mpiexec" "${flags[@]}" -np 2 "$perf" -m device -b 1K -e 2K -n 1 -w 1 --baseline nccl \
  --nccl-library libnccl-not-installed.so.2 > "$work/nccl_absent" 2>&1 || {
  echo "FAIL: --baseline nccl without the library exited non-zero"; cat "$work/nccl_absent"; exit 1; }
grep -q "^# nccl baseline: skipped (libnccl-not-installed.so.2 not found)" "$work/nccl_absent" || {
  echo "FAIL: no note that the NCCL library was not found"; cat "$work/nccl_absent"; exit 1; }
grep -q "Out of bounds values : 0 OK" "$work/nccl_absent" || {
  echo "FAIL: Blink's sweep did not run"; cat "$work/nccl_absent"; exit 1; }
# The default library, found or not: skipped either way here (no library, or the
# emulated device), also in CSV (the note on stderr, the rows Blink's only).
"$mpiexec" "${flags[@]}" -np 2 "$perf" -m device -b 1K -e 2K -n 1 -w 1 --baseline nccl \
  --format csv > "$work/nccl.csv" 2> "$work/nccl.err" || {
  echo "FAIL: --baseline nccl exited non-zero"; cat "$work/nccl.csv" "$work/nccl.err"; exit 1; }
grep -Eq "^nccl baseline: skipped \((libnccl.so.2 not found|the device is emulated)" "$work/nccl.err" || {
  echo "FAIL: no note that the NCCL baseline is skipped"; cat "$work/nccl.err"; exit 1; }
if grep -q "^nccl," "$work/nccl.csv"; then echo "FAIL: NCCL rows on the emulated device"; exit 1; fi
echo "blink_perf_device: OK"
