// perf/device_reduce_bench: the CUDA reduction kernels (cuda::launchReduce) against
// cudaMemcpy device to device on the same GPU, in one run. Needs a GPU; built only
// with CUDA. CSV on stdout (scripts/gpu-check.sh collects it).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/reduce_cpu.hpp"
#include "transport/cuda/reduce_kernels.hpp"

namespace {

const char* kHelp =
    R"(Usage: device_reduce_bench [--bytes N] [--reps N] [--device I]

For every datatype with op sum (and float32 with min), the kernel that combines two
device buffers into a third (dst = a + b, as the device transport reduces a received
chunk), against cudaMemcpy device to device of the same size, on GPU I (default 0).

  Columns (CSV): type, op, bytes, reduce_us, reduce_mem_gbps, copy_us, copy_mem_gbps,
  ratio. *_us: best of --reps timed runs (after one warm-up), by CUDA events.
  reduce_mem_gbps = 3 x bytes / time (two reads, one write); copy_mem_gbps = 2 x bytes
  / time (one read, one write); ratio = reduce_mem_gbps / copy_mem_gbps, i.e. how
  close the kernel comes to the memory bandwidth a copy reaches.

  --bytes N   size of each buffer in bytes (default 67108864 = 64 MiB)
  --reps N    timed runs per measurement (default 20)
  --device I  CUDA ordinal (default 0)
  -h, --help  this text

Exit status: 0 success, 1 CUDA error (no GPU), 2 bad command line.
)";

bool check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  std::fprintf(stderr, "device_reduce_bench: %s: %s\n", what, cudaGetErrorString(rc));
  return false;
}

template <typename F>
float bestMicroseconds(int reps, F&& run) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  run();  // warm-up
  cudaDeviceSynchronize();
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start);
    run();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (ms * 1000.0f < best) best = ms * 1000.0f;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = 64u << 20;
  int reps = 20, device = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "device_reduce_bench: %s needs a value (see --help)\n", arg.c_str());
      return 2;
    }
    const long long value = std::atoll(argv[++i]);
    if (value <= 0) {
      std::fprintf(stderr, "device_reduce_bench: %s must be positive\n", arg.c_str());
      return 2;
    }
    if (arg == "--bytes") {
      bytes = static_cast<std::size_t>(value) / 8 * 8;
    } else if (arg == "--reps") {
      reps = static_cast<int>(value);
    } else if (arg == "--device") {
      device = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "device_reduce_bench: unknown option %s (see --help)\n", arg.c_str());
      return 2;
    }
  }
  if (!check(cudaSetDevice(device), "cudaSetDevice")) return 1;
  void *a = nullptr, *b = nullptr, *dst = nullptr;
  if (!check(cudaMalloc(&a, bytes), "cudaMalloc") || !check(cudaMalloc(&b, bytes), "cudaMalloc") ||
      !check(cudaMalloc(&dst, bytes), "cudaMalloc")) {
    return 1;
  }
  cudaMemset(a, 0, bytes);
  cudaMemset(b, 0, bytes);
  std::printf("type,op,bytes,reduce_us,reduce_mem_gbps,copy_us,copy_mem_gbps,ratio\n");
  struct Row {
    blinkDataType_t type;
    blinkRedOp_t op;
  };
  const Row rows[] = {{blinkInt8, blinkSum},    {blinkInt32, blinkSum},    {blinkInt64, blinkSum},
                      {blinkFloat16, blinkSum}, {blinkBfloat16, blinkSum}, {blinkFloat32, blinkSum},
                      {blinkFloat32, blinkMin}, {blinkFloat64, blinkSum}};
  for (const Row& row : rows) {
    const std::size_t count = bytes / blink::runtime::elementSize(row.type);
    bool ok = true;
    const float reduce_us = bestMicroseconds(reps, [&] {
      ok = ok &&
           blink::cuda::launchReduce(row.type, row.op, dst, a, b, count, nullptr) == blinkSuccess;
    });
    const float copy_us =
        bestMicroseconds(reps, [&] { cudaMemcpyAsync(dst, a, bytes, cudaMemcpyDeviceToDevice); });
    if (!ok || !check(cudaGetLastError(), "kernel")) return 1;
    const double reduce_gbps = 3.0 * static_cast<double>(bytes) / reduce_us / 1e3;
    const double copy_gbps = 2.0 * static_cast<double>(bytes) / copy_us / 1e3;
    std::printf("%s,%s,%zu,%.1f,%.1f,%.1f,%.1f,%.3f\n", blink::runtime::toString(row.type).c_str(),
                blink::runtime::toString(row.op).c_str(), bytes, reduce_us, reduce_gbps, copy_us,
                copy_gbps, reduce_gbps / copy_gbps);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(dst);
  return 0;
}
