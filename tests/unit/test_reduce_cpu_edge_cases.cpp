// The CPU reduction kernels where their semantics are sharpest: integer wrap-around,
// min/max of signed and unsigned values, Open MPI's min/max ordering (NaN, signed zero),
// fp16 rounded once after combining in float, and the bitwise and logical ops.
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

// The same pair at every position of a 37-element buffer (vector body and tail alike).
template <typename T>
std::vector<T> reduceFilled(rt::CpuIsa isa, T out_value, T in_value, blinkDataType_t type,
                            blinkRedOp_t op) {
  std::vector<T> out(37, out_value), in(37, in_value);
  rt::reduceIntoIsa(isa, out.data(), in.data(), out.size(), type, op);
  for (std::size_t i = 1; i < out.size(); ++i) {
    EXPECT_EQ(std::memcmp(&out[i], &out[0], sizeof(T)), 0) << "position " << i;
  }
  return out;
}

template <typename T>
void expectInt(T a, T b, blinkDataType_t type, blinkRedOp_t op, T expect) {
  for (rt::CpuIsa isa : supportedIsas()) {
    EXPECT_EQ(+reduceFilled(isa, a, b, type, op)[0], +expect)
        << rt::toString(isa) << " " << rt::toString(type) << " " << rt::toString(op) << " " << +a
        << ", " << +b;
  }
}

TEST(ReduceCpu, IntegerWrapAround) {
  expectInt<std::int8_t>(127, 1, blinkInt8, blinkSum, -128);
  expectInt<std::int8_t>(-128, -1, blinkInt8, blinkSum, 127);
  expectInt<std::uint8_t>(255, 1, blinkUint8, blinkSum, 0);
  expectInt<std::int8_t>(16, 16, blinkInt8, blinkProd, 0);
  expectInt<std::int8_t>(-128, -1, blinkInt8, blinkProd, -128);
  expectInt<std::uint8_t>(255, 255, blinkUint8, blinkProd, 1);
  expectInt<std::int16_t>(32767, 1, blinkInt16, blinkSum, -32768);
  expectInt<std::int16_t>(300, 300, blinkInt16, blinkProd, 24464);
  expectInt<std::uint16_t>(65535, 65535, blinkUint16, blinkProd, 1);
  expectInt<std::uint16_t>(65535, 2, blinkUint16, blinkSum, 1);
  expectInt<std::int32_t>(INT32_MAX, 1, blinkInt32, blinkSum, INT32_MIN);
  expectInt<std::int32_t>(INT32_MIN, -1, blinkInt32, blinkProd, INT32_MIN);
  expectInt<std::int32_t>(65536, 65536, blinkInt32, blinkProd, 0);
  expectInt<std::uint32_t>(0xFFFFFFFFu, 0xFFFFFFFFu, blinkUint32, blinkProd, 1u);
  expectInt<std::uint32_t>(0xFFFFFFFFu, 2u, blinkUint32, blinkSum, 1u);
  expectInt<std::int64_t>(INT64_MAX, 1, blinkInt64, blinkSum, INT64_MIN);
  expectInt<std::int64_t>(INT64_MIN, -1, blinkInt64, blinkSum, INT64_MAX);
  expectInt<std::int64_t>(INT64_MIN, -1, blinkInt64, blinkProd, INT64_MIN);
  expectInt<std::int64_t>(std::int64_t{1} << 32, std::int64_t{1} << 32, blinkInt64, blinkProd, 0);
  expectInt<std::uint64_t>(~std::uint64_t{0}, ~std::uint64_t{0}, blinkUint64, blinkProd, 1);
  expectInt<std::uint64_t>(~std::uint64_t{0}, 1, blinkUint64, blinkSum, 0);
}

TEST(ReduceCpu, IntegerMinMaxWithNegatives) {
  expectInt<std::int8_t>(-5, 3, blinkInt8, blinkMin, -5);
  expectInt<std::int8_t>(-5, 3, blinkInt8, blinkMax, 3);
  expectInt<std::int8_t>(-128, 127, blinkInt8, blinkMin, -128);
  expectInt<std::uint8_t>(200, 100, blinkUint8, blinkMax, 200);  // not read as signed
  expectInt<std::uint8_t>(200, 100, blinkUint8, blinkMin, 100);
  expectInt<std::int16_t>(-32768, -1, blinkInt16, blinkMax, -1);
  expectInt<std::uint16_t>(40000, 1, blinkUint16, blinkMax, 40000);
  expectInt<std::int32_t>(-7, -8, blinkInt32, blinkMin, -8);
  expectInt<std::uint32_t>(0x80000000u, 1u, blinkUint32, blinkMax, 0x80000000u);
  expectInt<std::int64_t>(-1, 1, blinkInt64, blinkMin, -1);
  expectInt<std::int64_t>(INT64_MIN, INT64_MAX, blinkInt64, blinkMax, INT64_MAX);
  expectInt<std::uint64_t>(std::uint64_t{1} << 63, 1, blinkUint64, blinkMax,
                           std::uint64_t{1} << 63);
  expectInt<std::uint64_t>(std::uint64_t{1} << 63, 1, blinkUint64, blinkMin, 1);
}

// Open MPI's (a < b ? a : b) with a = inout: a NaN in either gives in; equal values
// (+0 and -0) give in.
TEST(ReduceCpu, FloatMinMaxOrdering) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (rt::CpuIsa isa : supportedIsas()) {
    SCOPED_TRACE(rt::toString(isa));
    EXPECT_EQ(reduceFilled(isa, nan, 1.0f, blinkFloat32, blinkMin)[0], 1.0f);
    EXPECT_TRUE(std::isnan(reduceFilled(isa, 1.0f, nan, blinkFloat32, blinkMin)[0]));
    EXPECT_EQ(reduceFilled(isa, nan, 1.0f, blinkFloat32, blinkMax)[0], 1.0f);
    EXPECT_TRUE(std::isnan(reduceFilled(isa, 1.0f, nan, blinkFloat32, blinkMax)[0]));
    EXPECT_FALSE(std::signbit(reduceFilled(isa, -0.0f, 0.0f, blinkFloat32, blinkMin)[0]));
    EXPECT_TRUE(std::signbit(reduceFilled(isa, 0.0f, -0.0f, blinkFloat32, blinkMin)[0]));
    EXPECT_TRUE(std::signbit(reduceFilled(isa, 0.0f, -0.0f, blinkFloat32, blinkMax)[0]));
    EXPECT_EQ(reduceFilled(isa, -3.0f, 2.0f, blinkFloat32, blinkMin)[0], -3.0f);
    EXPECT_EQ(reduceFilled(isa, -3.0f, 2.0f, blinkFloat32, blinkMax)[0], 2.0f);
    EXPECT_EQ(reduceFilled(isa, -3.0, -2.0, blinkFloat64, blinkMin)[0], -3.0);
    EXPECT_EQ(reduceFilled(isa, std::nan(""), 5.0, blinkFloat64, blinkMax)[0], 5.0);
    EXPECT_TRUE(std::isnan(reduceFilled(isa, 5.0, std::nan(""), blinkFloat64, blinkMin)[0]));
    const std::uint16_t hnan = 0x7E00, one = 0x3C00, bnan = 0x7FC0, bone = 0x3F80;
    EXPECT_EQ(reduceFilled(isa, hnan, one, blinkFloat16, blinkMin)[0], one);
    EXPECT_EQ(reduceFilled(isa, one, hnan, blinkFloat16, blinkMax)[0], hnan);
    EXPECT_EQ(reduceFilled(isa, bnan, bone, blinkBfloat16, blinkMax)[0], bone);
    EXPECT_EQ(reduceFilled(isa, bone, bnan, blinkBfloat16, blinkMin)[0], bnan);
    EXPECT_EQ(reduceFilled<std::uint16_t>(isa, 0x8000, 0x0000, blinkFloat16, blinkMin)[0], 0);
    EXPECT_EQ(reduceFilled<std::uint16_t>(isa, 0xBC00, 0x4000, blinkFloat16, blinkMin)[0],
              0xBC00);  // -1 < 2
  }
}

// Rounded once, to nearest even, after combining in float.
TEST(ReduceCpu, HalfRounding) {
  for (rt::CpuIsa isa : supportedIsas()) {
    SCOPED_TRACE(rt::toString(isa));
    auto sum = [&](std::uint16_t a, std::uint16_t b) {
      return reduceFilled(isa, a, b, blinkFloat16, blinkSum)[0];
    };
    EXPECT_EQ(sum(halfOf(2048), halfOf(1)), halfOf(2048));
    EXPECT_EQ(sum(halfOf(2048), halfOf(3)), halfOf(2052));
    EXPECT_EQ(sum(0x7BFF, halfOf(16)), 0x7C00);  // 65504 + 16: tie, to Inf
    EXPECT_EQ(sum(0x7BFF, halfOf(15)), 0x7BFF);
    EXPECT_EQ(sum(0x0001, 0x0001), 0x0002);  // subnormals
    EXPECT_EQ(sum(0x03FF, 0x0001), 0x0400);  // to the smallest normal
    EXPECT_EQ(reduceFilled<std::uint16_t>(isa, 0x0001, 0x3800, blinkFloat16, blinkProd)[0],
              0x0000);  // 2^-24 * 0.5: tie, to even (zero)
    EXPECT_EQ(reduceFilled<std::uint16_t>(isa, 0x0003, 0x3800, blinkFloat16, blinkProd)[0],
              0x0002);  // 3 * 2^-25: tie, to even
  }
}

}  // namespace

using namespace reduce_cpu_oracle;  // NOLINT(google-build-using-namespace)

// The bitwise and logical ops (MPI_BAND .. MPI_LXOR) on every integer type and variant,
// against C's own operators; refused on floating types.
template <typename T>
void checkBitwiseAndLogical(blinkDataType_t type) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(type) + 11);
  const blinkRedOp_t ops[] = {blinkBand, blinkBor, blinkBxor, blinkLand, blinkLor, blinkLxor};
  for (std::size_t count : kCounts) {
    std::vector<T> out(count), in(count);
    for (std::size_t i = 0; i < count; ++i) {
      // A quarter zeros on each side, so the logical ops see every combination.
      out[i] = rng() % 4 == 0 ? T{0} : static_cast<T>(rng());
      in[i] = rng() % 4 == 0 ? T{0} : static_cast<T>(rng());
    }
    for (blinkRedOp_t op : ops) {
      std::vector<T> want(count);
      for (std::size_t i = 0; i < count; ++i) {
        const T a = out[i], b = in[i];
        switch (op) {
          case blinkBand:
            want[i] = static_cast<T>(a & b);
            break;
          case blinkBor:
            want[i] = static_cast<T>(a | b);
            break;
          case blinkBxor:
            want[i] = static_cast<T>(a ^ b);
            break;
          case blinkLand:
            want[i] = static_cast<T>(a && b);
            break;
          case blinkLor:
            want[i] = static_cast<T>(a || b);
            break;
          default:
            want[i] = static_cast<T>(!a != !b);
            break;
        }
      }
      for (rt::CpuIsa isa : supportedIsas()) {
        std::vector<T> got = out;
        rt::reduceIntoIsa(isa, got.data(), in.data(), count, type, op);
        ASSERT_EQ(got, want) << rt::toString(isa) << " " << rt::toString(type) << " "
                             << rt::toString(op) << " count " << count;
      }
    }
  }
}

TEST(ReduceCpu, BitwiseAndLogicalOps) {
  checkBitwiseAndLogical<std::int8_t>(blinkInt8);
  checkBitwiseAndLogical<std::uint8_t>(blinkUint8);
  checkBitwiseAndLogical<std::int16_t>(blinkInt16);
  checkBitwiseAndLogical<std::uint16_t>(blinkUint16);
  checkBitwiseAndLogical<std::int32_t>(blinkInt32);
  checkBitwiseAndLogical<std::uint32_t>(blinkUint32);
  checkBitwiseAndLogical<std::int64_t>(blinkInt64);
  checkBitwiseAndLogical<std::uint64_t>(blinkUint64);
  float f[2] = {1, 2};
  for (blinkDataType_t type : {blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64}) {
    for (blinkRedOp_t op : {blinkBand, blinkBor, blinkBxor, blinkLand, blinkLor, blinkLxor}) {
      expectInvalid([&] { rt::checkReduction(type, op); });
    }
  }
  expectInvalid([&] { rt::reduceInto(f, f + 1, 1, blinkFloat32, blinkBand); });
}
