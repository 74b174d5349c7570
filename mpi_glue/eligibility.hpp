// Which MPI calls Blink takes, decided from the arguments alone. Every rank of a
// communicator passes matching arguments (MPI requires it), so every rank decides
// the same way: a call never runs on Blink on some ranks and PMPI on others.
#pragma once

#include <mpi.h>

#include <optional>

#include "blink/blink.h"

namespace blink::glue {

// Blink's type for a predefined MPI type it can reduce: the C/C++ integer and
// fixed-width types (MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT .. MPI_UNSIGNED_LONG_LONG,
// MPI_INT8_T .. MPI_UINT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT), MPI_FLOAT and MPI_DOUBLE.
// MPI_CHAR and MPI_BYTE are not reduction types in MPI; they, derived types and
// everything else give nullopt.
std::optional<blinkDataType_t> reductionType(MPI_Datatype type);

// MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX; nullopt for every other op.
std::optional<blinkRedOp_t> reductionOp(MPI_Op op);

// The size in bytes of one element of a type whose data is contiguous (no gaps,
// lower bound 0, extent equal to size): any predefined type, or a derived one built
// only of contiguous pieces; nullopt otherwise. Bcast and Allgather move such data
// as bytes.
std::optional<std::size_t> contiguousSize(MPI_Datatype type);

}  // namespace blink::glue
