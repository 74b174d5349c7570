// Runs everywhere: without a GPU the probe must say "none" cleanly; with one, the
// reduction kernels are checked against the host.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
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
  for (std::size_t i = 0; i < n; ++i) {
    // b holds NaNs from the specials above: a scaled NaN is a NaN, whichever.
    if (std::isnan(b[i])) {
      ASSERT_TRUE(std::isnan(out[i])) << "at " << i;
    } else {
      ASSERT_EQ(out[i], b[i] * 0.5f) << "at " << i;
    }
  }
  EXPECT_EQ(blink::cuda::launchReduce(blinkFloat32, blinkAvg, da, da, da, n, nullptr),
            blinkInvalidArgument);
  cudaFree(da);
  cudaFree(db);
}

// Every type and op on random bytes (so NaNs, infinities, subnormals and every
// integer edge appear), unaligned and aligned, against the host kernels; and avg's
// division against divideBy. Floating sums and products of two NaNs may keep either
// NaN (the hardware's choice), as on the host's own SIMD variants.
bool bitEqualOrBothNaN(const std::byte* x, const std::byte* y, blinkDataType_t t, bool nan_free) {
  const std::size_t es = blink::runtime::elementSize(t);
  if (std::memcmp(x, y, es) == 0) return true;
  if (!nan_free) return false;
  auto isNaN = [t](const std::byte* p) {
    std::uint16_t h = 0;
    std::uint32_t f = 0;
    std::uint64_t d = 0;
    switch (t) {
      case blinkFloat16:
        std::memcpy(&h, p, 2);
        return (h & 0x7FFFu) > 0x7C00u;
      case blinkBfloat16:
        std::memcpy(&h, p, 2);
        return (h & 0x7FFFu) > 0x7F80u;
      case blinkFloat32:
        std::memcpy(&f, p, 4);
        return (f & 0x7FFFFFFFu) > 0x7F800000u;
      case blinkFloat64:
        std::memcpy(&d, p, 8);
        return (d & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
      default:
        return false;
    }
  };
  return isNaN(x) && isNaN(y);
}

TEST(CudaKernels, EveryTypeAndOpIsTheHostKernelBitForBit) {
  if (blink::topo::probeCuda().devices.empty()) GTEST_SKIP() << "no GPU on this machine";
  const blinkDataType_t types[] = {blinkInt8,    blinkUint8,    blinkInt16,   blinkUint16,
                                   blinkInt32,   blinkUint32,   blinkInt64,   blinkUint64,
                                   blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
  const std::size_t count = 100'003;
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::byte>(state >> 56);
  };
  for (blinkDataType_t t : types) {
    const std::size_t es = blink::runtime::elementSize(t);
    const std::size_t bytes = count * es;
    std::vector<std::byte> a(bytes), b(bytes), out(bytes);
    for (auto& x : a) x = next();
    for (auto& x : b) x = next();
    void* raw = nullptr;
    ASSERT_EQ(cudaMalloc(&raw, 3 * bytes + 64), cudaSuccess);
    for (std::size_t shift : {std::size_t{0}, es}) {  // 16-byte aligned, then not
      auto* da = static_cast<std::byte*>(raw) + shift;
      auto* db = da + bytes;
      auto* dout = db + bytes;
      for (auto op : {blinkSum, blinkProd, blinkMin, blinkMax}) {
        cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
        cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice);
        ASSERT_EQ(blink::cuda::launchReduce(t, op, dout, da, db, count, nullptr), blinkSuccess);
        ASSERT_EQ(cudaMemcpy(out.data(), dout, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        std::vector<std::byte> want = a;
        blink::runtime::reduceInto(want.data(), b.data(), count, t, op);
        const bool arithmetic = op == blinkSum || op == blinkProd;
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_TRUE(bitEqualOrBothNaN(out.data() + i * es, want.data() + i * es, t, arithmetic))
              << blink::runtime::toString(t) << " " << blink::runtime::toString(op) << " at " << i
              << " shift " << shift;
        }
      }
      if (blink::runtime::isFloating(t)) {
        cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice);
        ASSERT_EQ(blink::cuda::launchDivide(t, da, 7, count, nullptr), blinkSuccess);
        ASSERT_EQ(cudaMemcpy(out.data(), da, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        std::vector<std::byte> want = a;
        blink::runtime::divideBy(want.data(), count, t, 7);
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_TRUE(bitEqualOrBothNaN(out.data() + i * es, want.data() + i * es, t, true))
              << blink::runtime::toString(t) << " divided, at " << i;
        }
      }
    }
    cudaFree(raw);
  }
}
#endif

}  // namespace
