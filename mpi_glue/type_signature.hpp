// What the interposer knows of an MPI datatype: its signature, which MPI guarantees
// to match across the ranks of a collective (and so may decide whether Blink takes
// a call), and its layout, which may differ on every rank (and so only says how
// this rank moves its data in and out of Blink).
//
// Predefined types Blink reduces, MPI_BYTE and MPI_CHAR are described without any
// MPI call; other types are analysed with PMPI_Type_get_envelope/get_contents, and
// the analysis of a derived type is cached on it with MPI's attribute caching (the
// delete callback frees it when the type is freed).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>

#include "blink/blink.h"

namespace blink::glue {

struct TypeInfo {
  // Signature. `run`: the signature is a run of one predefined type, `element`
  // (MPI_DATATYPE_NULL for an empty signature); the pair types of MINLOC/MAXLOC
  // count as what they are made of (MPI_2INT is two MPI_INT, MPI_FLOAT_INT no run).
  bool run = false;
  MPI_Datatype element = MPI_DATATYPE_NULL;
  // Blink's type for `element` when a run of it can be reduced as that type.
  std::optional<blinkDataType_t> reducible;
  std::uint64_t size = 0;  // bytes of data in one item (PMPI_Type_size_x)

  // Layout: items of `extent` bytes; `contiguous` when count items are exactly
  // count * size bytes from the buffer's address (no gaps, lower bound 0).
  MPI_Aint extent = 0;
  bool contiguous = false;
};

// The description of `type`; run = false for MPI_DATATYPE_NULL or a type MPI
// cannot describe. Thread-safe.
TypeInfo describe(MPI_Datatype type);

// count * info.size, or nullopt when that does not fit in 64 bits.
std::optional<std::uint64_t> signatureBytes(MPI_Count count, const TypeInfo& info);

}  // namespace blink::glue
