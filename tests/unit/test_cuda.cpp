// Runs everywhere: without a GPU the probe must say "none" cleanly; with one, the
// reduction kernels are checked against the host.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/build_config.h"
#include "topology/cuda_probe.hpp"

#if BLINK_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "runtime/reduce_cpu.hpp"
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
  // Special values where min/max implementations disagree: NaN in either operand and
  // ties of +0 and -0; the host kernels (reduceInto) are the oracle, bit for bit.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {nan, 0.0f, -0.0f, 1.0f, -1.0f};
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 97);
    b[i] = static_cast<float>(i % 13) - 6.0f;
    if (i < 25) {
      a[i] = specials[i % 5];
      b[i] = specials[i / 5];
    }
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
    std::vector<float> want = a;
    blink::runtime::reduceInto(want.data(), b.data(), n, blinkFloat32, op);
    for (std::size_t i = 0; i < n; ++i) {
      // Which NaN arithmetic returns is the hardware's choice; which operand min/max
      // return is ours, so those compare bit for bit.
      if (std::isnan(out[i]) && std::isnan(want[i]) && (op == blinkSum || op == blinkProd))
        continue;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(want[i]))
          << "op " << op << " at " << i << ": " << a[i] << " with " << b[i];
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
