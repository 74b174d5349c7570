// The reduction ops as function objects, out = op(out, in) as Open MPI's predefined
// ops compute it, and their fp16/bf16 forms. Only the kernels' translation unit
// (reduce_cpu.cpp) includes this header.
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/half_float_bits.hpp"

namespace blink::runtime::kernels {

// Integer sum and product in an unsigned type at least as wide as unsigned int: no
// signed overflow, no promotion to (signed) int, and the result wraps modulo 2^bits.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct OpSum {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct OpProd {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    } else {
      return a * b;
    }
  }
};

// ompi_op_base_2buff_min_*: current_func(a, b) ((a) < (b) ? (a) : (b)) with a = out.
// For floats this is exactly x86's minps(out, in): a NaN in either operand gives in.
struct OpMin {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};

struct OpMax {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

// ompi_op_base_2buff_{band,bor,bxor,land,lor,lxor}_*: integer types only (the
// dispatch in reduce_cpu.cpp never instantiates them for floating types). The logical ops give
// 1 or 0 in the element's type, as C's && and || do.
struct OpBand {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};

struct OpBor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};

struct OpBxor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

struct OpLand {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a != 0 && b != 0);
  }
};

struct OpLor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a != 0 || b != 0);
  }
};

struct OpLxor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>((a != 0) != (b != 0));
  }
};

// fp16 / bf16 elements: widen both, combine in float, round once.
template <typename Op>
struct HalfOp {
  Op op;
  [[gnu::always_inline]] std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return floatToHalfBits(op(halfBitsToFloat(a), halfBitsToFloat(b)));
  }
};

template <typename Op>
struct BfloatOp {
  Op op;
  [[gnu::always_inline]] std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return floatToBfloatBits(op(bfloatBitsToFloat(a), bfloatBitsToFloat(b)));
  }
};

}  // namespace blink::runtime::kernels
