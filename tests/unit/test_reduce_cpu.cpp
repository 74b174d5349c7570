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
#include "runtime/reduce_cpu.hpp"

namespace {

namespace rt = blink::runtime;

constexpr blinkDataType_t kTypes[] = {blinkInt8,    blinkUint8,    blinkInt16,   blinkUint16,
                                      blinkInt32,   blinkUint32,   blinkInt64,   blinkUint64,
                                      blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
constexpr blinkRedOp_t kOps[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};
constexpr std::size_t kCounts[] = {0, 1, 7, 31, 1000, 4099};

std::vector<rt::CpuIsa> supportedIsas() {
  std::vector<rt::CpuIsa> isas;
  for (rt::CpuIsa isa : {rt::CpuIsa::Generic, rt::CpuIsa::Avx2, rt::CpuIsa::Avx512}) {
    if (rt::cpuIsaSupported(isa)) isas.push_back(isa);
  }
  return isas;
}

// ---- An independent oracle ------------------------------------------------------------

// The value of a binary16 / bfloat16 bit pattern, decoded from its fields.
double decode16(std::uint16_t bits, int mant_bits) {
  const int exp_bits = 15 - mant_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (bits >> mant_bits) & ((1 << exp_bits) - 1);
  const int m = bits & ((1 << mant_bits) - 1);
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (e == (1 << exp_bits) - 1) {
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  }
  if (e == 0) return sign * std::ldexp(m, 1 - bias - mant_bits);
  return sign * std::ldexp(m + (1 << mant_bits), e - bias - mant_bits);
}

// v rounded once to the 16-bit format (nearest, ties to even). NaN gives 0x7E00 / 0x7FC0.
std::uint16_t encode16(double v, int mant_bits) {
  const int exp_bits = 15 - mant_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const std::uint16_t inf = static_cast<std::uint16_t>(((1 << exp_bits) - 1) << mant_bits);
  if (std::isnan(v)) return static_cast<std::uint16_t>(inf | (1 << (mant_bits - 1)));
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | inf);
  int ex = 0;
  std::frexp(a, &ex);
  int e = std::max(ex - 1, 1 - bias);  // the exponent of the result's quantum
  double q = std::nearbyint(std::ldexp(a, mant_bits - e));
  if (q >= std::ldexp(1.0, mant_bits + 1)) {
    q /= 2;
    ++e;
  }
  if (e > bias) return static_cast<std::uint16_t>(sign | inf);
  const auto qi = static_cast<unsigned>(q);
  if (qi < (1u << mant_bits)) return static_cast<std::uint16_t>(sign | qi);  // subnormal
  return static_cast<std::uint16_t>(sign | ((e + bias) << mant_bits) | (qi - (1u << mant_bits)));
}

double halfValue(std::uint16_t h) {
  return decode16(h, 10);
}
double bfloatValue(std::uint16_t b) {
  return decode16(b, 7);
}
std::uint16_t halfOf(double v) {
  return encode16(v, 10);
}
std::uint16_t bfloatOf(double v) {
  return encode16(v, 7);
}

template <typename T>
T oracleInt(T a, T b, blinkRedOp_t op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case blinkSum:
      return static_cast<T>(
          static_cast<U>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b)));
    case blinkProd:
      return static_cast<T>(
          static_cast<U>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b)));
    case blinkMin:
      return a < b ? a : b;
    case blinkMax:
      return a > b ? a : b;
    default:
      ADD_FAILURE() << "no integer oracle for " << rt::toString(op);
      return a;
  }
}

template <typename F>
F oracleFloat(F a, F b, blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
    case blinkAvg:
      return a + b;
    case blinkProd:
      return a * b;
    case blinkMin:
      return a < b ? a : b;  // Open MPI: out < in ? out : in
    case blinkMax:
      return a > b ? a : b;
    default:
      ADD_FAILURE() << "bad op";
      return a;
  }
}

// ---- Test data --------------------------------------------------------------------

template <typename T>
std::vector<T> randomValues(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      // Mostly ordinary values of both signs, some specials.
      const int kind = static_cast<int>(rng() % 16);
      std::uniform_real_distribution<T> d(-100, 100);
      if (kind == 0) {
        x = std::numeric_limits<T>::quiet_NaN();
      } else if (kind == 1) {
        x = (rng() & 1) ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
      } else if (kind == 2) {
        x = (rng() & 1) ? T(0) : -T(0);
      } else if (kind == 3) {
        x = std::numeric_limits<T>::denorm_min() * static_cast<T>(rng() % 1000);
      } else {
        x = d(rng);
      }
    } else {
      x = static_cast<T>(rng());  // every bit pattern: negatives, extremes, wrap-around
    }
  }
  return v;
}

// Every bit pattern, so NaN, Inf, subnormals and overflow all come up.
std::vector<std::uint16_t> random16(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = static_cast<std::uint16_t>(rng());
  return v;
}

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

void expectInvalid(const std::function<void()>& f, blinkResult_t status = blinkInvalidArgument) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
  }
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

// ---- Converters -----------------------------------------------------------------------

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
