// The predefined types and ops Blink reduces. Both are compared by handle: a
// derived type is reduced as the predefined type its signature is a run of (see
// type_signature.hpp).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "blink/blink.h"

namespace blink::glue {

// Blink's type for a predefined MPI type it can reduce: the C/C++ integer and
// fixed-width types (MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT .. MPI_UNSIGNED_LONG_LONG,
// MPI_INT8_T .. MPI_UINT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT), MPI_FLOAT and MPI_DOUBLE,
// and Fortran's INTEGER and REAL types (fortran_types.hpp).
// MPI_CHAR and MPI_BYTE are not reduction types in MPI; they, derived types and
// everything else give nullopt.
std::optional<blinkDataType_t> reductionType(MPI_Datatype type);

// The size of the types reductionType gives, without a call into libblink.
constexpr std::size_t reducibleSize(blinkDataType_t type) {
  switch (type) {
    case blinkInt8:
    case blinkUint8:
      return 1;
    case blinkInt16:
    case blinkUint16:
    case blinkFloat16:
    case blinkBfloat16:
      return 2;
    case blinkInt32:
    case blinkUint32:
    case blinkFloat32:
      return 4;
    default:
      return 8;
  }
}

// MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX and the bitwise and logical ops (MPI_BAND ..
// MPI_LXOR); nullopt for every other op.
std::optional<blinkRedOp_t> reductionOp(MPI_Op op);

// Whether Blink reduces `type` with `op`: the bitwise and logical ops only on integer
// types (on a floating type MPI reports the error, so such a call goes to MPI).
constexpr bool reducesWith(blinkDataType_t type, blinkRedOp_t op) {
  const bool floating =
      type == blinkFloat16 || type == blinkBfloat16 || type == blinkFloat32 || type == blinkFloat64;
  return !(floating && op >= blinkBand && op <= blinkLxor);
}

}  // namespace blink::glue
