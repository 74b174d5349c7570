#include "eligibility.hpp"

#include <cstdint>
#include <type_traits>

#include "fortran_types.hpp"

namespace blink::glue {
namespace {

template <typename T>
constexpr blinkDataType_t integerType() {
  static_assert(std::is_integral_v<T>);
  if constexpr (sizeof(T) == 1) return std::is_signed_v<T> ? blinkInt8 : blinkUint8;
  if constexpr (sizeof(T) == 2) return std::is_signed_v<T> ? blinkInt16 : blinkUint16;
  if constexpr (sizeof(T) == 4) return std::is_signed_v<T> ? blinkInt32 : blinkUint32;
  return std::is_signed_v<T> ? blinkInt64 : blinkUint64;
}

}  // namespace

std::optional<blinkDataType_t> reductionType(MPI_Datatype t) {
  // Most frequent first: these run on every interposed call.
  if (t == MPI_FLOAT) return blinkFloat32;
  if (t == MPI_DOUBLE) return blinkFloat64;
  if (t == MPI_INT) return integerType<int>();
  if (t == MPI_LONG) return integerType<long>();
  if (t == MPI_UNSIGNED) return integerType<unsigned>();
  if (t == MPI_LONG_LONG || t == MPI_LONG_LONG_INT) return integerType<long long>();
  if (t == MPI_UNSIGNED_LONG) return integerType<unsigned long>();
  if (t == MPI_UNSIGNED_LONG_LONG) return integerType<unsigned long long>();
  if (t == MPI_SHORT) return integerType<short>();
  if (t == MPI_UNSIGNED_SHORT) return integerType<unsigned short>();
  if (t == MPI_SIGNED_CHAR) return integerType<signed char>();
  if (t == MPI_UNSIGNED_CHAR) return integerType<unsigned char>();
  if (t == MPI_INT8_T) return blinkInt8;
  if (t == MPI_UINT8_T) return blinkUint8;
  if (t == MPI_INT16_T) return blinkInt16;
  if (t == MPI_UINT16_T) return blinkUint16;
  if (t == MPI_INT32_T) return blinkInt32;
  if (t == MPI_UINT32_T) return blinkUint32;
  if (t == MPI_INT64_T) return blinkInt64;
  if (t == MPI_UINT64_T) return blinkUint64;
  if (t == MPI_AINT) return integerType<MPI_Aint>();
  if (t == MPI_OFFSET) return integerType<MPI_Offset>();
  if (t == MPI_COUNT) return integerType<MPI_Count>();
  return fortranReductionType(t);
}

std::optional<blinkRedOp_t> reductionOp(MPI_Op op) {
  if (op == MPI_SUM) return blinkSum;
  if (op == MPI_MAX) return blinkMax;
  if (op == MPI_MIN) return blinkMin;
  if (op == MPI_PROD) return blinkProd;
  if (op == MPI_BAND) return blinkBand;
  if (op == MPI_BOR) return blinkBor;
  if (op == MPI_BXOR) return blinkBxor;
  if (op == MPI_LAND) return blinkLand;
  if (op == MPI_LOR) return blinkLor;
  if (op == MPI_LXOR) return blinkLxor;
  return std::nullopt;
}

}  // namespace blink::glue
