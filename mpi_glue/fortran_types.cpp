#include "fortran_types.hpp"

namespace blink::glue {
namespace {

enum class Kind { Integer, Real };

std::optional<blinkDataType_t> ofSize(Kind kind, MPI_Datatype t) {
  int size = 0;
  if (PMPI_Type_size(t, &size) != MPI_SUCCESS) return std::nullopt;
  if (kind == Kind::Real) {
    if (size == 4) return blinkFloat32;
    if (size == 8) return blinkFloat64;
    return std::nullopt;  // REAL*2 and REAL*16 are no IEEE types Blink reduces
  }
  switch (size) {
    case 1:
      return blinkInt8;
    case 2:
      return blinkInt16;
    case 4:
      return blinkInt32;
    case 8:
      return blinkInt64;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<blinkDataType_t> fortranReductionType(MPI_Datatype t) {
  // Sized types too are asked their size: one the Fortran compiler lacks is 0 bytes.
  if (t == MPI_REAL || t == MPI_DOUBLE_PRECISION || t == MPI_REAL4 || t == MPI_REAL8) {
    return ofSize(Kind::Real, t);
  }
  if (t == MPI_INTEGER || t == MPI_INTEGER1 || t == MPI_INTEGER2 || t == MPI_INTEGER4 ||
      t == MPI_INTEGER8) {
    return ofSize(Kind::Integer, t);
  }
  return std::nullopt;
}

}  // namespace blink::glue
