#include "runtime/datatype.hpp"

#include <array>

#include "common/datatype_size.hpp"
#include "common/error.hpp"

namespace blink::runtime {

void throwUnknownDatatype(blinkDataType_t type) {
  throw Error(blinkInvalidArgument, "unknown datatype " + std::to_string(static_cast<int>(type)));
}

bool isFloating(blinkDataType_t type) {
  return type == blinkFloat16 || type == blinkBfloat16 || type == blinkFloat32 ||
         type == blinkFloat64;
}

std::string toString(blinkDataType_t type) {
  switch (type) {
    case blinkInt8:
      return "int8";
    case blinkUint8:
      return "uint8";
    case blinkInt16:
      return "int16";
    case blinkUint16:
      return "uint16";
    case blinkInt32:
      return "int32";
    case blinkUint32:
      return "uint32";
    case blinkInt64:
      return "int64";
    case blinkUint64:
      return "uint64";
    case blinkFloat16:
      return "float16";
    case blinkBfloat16:
      return "bfloat16";
    case blinkFloat32:
      return "float32";
    case blinkFloat64:
      return "float64";
    default:
      return "unknown(" + std::to_string(static_cast<int>(type)) + ")";
  }
}

bool isBitwiseOrLogical(blinkRedOp_t op) {
  return op >= blinkBand && op <= blinkLxor;
}

std::string toString(blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
      return "sum";
    case blinkProd:
      return "prod";
    case blinkMin:
      return "min";
    case blinkMax:
      return "max";
    case blinkAvg:
      return "avg";
    case blinkBand:
      return "band";
    case blinkBor:
      return "bor";
    case blinkBxor:
      return "bxor";
    case blinkLand:
      return "land";
    case blinkLor:
      return "lor";
    case blinkLxor:
      return "lxor";
    default:
      return "unknown(" + std::to_string(static_cast<int>(op)) + ")";
  }
}

namespace {

constexpr bool definedOn(blinkDataType_t type, blinkRedOp_t op) {
  const bool floating =
      type == blinkFloat16 || type == blinkBfloat16 || type == blinkFloat32 || type == blinkFloat64;
  const bool integer_only = op >= blinkBand && op <= blinkLxor;
  return !(op == blinkAvg && !floating) && !(integer_only && floating);
}

// Which op is defined on which type, for the check every reduction makes.
constexpr std::array<bool, static_cast<std::size_t>(blinkNumTypes)* blinkNumOps> kDefined = [] {
  std::array<bool, static_cast<std::size_t>(blinkNumTypes) * blinkNumOps> defined{};
  for (int t = 0; t < blinkNumTypes; ++t) {
    for (int o = 0; o < blinkNumOps; ++o) {
      defined[static_cast<std::size_t>(t * blinkNumOps + o)] =
          definedOn(static_cast<blinkDataType_t>(t), static_cast<blinkRedOp_t>(o));
    }
  }
  return defined;
}();

}  // namespace

void checkReduction(blinkDataType_t type, blinkRedOp_t op) {
  const auto t = static_cast<unsigned>(type), o = static_cast<unsigned>(op);
  if (t < blinkNumTypes && o < blinkNumOps && kDefined[t * blinkNumOps + o]) return;
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= blinkNumTypes) {
    throw Error(blinkInvalidArgument, "unknown datatype " + std::to_string(static_cast<int>(type)));
  }
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= blinkNumOps) {
    throw Error(blinkInvalidArgument,
                "unknown reduction op " + std::to_string(static_cast<int>(op)));
  }
  if (op == blinkAvg && !isFloating(type)) {
    throw Error(blinkInvalidArgument,
                "avg is defined only for floating-point datatypes, not " + toString(type));
  }
  if (isBitwiseOrLogical(op) && isFloating(type)) {
    throw Error(blinkInvalidArgument,
                toString(op) + " is defined only for integer datatypes, not " + toString(type));
  }
}

}  // namespace blink::runtime
