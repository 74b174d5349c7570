#include "blink_perf_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "blink_perf_options.hpp"
#include "runtime/mpi_reference.hpp"
#include "runtime/reduce_cpu.hpp"

namespace blink_perf {

namespace rt = blink::runtime;
namespace {

double inputValue(int rank, std::size_t residue, blinkRedOp_t op, blinkDataType_t t) {
  const std::size_t h = (residue * 7 + static_cast<std::size_t>(rank) * 5) % kPeriod;  // 0..16
  if (op == blinkProd) {
    static const double f[] = {1, 2, -1, 1, -2, 1, 1};
    const double v = f[h % 7];
    return isUnsigned(t) ? std::fabs(v) : v;
  }
  return isUnsigned(t) ? static_cast<double>(h) : static_cast<double>(h) - 8.0;  // 0..16, -8..8
}

}  // namespace

Period inputPeriod(int rank, blinkRedOp_t op, blinkDataType_t t) {
  const std::size_t es = blinkDataTypeSize(t);
  Period p(kPeriod * es);
  for (std::size_t k = 0; k < kPeriod; ++k)
    rt::storeExact(p.data() + k * es, t, inputValue(rank, k, op, t));
  return p;
}

// The reduction over ranks 0..n-1 of inputValue, exact, then stored once in the type
// (avg: the exact sum divided once in the type's own precision, as Blink's divideBy).
Period expectedPeriod(int n, blinkRedOp_t op, blinkDataType_t t) {
  const std::size_t es = blinkDataTypeSize(t);
  Period p(kPeriod * es);
  for (std::size_t k = 0; k < kPeriod; ++k) {
    double acc = inputValue(0, k, op, t);
    for (int r = 1; r < n; ++r) acc = rt::exactCombine(acc, inputValue(r, k, op, t), op);
    if (op == blinkAvg) acc = rt::exactAverage(acc, n, t);
    rt::storeExact(p.data() + k * es, t, acc);
  }
  return p;
}

// Elements [first, first + count) of the periodic sequence, written to dst.
void fillPeriodic(std::byte* dst, std::size_t count, std::size_t first, const Period& period,
                  std::size_t es) {
  constexpr std::size_t kBlock = kPeriod * 64;
  std::vector<std::byte> block(kBlock * es);
  for (std::size_t i = 0; i < kBlock; ++i) {
    std::memcpy(block.data() + i * es, period.data() + ((first + i) % kPeriod) * es, es);
  }
  for (std::size_t i = 0; i < count; i += kBlock) {
    std::memcpy(dst + i * es, block.data(), std::min(kBlock, count - i) * es);
  }
}

// How many of got[0, count) differ, bit for bit, from elements [first, first + count).
long long countWrong(const std::byte* got, std::size_t count, std::size_t first,
                     const Period& period, std::size_t es) {
  constexpr std::size_t kBlock = kPeriod * 64;
  std::vector<std::byte> block(kBlock * es);
  for (std::size_t i = 0; i < kBlock; ++i) {
    std::memcpy(block.data() + i * es, period.data() + ((first + i) % kPeriod) * es, es);
  }
  long long wrong = 0;
  for (std::size_t i = 0; i < count; i += kBlock) {
    const std::size_t m = std::min(kBlock, count - i);
    if (std::memcmp(got + i * es, block.data(), m * es) == 0) continue;
    for (std::size_t j = 0; j < m; ++j) {
      if (std::memcmp(got + (i + j) * es, block.data() + j * es, es) != 0) ++wrong;
    }
  }
  return wrong;
}

}  // namespace blink_perf
