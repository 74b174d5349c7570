// What the CPU reduction kernel tests share: the types, ops and counts they sweep, the
// instruction-set variants this CPU runs, an oracle independent of the kernels (integer
// ops in C, floating ops in double, 16-bit values decoded from their fields and rounded
// once), random test data, and a check that a call throws blink::Error.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "common/error.hpp"
#include "runtime/reduce_cpu.hpp"

namespace reduce_cpu_oracle {

namespace rt = blink::runtime;

inline constexpr blinkDataType_t kTypes[] = {
    blinkInt8,  blinkUint8,  blinkInt16,   blinkUint16,   blinkInt32,   blinkUint32,
    blinkInt64, blinkUint64, blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
inline constexpr blinkRedOp_t kOps[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};
inline constexpr std::size_t kCounts[] = {0, 1, 7, 31, 1000, 4099};

inline std::vector<rt::CpuIsa> supportedIsas() {
  std::vector<rt::CpuIsa> isas;
  for (rt::CpuIsa isa : {rt::CpuIsa::Generic, rt::CpuIsa::Avx2, rt::CpuIsa::Avx512}) {
    if (rt::cpuIsaSupported(isa)) isas.push_back(isa);
  }
  return isas;
}

// ---- An independent oracle ------------------------------------------------------------

// The value of a binary16 / bfloat16 bit pattern, decoded from its fields.
inline double decode16(std::uint16_t bits, int mant_bits) {
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
inline std::uint16_t encode16(double v, int mant_bits) {
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

inline double halfValue(std::uint16_t h) {
  return decode16(h, 10);
}
inline double bfloatValue(std::uint16_t b) {
  return decode16(b, 7);
}
inline std::uint16_t halfOf(double v) {
  return encode16(v, 10);
}
inline std::uint16_t bfloatOf(double v) {
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
inline std::vector<std::uint16_t> random16(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = static_cast<std::uint16_t>(rng());
  return v;
}

inline void expectInvalid(const std::function<void()>& f,
                          blinkResult_t status = blinkInvalidArgument) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
  }
}
}  // namespace reduce_cpu_oracle
