// The CPU reduction kernels against a scalar oracle: every type x op x instruction-set
// variant, several counts and misalignments, integer wrap-around, Open MPI's min/max
// ordering (NaN, signed zero), fp16/bf16 against results computed in double and rounded
// once, the 16-bit converters (exhaustively), divideBy and argument checking.
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

// ---- Running one case ---------------------------------------------------------------

constexpr std::size_t kGuard = 40;  // elements checked on both sides of inout

template <typename T>
void checkCase(rt::CpuIsa isa, blinkDataType_t type, blinkRedOp_t op, std::size_t count,
               std::size_t out_offset, std::size_t in_offset, std::mt19937_64& rng) {
  SCOPED_TRACE(rt::toString(isa) + " " + rt::toString(type) + " " + rt::toString(op) + " count " +
               std::to_string(count) + " offsets " + std::to_string(out_offset) + "," +
               std::to_string(in_offset));
  std::vector<T> out_buf, in_buf;
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    if (type == blinkFloat16 || type == blinkBfloat16) {
      out_buf = random16(count + 2 * kGuard, rng);
      in_buf = random16(count + 2 * kGuard, rng);
    } else {
      out_buf = randomValues<T>(count + 2 * kGuard, rng);
      in_buf = randomValues<T>(count + 2 * kGuard, rng);
    }
  } else {
    out_buf = randomValues<T>(count + 2 * kGuard, rng);
    in_buf = randomValues<T>(count + 2 * kGuard, rng);
  }
  const std::vector<T> before = out_buf;
  T* out = out_buf.data() + kGuard + out_offset;
  const T* in = in_buf.data() + kGuard + in_offset;
  rt::reduceIntoIsa(isa, out, in, count, type, op);

  for (std::size_t i = 0; i < count; ++i) {
    const T a = before[kGuard + out_offset + i];
    const T b = in[i];
    if constexpr (std::is_integral_v<T>) {
      if (std::is_same_v<T, std::uint16_t> && (type == blinkFloat16 || type == blinkBfloat16)) {
        const bool half = type == blinkFloat16;
        const auto a16 = static_cast<std::uint16_t>(a), b16 = static_cast<std::uint16_t>(b);
        const double x = half ? halfValue(a16) : bfloatValue(a16);
        const double y = half ? halfValue(b16) : bfloatValue(b16);
        const double r = oracleFloat(x, y, op);
        const std::uint16_t expect = half ? halfOf(r) : bfloatOf(r);
        const std::uint16_t got = static_cast<std::uint16_t>(out[i]);
        if (std::isnan(r)) {
          const double g = half ? halfValue(got) : bfloatValue(got);
          ASSERT_TRUE(std::isnan(g)) << i << ": " << a16 << " " << b16 << " gave " << got;
        } else {
          ASSERT_EQ(got, expect) << i << ": " << a16 << " " << b16;
        }
        continue;
      }
      ASSERT_EQ(out[i], oracleInt(a, b, op)) << i << ": " << +a << " " << +b;
    } else {
      const T r = oracleFloat(a, b, op);
      if (std::isnan(r)) {
        ASSERT_TRUE(std::isnan(out[i])) << i << ": " << a << " " << b;
      } else {
        ASSERT_EQ(std::memcmp(&out[i], &r, sizeof(T)), 0)
            << i << ": " << a << " " << b << " gave " << out[i] << " expected " << r;
      }
    }
  }
  // Nothing outside [out, out + count) was written.
  for (std::size_t i = 0; i < out_buf.size(); ++i) {
    if (i >= kGuard + out_offset && i < kGuard + out_offset + count) continue;
    ASSERT_EQ(std::memcmp(&out_buf[i], &before[i], sizeof(T)), 0) << "wrote outside, at " << i;
  }
}

template <typename T>
void checkType(blinkDataType_t type) {
  std::mt19937_64 rng(1234 + static_cast<unsigned>(type));
  for (rt::CpuIsa isa : supportedIsas()) {
    for (blinkRedOp_t op : kOps) {
      if (op == blinkAvg && !rt::isFloating(type)) continue;
      for (std::size_t count : kCounts) {
        for (auto [o, i] : {std::pair{0, 0}, {1, 0}, {0, 1}, {1, 1}, {3, 5}}) {
          checkCase<T>(isa, type, op, count, static_cast<std::size_t>(o),
                       static_cast<std::size_t>(i), rng);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// ---- Tests --------------------------------------------------------------------------

TEST(ReduceCpu, NamesAndSizes) {
  const char* names[] = {"int8",  "uint8",  "int16",   "uint16",   "int32",   "uint32",
                         "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
  const std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
  for (int t = 0; t < blinkNumTypes; ++t) {
    const auto type = static_cast<blinkDataType_t>(t);
    EXPECT_EQ(rt::toString(type), names[t]);
    EXPECT_EQ(rt::elementSize(type), sizes[t]);
    EXPECT_EQ(rt::isFloating(type), t >= blinkFloat16);
  }
  EXPECT_EQ(rt::toString(blinkSum), "sum");
  EXPECT_EQ(rt::toString(blinkProd), "prod");
  EXPECT_EQ(rt::toString(blinkMin), "min");
  EXPECT_EQ(rt::toString(blinkMax), "max");
  EXPECT_EQ(rt::toString(blinkAvg), "avg");
  // (C callers can pass any int; in C++ only values up to the enum's bit width are valid.)
  EXPECT_EQ(rt::toString(static_cast<blinkDataType_t>(15)), "unknown(15)");
  EXPECT_EQ(rt::toString(blinkBand), "band");
  EXPECT_EQ(rt::toString(blinkBor), "bor");
  EXPECT_EQ(rt::toString(blinkBxor), "bxor");
  EXPECT_EQ(rt::toString(blinkLand), "land");
  EXPECT_EQ(rt::toString(blinkLor), "lor");
  EXPECT_EQ(rt::toString(blinkLxor), "lxor");
  // (7 was unknown before the bitwise ops took 5..10; 15 is the enum's widest value.)
  EXPECT_EQ(rt::toString(static_cast<blinkRedOp_t>(15)), "unknown(15)");
  EXPECT_FALSE(rt::isFloating(static_cast<blinkDataType_t>(15)));
  EXPECT_EQ(rt::toString(rt::CpuIsa::Generic), "generic");
  EXPECT_EQ(rt::toString(rt::CpuIsa::Avx2), "avx2");
  EXPECT_EQ(rt::toString(rt::CpuIsa::Avx512), "avx512");
  EXPECT_TRUE(rt::cpuIsaSupported(rt::CpuIsa::Generic));
  EXPECT_TRUE(rt::cpuIsaSupported(rt::bestCpuIsa()));
  std::cout << "best CPU variant here: " << rt::toString(rt::bestCpuIsa()) << "\n";
}

TEST(ReduceCpu, RejectsBadArguments) {
  const auto bad_type = static_cast<blinkDataType_t>(blinkNumTypes);
  const auto bad_op = static_cast<blinkRedOp_t>(blinkNumOps);
  expectInvalid([&] { rt::elementSize(bad_type); });
  expectInvalid([&] { rt::elementSize(static_cast<blinkDataType_t>(15)); });
  expectInvalid([&] { rt::checkReduction(bad_type, blinkSum); });
  expectInvalid([&] { rt::checkReduction(static_cast<blinkDataType_t>(15), blinkSum); });
  expectInvalid([&] { rt::checkReduction(blinkFloat32, bad_op); });
  expectInvalid([&] { rt::checkReduction(blinkFloat32, static_cast<blinkRedOp_t>(15)); });
  for (blinkDataType_t type : kTypes) {
    for (blinkRedOp_t op : kOps) {
      if (op == blinkAvg && !rt::isFloating(type)) {
        expectInvalid([&] { rt::checkReduction(type, op); });
      } else {
        EXPECT_NO_THROW(rt::checkReduction(type, op));
      }
    }
  }
  std::int32_t a[4] = {}, b[4] = {};
  expectInvalid([&] { rt::reduceInto(a, b, 4, blinkInt32, blinkAvg); });
  expectInvalid([&] { rt::reduceInto(a, b, 4, bad_type, blinkSum); });
  expectInvalid([&] { rt::reduceInto(a, b, 4, blinkInt32, bad_op); });
  expectInvalid([&] { rt::reduceInto(nullptr, b, 4, blinkInt32, blinkSum); });
  expectInvalid([&] { rt::reduceInto(a, nullptr, 4, blinkInt32, blinkSum); });
  EXPECT_NO_THROW(rt::reduceInto(nullptr, nullptr, 0, blinkInt32, blinkSum));
  float f[4] = {};
  expectInvalid([&] { rt::divideBy(a, 4, blinkInt32, 2); });
  expectInvalid([&] { rt::divideBy(f, 4, bad_type, 2); });
  expectInvalid([&] { rt::divideBy(f, 4, blinkFloat32, 0); });
  expectInvalid([&] { rt::divideBy(nullptr, 4, blinkFloat32, 2); });
  EXPECT_NO_THROW(rt::divideBy(nullptr, 0, blinkFloat32, 2));
  for (rt::CpuIsa isa : {rt::CpuIsa::Avx2, rt::CpuIsa::Avx512}) {
    if (!rt::cpuIsaSupported(isa)) {
      expectInvalid([&] { rt::reduceIntoIsa(isa, f, f + 2, 2, blinkFloat32, blinkSum); },
                    blinkUnsupported);
    }
  }
}

TEST(ReduceCpu, Int8) {
  checkType<std::int8_t>(blinkInt8);
}
TEST(ReduceCpu, Uint8) {
  checkType<std::uint8_t>(blinkUint8);
}
TEST(ReduceCpu, Int16) {
  checkType<std::int16_t>(blinkInt16);
}
TEST(ReduceCpu, Uint16) {
  checkType<std::uint16_t>(blinkUint16);
}
TEST(ReduceCpu, Int32) {
  checkType<std::int32_t>(blinkInt32);
}
TEST(ReduceCpu, Uint32) {
  checkType<std::uint32_t>(blinkUint32);
}
TEST(ReduceCpu, Int64) {
  checkType<std::int64_t>(blinkInt64);
}
TEST(ReduceCpu, Uint64) {
  checkType<std::uint64_t>(blinkUint64);
}
TEST(ReduceCpu, Float16) {
  checkType<std::uint16_t>(blinkFloat16);
}
TEST(ReduceCpu, Bfloat16) {
  checkType<std::uint16_t>(blinkBfloat16);
}
TEST(ReduceCpu, Float32) {
  checkType<float>(blinkFloat32);
}
TEST(ReduceCpu, Float64) {
  checkType<double>(blinkFloat64);
}

// ---- divideBy -------------------------------------------------------------------------

TEST(ReduceCpu, DivideBy) {
  std::mt19937_64 rng(99);
  for (rt::CpuIsa isa : supportedIsas()) {
    SCOPED_TRACE(rt::toString(isa));
    for (int divisor : {1, 2, 3, 7, 8, -3}) {
      for (std::size_t count : kCounts) {
        auto f32 = randomValues<float>(count + 1, rng);
        auto f64 = randomValues<double>(count + 1, rng);
        auto h = random16(count + 1, rng);
        auto b = random16(count + 1, rng);
        const auto f32_before = f32;
        const auto f64_before = f64;
        const auto h_before = h;
        const auto b_before = b;
        rt::divideByIsa(isa, f32.data() + 1, count, blinkFloat32, divisor);
        rt::divideByIsa(isa, f64.data() + 1, count, blinkFloat64, divisor);
        rt::divideByIsa(isa, h.data() + 1, count, blinkFloat16, divisor);
        rt::divideByIsa(isa, b.data() + 1, count, blinkBfloat16, divisor);
        ASSERT_EQ(std::memcmp(&f32[0], &f32_before[0], sizeof(float)), 0);
        ASSERT_EQ(h[0], h_before[0]);
        for (std::size_t i = 1; i <= count; ++i) {
          const float ef = f32_before[i] / static_cast<float>(divisor);
          const double ed = f64_before[i] / divisor;
          if (std::isnan(ef)) {
            ASSERT_TRUE(std::isnan(f32[i]));
          } else {
            ASSERT_EQ(std::memcmp(&f32[i], &ef, sizeof ef), 0) << f32_before[i] << "/" << divisor;
          }
          if (std::isnan(ed)) {
            ASSERT_TRUE(std::isnan(f64[i]));
          } else {
            ASSERT_EQ(std::memcmp(&f64[i], &ed, sizeof ed), 0) << f64_before[i] << "/" << divisor;
          }
          const double hv = halfValue(h_before[i]) / divisor;
          const double bv = bfloatValue(b_before[i]) / divisor;
          if (std::isnan(hv)) {
            ASSERT_TRUE(std::isnan(halfValue(h[i])));
          } else {
            ASSERT_EQ(h[i], halfOf(hv)) << h_before[i] << "/" << divisor;
          }
          if (std::isnan(bv)) {
            ASSERT_TRUE(std::isnan(bfloatValue(b[i])));
          } else {
            ASSERT_EQ(b[i], bfloatOf(bv)) << b_before[i] << "/" << divisor;
          }
        }
      }
    }
  }
  // The plain entry point uses the best variant.
  float v[3] = {3, 6, 9};
  rt::divideBy(v, 3, blinkFloat32, 3);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], 3);
}

// Avg combines like sum; the caller divides once at the end.
TEST(ReduceCpu, AvgIsSumThenDivide) {
  std::vector<float> acc = {1, 2, 3, 4, 5}, other = {3, 4, 5, 6, 7};
  rt::reduceInto(acc.data(), other.data(), acc.size(), blinkFloat32, blinkAvg);
  rt::divideBy(acc.data(), acc.size(), blinkFloat32, 2);
  EXPECT_EQ(acc, (std::vector<float>{2, 3, 4, 5, 6}));
}

bool isNanAt(const std::vector<std::uint8_t>& v, blinkDataType_t type, std::size_t i) {
  switch (type) {
    case blinkFloat16:
    case blinkBfloat16: {
      std::uint16_t x = 0;
      std::memcpy(&x, v.data() + 2 * i, 2);
      return std::isnan(decode16(x, type == blinkFloat16 ? 10 : 7));
    }
    case blinkFloat32: {
      float x = 0;
      std::memcpy(&x, v.data() + 4 * i, 4);
      return std::isnan(x);
    }
    case blinkFloat64: {
      double x = 0;
      std::memcpy(&x, v.data() + 8 * i, 8);
      return std::isnan(x);
    }
    default:
      return false;
  }
}

// Every variant gives the same bits (the F16C instructions and the portable conversions
// agree, NaN payloads included), except for which payload survives a sum or product of
// two NaNs.
TEST(ReduceCpu, VariantsAgreeBitForBit) {
  std::mt19937_64 rng(7);
  const std::size_t n = 1 << 16;
  for (blinkDataType_t type : {blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64}) {
    for (blinkRedOp_t op : kOps) {
      const std::size_t bytes = n * rt::elementSize(type);
      std::vector<std::uint8_t> out(bytes), in(bytes);
      for (auto& x : out) x = static_cast<std::uint8_t>(rng());
      for (auto& x : in) x = static_cast<std::uint8_t>(rng());
      std::vector<std::uint8_t> reference = out;
      rt::reduceIntoIsa(rt::CpuIsa::Generic, reference.data(), in.data(), n, type, op);
      for (rt::CpuIsa isa : supportedIsas()) {
        std::vector<std::uint8_t> got = out;
        rt::reduceIntoIsa(isa, got.data(), in.data(), n, type, op);
        const std::size_t size = rt::elementSize(type);
        for (std::size_t i = 0; i < n; ++i) {
          auto hex = [&](const std::vector<std::uint8_t>& v) {
            std::uint64_t x = 0;
            std::memcpy(&x, v.data() + i * size, size);
            std::ostringstream s;
            s << std::hex << x;
            return s.str();
          };
          if (std::memcmp(got.data() + i * size, reference.data() + i * size, size) == 0) {
            continue;
          }
          // + and * commute, and the compiler may swap their operands: which NaN's
          // payload survives when both are NaN is not fixed.
          const bool both_nan = isNanAt(out, type, i) && isNanAt(in, type, i);
          ASSERT_TRUE(both_nan && (op == blinkSum || op == blinkProd || op == blinkAvg) &&
                      isNanAt(got, type, i))
              << rt::toString(isa) << " " << rt::toString(type) << " " << rt::toString(op) << " at "
              << i << ": " << hex(out) << " op " << hex(in) << " gave " << hex(got) << ", generic "
              << hex(reference);
        }
      }
    }
  }
}

}  // namespace
