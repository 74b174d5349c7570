// Fortran's predefined types as the Blink types of the same representation, so a
// Fortran program's MPI_REAL or MPI_INTEGER reduces in Blink as C's float or int does.
#pragma once

#include <mpi.h>

#include <optional>

#include "blink/blink.h"

namespace blink::glue {

// The Blink type a reduction on the Fortran predefined type `t` runs as, decided by
// the type's size in this MPI library (REAL is 8 bytes under -fdefault-real-8);
// nullopt for any other type, and for LOGICAL, COMPLEX and sizes Blink lacks.
std::optional<blinkDataType_t> fortranReductionType(MPI_Datatype t);

}  // namespace blink::glue
