// Moving a caller's buffer, in whatever layout its datatype has, to and from the
// contiguous bytes Blink works on: contiguous layouts are used in place, others are
// packed (PMPI_Pack) into a reused scratch buffer before the Blink call and unpacked
// (PMPI_Unpack) after it. Only this rank's layout matters here; whether Blink takes
// the call was decided from the signature alone.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "type_signature.hpp"

namespace blink::glue {

// Whether this rank can pack and unpack items of this layout: PMPI_Pack counts
// bytes in int, so a layout with gaps is packed in pieces of whole items, and an
// item of more than INT_MAX bytes with gaps cannot be.
bool stageable(const TypeInfo& info);

// Collective over `comm`: whether every rank can stage its buffers (`here` on this
// rank) for a call of `bytes` signature bytes per rank. Only calls of more than
// INT_MAX bytes can hold an item too large to pack, so only those agree (one
// PMPI_Allreduce, negligible beside moving 2 GiB); smaller ones return true.
bool everyRankCanStage(MPI_Comm comm, std::uint64_t bytes, bool here);

// `count` items of `type` (described by `info`) at `from`, as count * info.size
// contiguous bytes at `to`; and back. Throw Error when MPI fails or packs
// a different number of bytes than the signature holds.
void pack(const void* from, MPI_Count count, MPI_Datatype type, const TypeInfo& info, std::byte* to,
          MPI_Comm comm);
void unpack(const std::byte* from, void* to, MPI_Count count, MPI_Datatype type,
            const TypeInfo& info, MPI_Comm comm);

// This thread's scratch buffer, kept between calls so that its pages fault in once
// (a fresh page costs ~21 us here); one larger than kKeepBytes is released when
// the lease ends.
class ScratchLease {
 public:
  static constexpr std::uint64_t kKeepBytes = std::uint64_t{64} << 20;

  ScratchLease() = default;
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  ~ScratchLease();

  // At least `bytes` bytes, uninitialised.
  std::byte* get(std::uint64_t bytes);
};

}  // namespace blink::glue
