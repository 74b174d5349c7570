// blink_perf's known inputs and exact expected values. Rank r's input at index g
// depends on g only through g mod kPeriod, so inputs and expected values are periods
// of kPeriod elements, written and compared block by block.
#pragma once

#include <cstddef>
#include <vector>

#include "blink/blink.h"

namespace blink_perf {

inline constexpr std::size_t kPeriod = 17;

using Period = std::vector<std::byte>;  // kPeriod elements

// Rank `rank`'s input for `op` (products of small values, else -8..8; 0..16 unsigned).
Period inputPeriod(int rank, blinkRedOp_t op, blinkDataType_t t);

// The reduction over ranks 0..n-1 of inputValue, exact, then stored once in the type
// (avg: the exact sum divided once in the type's own precision, as Blink's divideBy).
Period expectedPeriod(int n, blinkRedOp_t op, blinkDataType_t t);

// Elements [first, first + count) of the periodic sequence, written to dst.
void fillPeriodic(std::byte* dst, std::size_t count, std::size_t first, const Period& period,
                  std::size_t es);

// How many of got[0, count) differ, bit for bit, from elements [first, first + count).
long long countWrong(const std::byte* got, std::size_t count, std::size_t first,
                     const Period& period, std::size_t es);

}  // namespace blink_perf
