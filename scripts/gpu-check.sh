#!/usr/bin/env bash
# The GPU data path on a machine with a GPU, in one run of at most about 8 minutes:
# a Release build with CUDA, the CUDA unit tests, the MPI tests on device buffers at
# np 1-4 on one GPU, the same with every copy staged through pinned host memory
# (BLINK_DEVICE_P2P=OFF), 8 ranks on one GPU as a DGX-1V (BLINK_TOPO=dgx1-v100: tree
# plans on device memory, paced by their channels' shares), the interposer on
# cudaMalloc'd buffers (Blink's device path; and where no path exists, refused or
# handed to a CUDA-aware MPI), the kernel benchmark (reduction against cudaMemcpy
# device to device), blink_perf -m device at np 1-4 and its NCCL baseline. Results
# under OUT/gpu-check/: results.csv (one row per step), kernel_bench.csv,
# blink_perf_device.csv, blink_perf_nccl.csv, summary.md, logs/. Exits non-zero if
# any step failed.
#
# Usage: scripts/gpu-check.sh [--dry-run] [--no-build] [--build-dir DIR] [--out DIR] [--help]
#   --dry-run        no GPU needed: the same steps on the emulated device
#                    (BLINK_DEVICE=EMULATED); GPU-only steps are recorded as skipped
#   --no-build       use the build tree as it is (built elsewhere, e.g. on a login node
#                    for a GPU node without compilers): only checks the programs exist
#   --build-dir DIR  build tree to (re)use (default: build-gpu/, or build/ with --dry-run)
#   --out DIR        where results go (default: $OUT, else ./gpu-check-out)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dry_run=0
no_build=0
build_dir=""
out_dir=${OUT:-$root/gpu-check-out}
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --no-build) no_build=1; shift ;;
    --build-dir|--out)
      [ "$#" -ge 2 ] || { echo "gpu-check.sh: $1 needs a value" >&2; exit 2; }
      if [ "$1" = --build-dir ]; then build_dir=$2; else out_dir=$2; fi
      shift 2 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$build_dir" ]; then
  if [ "$dry_run" = 1 ]; then build_dir=$root/build; else build_dir=$root/build-gpu; fi
fi
results=$out_dir/gpu-check
mkdir -p "$results/logs"
csv=$results/results.csv
echo "step,status,seconds,detail" > "$csv"
failures=0
started=$(date +%s)

# record STEP STATUS SECONDS DETAIL
record() {
  printf '%s,%s,%s,"%s"\n' "$1" "$2" "$3" "${4//\"/\'}" >> "$csv"
  printf '%-34s %-5s %5ss  %s\n' "$1" "$2" "$3" "$4"
  if [ "$2" = FAIL ]; then failures=$((failures + 1)); fi
}

# run_step NAME TIMEOUT_S COMMAND...: runs it with a time limit, logs, records.
run_step() {
  local name=$1 limit=$2 t0 rc=0
  shift 2
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$results/logs/$name.log" 2>&1 || rc=$?
  local seconds=$(($(date +%s) - t0))
  if [ "$rc" = 0 ]; then
    record "$name" PASS "$seconds" "$(tail -n 1 "$results/logs/$name.log" | tr -d '\r' | cut -c1-120)"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    record "$name" FAIL "$seconds" "timed out after ${limit} s (logs/$name.log)"
  else
    record "$name" FAIL "$seconds" "exit $rc: $(grep -m1 -E 'Failure|error|Error' "$results/logs/$name.log" | cut -c1-100) (logs/$name.log)"
  fi
  return 0
}

# Prerequisites: say what is missing rather than fail halfway.
missing=()
tools=(mpirun timeout)
if [ "$no_build" = 0 ]; then tools+=(cmake ninja); fi
for tool in "${tools[@]}"; do
  command -v "$tool" > /dev/null || missing+=("$tool")
done
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
if [ "$dry_run" = 0 ] && [ "$no_build" = 0 ]; then
  [ -x "$nvcc" ] || command -v nvcc > /dev/null || missing+=("nvcc ($nvcc)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  record prerequisites FAIL 0 "missing: ${missing[*]}"
  exit 1
fi
gpu_info="none (dry run)"
if [ "$dry_run" = 0 ]; then
  if command -v nvidia-smi > /dev/null; then
    gpu_info=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)
  else
    gpu_info="unknown (no nvidia-smi)"
  fi
fi
record prerequisites PASS 0 "GPU: $gpu_info"

# 1. Release build with CUDA: only what the steps below run.
targets=(test_cuda test_emulated_device test_device_collectives blink_perf blink_mpi
         mpi_device_buffers)
# Warnings are errors in the builds without a GPU (where they are checked, for the
# kernels too); here a Release-only warning must not cost the one run on a GPU.
cmake_args=(-G Ninja -DBLINK_WERROR=OFF -DBLINK_BUILD_PERF=ON)
if [ "$dry_run" = 0 ]; then
  targets+=(device_reduce_bench)
  cmake_args+=(-DCMAKE_BUILD_TYPE=Release -DBLINK_ENABLE_CUDA=ON
               -DCMAKE_CUDA_COMPILER="$(command -v "$nvcc" || echo "$nvcc")"
               -DCMAKE_CUDA_ARCHITECTURES=80\;90)
fi
if [ -f "$build_dir/build.ninja" ] && [ "$dry_run" = 1 ]; then
  configure=(true)  # reuse the tree as configured
else
  configure=(cmake -S "$root" -B "$build_dir" "${cmake_args[@]}")
fi
if [ "$no_build" = 1 ]; then
  programs=("$build_dir/tests/test_cuda" "$build_dir/tests/test_emulated_device"
            "$build_dir/tests/test_device_collectives" "$build_dir/tests/mpi_device_buffers"
            "$build_dir/perf/blink_perf" "$build_dir/mpi_glue/libblink_mpi.so")
  if [ "$dry_run" = 0 ]; then programs+=("$build_dir/perf/device_reduce_bench"); fi
  absent=()
  for program in "${programs[@]}"; do [ -e "$program" ] || absent+=("$program"); done
  if [ "${#absent[@]}" -gt 0 ]; then
    record build FAIL 0 "--no-build, but missing: ${absent[*]}"
  else
    record build PASS 0 "--no-build: the programs of $build_dir as built"
  fi
else
  # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
  run_step build 330 bash -c '"$@" && cmake --build "$0" --parallel "$(nproc)" --target '"${targets[*]}" \
    "$build_dir" "${configure[@]}"
fi
if grep -q '^build,FAIL' "$csv"; then
  echo "gpu-check: the build failed; see $results/logs/build.log" >&2
fi
tests=$build_dir/tests
device=CUDA
if [ "$dry_run" = 1 ]; then device=EMULATED; fi

# MPI as root, oversubscribed, no binding (several ranks share one GPU and the cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_mpi_yield_when_idle=1
# Open MPI's op/avx saturates 8-bit sums; the tests compare with C's wrapping.
export OMPI_MCA_op=^avx

# 2. The CUDA unit tests (kernels against the host, bit for bit) and the emulation's.
run_step unit_cuda_kernels 120 "$tests/test_cuda"
if [ "$dry_run" = 0 ] && grep -q SKIPPED "$results/logs/unit_cuda_kernels.log"; then
  record unit_cuda_kernels_ran FAIL 0 "the kernel tests were skipped: no GPU visible to CUDA"
fi
run_step unit_emulated_device 60 "$tests/test_emulated_device"

# 3. Device buffers through the C API at np 1-4 on one GPU: every collective, type
#    and op against PMPI_*; small slots (many chunks per message), then the default.
for np in 1 2 3 4; do
  run_step "mpi_device_np$np" 90 env BLINK_DEVICE="$device" BLINK_DEVICE_SLOT_BYTES=4096 \
    mpirun -np "$np" "$tests/test_device_collectives" --gtest_color=no
done
run_step mpi_device_np4_default_slots 90 env BLINK_DEVICE="$device" \
  mpirun -np 4 "$tests/test_device_collectives" --gtest_color=no

# 4. Eight ranks on one GPU as a DGX-1V: the tree plans on device memory.
run_step mpi_device_dgx1v_np8 150 env BLINK_DEVICE="$device" BLINK_DEVICE_SLOT_BYTES=65536 \
  BLINK_TOPO=dgx1-v100 mpirun -np 8 "$tests/test_device_collectives" --gtest_color=no

# 4b. Every copy between ranks staged through pinned host memory (cudaHostRegister on
#     shared memory, device -> host -> device), as between GPUs without peer access.
run_step mpi_device_np4_staged 90 env BLINK_DEVICE="$device" BLINK_DEVICE_SLOT_BYTES=4096 \
  BLINK_DEVICE_P2P=OFF mpirun -np 4 "$tests/test_device_collectives" --gtest_color=no

# 4c. The interposer on device buffers from blinkMemAlloc (cudaMalloc): Blink's device
#     path (every call handled, none refused), then the ranks as two nodes (no device
#     path): refused with MPI_ERR_BUFFER where the MPI library is not CUDA-aware
#     (forced), and as MPIX_Query_cuda_support says (AUTO: refused, or MPI's on a
#     CUDA-aware MPI; either way no wrong element).
interposer=(LD_PRELOAD="$build_dir/mpi_glue/libblink_mpi.so" BLINK_DEVICE="$device" BLINK_DEBUG=INFO
            BLINK_TIMEOUT_S=60)
# shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
run_step interposer_device_path 60 bash -c '"$@" > "$0" 2>&1; rc=$?; cat "$0";
  [ "$rc" = 0 ] && grep -q "^0 wrong$" "$0" && grep -q "^0 refused$" "$0" &&
  grep -q "blink-accounting allreduce handled=3 " "$0" && echo "handled by Blink: 3 allreduce, 1 bcast"' \
  "$results/logs/interposer_device_path.out" \
  mpirun -np 2 env "${interposer[@]}" "$tests/mpi_device_buffers" blink
for aware in 0 AUTO; do
  # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
  run_step "interposer_device_no_path_aware_$aware" 60 bash -c 'aware=$1; shift;
    "$@" > "$0" 2>&1; rc=$?; cat "$0";
    [ "$rc" = 0 ] && grep -q "^0 wrong$" "$0" &&
    { [ "$aware" = AUTO ] || grep -q "^3 refused$" "$0"; } &&
    echo "$(grep -m1 -o "the MPI library is [a-z -]*CUDA-aware" "$0"); $(grep "refused$" "$0")"' \
    "$results/logs/interposer_device_no_path_$aware.out" "$aware" \
    mpirun -np 1 env "${interposer[@]}" BLINK_MPI_CUDA_AWARE="$aware" BLINK_NODE_ID=gpu-check-a \
    "$tests/mpi_device_buffers" blink : \
    -np 1 env "${interposer[@]}" BLINK_MPI_CUDA_AWARE="$aware" BLINK_NODE_ID=gpu-check-b \
    "$tests/mpi_device_buffers" blink
done

# 5. The kernel benchmark: reduction against cudaMemcpy device to device.
bench_csv=$results/kernel_bench.csv
if [ "$dry_run" = 1 ]; then
  record kernel_bench SKIP 0 "needs a GPU"
else
  # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
  run_step kernel_bench 90 bash -c '"$0" --bytes 268435456 --reps 20 > "$1"' \
    "$build_dir/perf/device_reduce_bench" "$bench_csv"
  if [ -s "$bench_csv" ]; then
    # The issue's bar: fp32 and bf16 sums reach 90% of the copy's memory bandwidth.
    for type in float32 bfloat16; do
      ratio=$(awk -F, -v t="$type" '$1 == t && $2 == "sum" { print $8 }' "$bench_csv")
      if [ -n "$ratio" ] && awk -v r="$ratio" 'BEGIN { exit !(r >= 0.9) }'; then
        record "kernel_bandwidth_$type" PASS 0 "ratio $ratio of cudaMemcpy D2D (>= 0.9)"
      else
        record "kernel_bandwidth_$type" FAIL 0 "ratio ${ratio:-missing} of cudaMemcpy D2D (< 0.9)"
      fi
    done
  fi
fi

# 6. blink_perf -m device at np 1-4: AllReduce float32 sum, 1 KiB..256 MiB, checked.
perf_csv=$results/blink_perf_device.csv
: > "$perf_csv"
for np in 1 2 3 4; do
  # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
  run_step "blink_perf_device_np$np" 90 bash -c \
    '"$@" >> "$0"' "$perf_csv" env BLINK_DEVICE="$device" mpirun -np "$np" \
    "$build_dir/perf/blink_perf" -m device -b 1K -e "$([ "$dry_run" = 1 ] && echo 4M || echo 256M)" \
    -f 4 -n 10 -w 3 --format csv
done

# 7. The NCCL baseline (libnccl.so.2 with dlopen): at np 1 (NCCL refuses several ranks
#    on one GPU: at np 2 it says why and Blink's sweep still runs). Skipped, with the
#    reason, where the library is missing or the device emulated.
nccl_csv=$results/blink_perf_nccl.csv
: > "$nccl_csv"
for np in 1 2; do
  # shellcheck disable=SC2016  # expanded by the inner bash, from its arguments
  run_step "blink_perf_nccl_np$np" 120 bash -c \
    '"$@" >> "$0" 2> "$0.err"; rc=$?; cat "$0.err"; [ "$rc" = 0 ] &&
     { grep "nccl baseline: skipped" "$0.err" || echo "NCCL ran: $(grep -c "^nccl," "$0") rows"; }' \
    "$nccl_csv" env BLINK_DEVICE="$device" mpirun -np "$np" \
    "$build_dir/perf/blink_perf" -m device -b 1K -e "$([ "$dry_run" = 1 ] && echo 1M || echo 256M)" \
    -f 4 -n 10 -w 3 --baseline nccl --format csv
done
if [ -s "$nccl_csv" ] && awk -F, '$1 == "nccl" && $10 != 0 { bad = 1 } END { exit !bad }' "$nccl_csv"; then
  record blink_perf_nccl_check FAIL 0 "NCCL's results differ from the expected ones"
fi

total=$(($(date +%s) - started))
{
  echo "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "- mode: $([ "$dry_run" = 1 ] && echo 'dry run (emulated device)' || echo 'GPU (BLINK_DEVICE=CUDA)')"
  echo "- GPU: $gpu_info"
  echo "- commit: $(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)"
  echo "- total: ${total} s; failed steps: $failures"
  echo
  echo "| step | status | seconds | detail |"
  echo "|---|---|---|---|"
  tail -n +2 "$csv" | awk -F, '{ d = $4; for (i = 5; i <= NF; ++i) d = d "," $i; gsub(/"/, "", d);
                                 printf "| %s | %s | %s | %s |\n", $1, $2, $3, d }'
  if [ -s "$bench_csv" ]; then
    echo
    echo "## Kernel benchmark"
    echo
    echo '```'
    cat "$bench_csv"
    echo '```'
  fi
  if [ -s "$perf_csv" ]; then
    echo
    echo "## blink_perf -m device (AllReduce float32 sum; np 1-4 in order)"
    echo
    echo '```'
    grep -v '^impl,' "$perf_csv"
    echo '```'
  fi
  if grep -q '^nccl,' "$nccl_csv" 2> /dev/null; then
    echo
    echo "## blink_perf -m device --baseline nccl (AllReduce float32 sum)"
    echo
    echo '```'
    grep -v '^impl,' "$nccl_csv"
    echo '```'
  fi
} > "$results/summary.md"
echo "gpu-check: $failures failed step(s) in ${total} s; results in $results"
[ "$failures" = 0 ]
