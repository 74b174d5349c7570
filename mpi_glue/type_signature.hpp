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
#include "eligibility.hpp"

namespace blink::glue {

struct TypeInfo {
  // Signature. `run`: the signature is a run of one predefined type, `element`
  // (MPI_DATATYPE_NULL for an empty signature); the pair types of MINLOC/MAXLOC
  // count as what they are made of (MPI_2INT is two MPI_INT, MPI_FLOAT_INT no run).
  bool run = false;
  MPI_Datatype element = MPI_DATATYPE_NULL;
  // Blink's type for `element` when a run of it can be reduced as that type.
  std::optional<blinkDataType_t> reducible;
  std::uint64_t size = 0;          // bytes of data in one item (PMPI_Type_size_x)
  std::uint64_t element_size = 0;  // bytes of one `element` (0 when none)

  // Layout: items of `extent` bytes; `contiguous` when count items are exactly
  // count * size bytes from the buffer's address (no gaps, lower bound 0).
  MPI_Aint extent = 0;
  bool contiguous = false;
};

// The description of `type`, for one describe() does not know by its handle; run = false for
// MPI_DATATYPE_NULL or a type MPI cannot describe. Thread-safe.
TypeInfo describeOther(MPI_Datatype type);

// Fills `info` for a predefined type of `size` bytes (`reducible`: its
// reductionType). Field by field, on purpose: the interposer's fast path, where
// building a temporary and copying it costs store-forwarding stalls.
inline void describePredefined(MPI_Datatype type, std::optional<blinkDataType_t> reducible,
                               std::uint64_t size, TypeInfo& info) {
  info.run = true;
  info.element = type;
  info.reducible = reducible;
  info.size = size;
  info.element_size = size;
  info.extent = static_cast<MPI_Aint>(size);
  info.contiguous = true;
}

// The description of `type` in `info`: the bytes of most Bcast and Allgather
// calls and the types Blink reduces without any MPI call, others by describeOther.
inline void describe(MPI_Datatype type, TypeInfo& info) {
  if (type == MPI_BYTE || type == MPI_CHAR) return describePredefined(type, std::nullopt, 1, info);
  if (const auto reducible = reductionType(type)) {
    return describePredefined(type, reducible, reducibleSize(*reducible), info);
  }
  info = describeOther(type);
}

// count * info.size, or nullopt when that does not fit in 64 bits.
inline std::optional<std::uint64_t> signatureBytes(MPI_Count count, const TypeInfo& info) {
  if (count <= 0) return 0;
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), info.size, &bytes)) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace blink::glue
