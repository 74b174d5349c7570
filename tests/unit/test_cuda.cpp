// Runs everywhere: without a GPU the probe must say "none" cleanly; with one, the
// reduction kernels are checked against the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/build_config.h"
#include "topology/cuda_probe.hpp"

#if BLINK_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "transport/cuda/reduce_kernels.hpp"
#endif

namespace {

TEST(CudaProbe, ReportsDevicesOrSaysWhyNot) {
  auto probe = blink::topo::probeCuda();
  if (probe.devices.empty()) {
    EXPECT_FALSE(probe.why_none.empty());
  } else {
    EXPECT_TRUE(probe.why_none.empty());
    ASSERT_EQ(probe.can_access_peer.size(), probe.devices.size());
    for (std::size_t i = 0; i < probe.devices.size(); ++i) {
      EXPECT_EQ(probe.devices[i].ordinal, static_cast<int>(i));
      EXPECT_FALSE(probe.can_access_peer[i][i]);
    }
  }
}

#if BLINK_HAVE_CUDA
TEST(CudaKernels, ReduceAndScaleMatchTheHost) {
  if (blink::topo::probeCuda().devices.empty()) GTEST_SKIP() << "no GPU on this machine";
  const std::size_t n = 1'000'003;
  std::vector<float> a(n), b(n), out(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97);
    b[i] = static_cast<float>(i % 13) - 6.0f;
  }
  void* raw_a = nullptr;
  void* raw_b = nullptr;
  ASSERT_EQ(cudaMalloc(&raw_a, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&raw_b, n * sizeof(float)), cudaSuccess);
  auto* da = static_cast<float*>(raw_a);
  auto* db = static_cast<float*>(raw_b);
  cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  for (auto op : {blinkSum, blinkProd, blinkMin, blinkMax}) {
    ASSERT_EQ(blink::cuda::launchReduce(blinkFloat32, op, db, da, db, n, nullptr), blinkSuccess);
    cudaMemcpy(out.data(), db, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < n; ++i) {
      float x = a[i], y = b[i];
      float want = op == blinkSum    ? x + y
                   : op == blinkProd ? x * y
                   : op == blinkMin  ? std::min(x, y)
                                     : std::max(x, y);
      ASSERT_EQ(out[i], want) << "op " << op << " at " << i;
    }
    b = out;
  }
  ASSERT_EQ(blink::cuda::launchScale(blinkFloat32, db, 0.5, n, nullptr), blinkSuccess);
  cudaMemcpy(out.data(), db, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], b[i] * 0.5f);
  EXPECT_EQ(blink::cuda::launchReduce(blinkFloat32, blinkAvg, da, da, da, n, nullptr),
            blinkInvalidArgument);
  cudaFree(da);
  cudaFree(db);
}
#endif

}  // namespace
