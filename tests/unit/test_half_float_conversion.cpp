// The fp16 and bf16 converters of the CPU reduction kernels: every 16-bit pattern to
// float, and float to 16 bits at every tie, beside it and over a sweep of float bit
// patterns, against the double oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "reduce_cpu_oracle.hpp"
#include "runtime/reduce_cpu.hpp"

namespace {

using namespace reduce_cpu_oracle;  // NOLINT(google-build-using-namespace): the suite's own helpers

TEST(ReduceCpu, HalfConversionExhaustive) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = rt::halfToFloat(h);
    const double expect = halfValue(h);
    if (std::isnan(expect)) {
      ASSERT_TRUE(std::isnan(f)) << bits;
      ASSERT_EQ(std::signbit(f), (bits & 0x8000) != 0) << bits;
      // Quiet, payload in the top mantissa bits (what F16C's vcvtph2ps gives).
      ASSERT_EQ(std::bit_cast<std::uint32_t>(f),
                ((bits & 0x8000u) << 16) | 0x7FC00000u | ((bits & 0x03FFu) << 13))
          << bits;
      const std::uint16_t back = rt::floatToHalf(f);
      ASSERT_TRUE(std::isnan(halfValue(back))) << bits;
      ASSERT_EQ(back & 0x8000, bits & 0x8000) << bits;
      ASSERT_EQ(back, h | 0x0200) << bits;  // quiet, payload kept
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), expect) << bits;
    ASSERT_EQ(std::signbit(f), (bits & 0x8000) != 0) << bits;
    ASSERT_EQ(rt::floatToHalf(f), h) << bits;
  }
}

TEST(ReduceCpu, BfloatConversionExhaustive) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const float f = rt::bfloat16ToFloat(b);
    const double expect = bfloatValue(b);
    if (std::isnan(expect)) {
      ASSERT_TRUE(std::isnan(f)) << bits;
      ASSERT_EQ(rt::floatToBfloat16(f), b | 0x0040) << bits;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), expect) << bits;
    ASSERT_EQ(rt::floatToBfloat16(f), b) << bits;
  }
}

// Every midpoint between neighbouring 16-bit values (ties to even), the floats just
// beside it, and a sweep over float bit patterns, against the double oracle.
void checkFloatTo16(std::uint16_t (*convert)(float), int mant_bits) {
  auto value = [&](std::uint32_t bits) {
    return decode16(static_cast<std::uint16_t>(bits), mant_bits);
  };
  const std::uint32_t inf = ((1u << (15 - mant_bits)) - 1) << mant_bits;
  for (std::uint32_t bits = 0; bits < inf; ++bits) {
    const double lo = value(bits);
    const double hi = bits + 1 < inf ? value(bits + 1) : 2 * value(bits) - value(bits - 1);
    const auto mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);  // exact in float
    for (float sign : {1.0f, -1.0f}) {
      for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        f *= sign;
        ASSERT_EQ(convert(f), encode16(static_cast<double>(f), mant_bits))
            << "bits " << bits << " f " << f;
      }
    }
  }
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFu; x += 4093) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(x));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(decode16(convert(f), mant_bits)));
      continue;
    }
    ASSERT_EQ(convert(f), encode16(static_cast<double>(f), mant_bits)) << std::hex << x;
  }
}

TEST(ReduceCpu, FloatToHalfRounding) {
  checkFloatTo16(rt::floatToHalf, 10);
}
TEST(ReduceCpu, FloatToBfloatRounding) {
  checkFloatTo16(rt::floatToBfloat16, 7);
}

}  // namespace
