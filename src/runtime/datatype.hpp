// The public datatypes and reduction ops as the runtime sees them: element sizes,
// names, and which op is defined on which type (the semantics of the ops are in
// reduce_cpu.hpp).
#pragma once

#include <cstddef>
#include <string>

#include "blink/blink.h"
#include "common/datatype_size.hpp"

namespace blink::runtime {

[[noreturn]] void throwUnknownDatatype(blinkDataType_t type);
// Size in bytes of one element; throws blinkInvalidArgument for an unknown type. Inline:
// every call asks it, some several times.
inline std::size_t elementSize(blinkDataType_t type) {
  const std::size_t bytes = datatypeSize(type);
  if (bytes == 0) [[unlikely]]
    throwUnknownDatatype(type);
  return bytes;
}
// fp16, bf16, fp32, fp64 (false for an unknown type).
bool isFloating(blinkDataType_t type);
// "int8", "uint8", ..., "float16", "bfloat16", "float32", "float64"; "unknown(N)" otherwise.
std::string toString(blinkDataType_t type);
// "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "land", "lor", "lxor";
// "unknown(N)" otherwise.
std::string toString(blinkRedOp_t op);
// band .. lxor: the ops defined on integer types only.
bool isBitwiseOrLogical(blinkRedOp_t op);

// Throws blinkInvalidArgument for an unknown type or op, avg on an integer type, or a
// bitwise or logical op on a floating type.
void checkReduction(blinkDataType_t type, blinkRedOp_t op);

}  // namespace blink::runtime
