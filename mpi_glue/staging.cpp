#include "staging.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "glue_support.hpp"

namespace blink::glue {
namespace {

constexpr std::uint64_t kIntMax = INT_MAX;

struct Scratch {
  std::unique_ptr<std::byte[]> data;
  std::uint64_t capacity = 0;
};

Scratch& threadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Items per PMPI_Pack/PMPI_Unpack call: as many as keep its int counts in range.
MPI_Count itemsPerPiece(const TypeInfo& info) {
  if (info.size == 0 || info.size > kIntMax) {
    throw Error(blinkInvalidArgument,
                "an item of " + std::to_string(info.size) + " bytes with gaps cannot be packed");
  }
  return static_cast<MPI_Count>(kIntMax / info.size);
}

void checkPacked(int rc, int position, std::uint64_t expected, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(blinkSystemError, std::string(what) + " failed");
  if (static_cast<std::uint64_t>(position) != expected) {
    throw Error(blinkSystemError, std::string(what) + " moved " + std::to_string(position) +
                                      " bytes where the signature holds " +
                                      std::to_string(expected));
  }
}

}  // namespace

bool stageable(const TypeInfo& info) {
  return info.contiguous || info.size <= kIntMax;
}

bool everyRankCanStage(MPI_Comm comm, std::uint64_t bytes, bool here) {
  // Items of a legal call hold at most `bytes` each, so every rank can pack them;
  // an erroneous one (an Allgather send signature larger than a block) fails in
  // pack() instead of deciding differently from the other ranks.
  if (bytes <= kIntMax) return true;
  int mine = here ? 1 : 0, all = 0;
  if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return false;
  return all == 1;
}

void pack(const void* from, MPI_Count count, MPI_Datatype type, const TypeInfo& info, std::byte* to,
          MPI_Comm comm) {
  if (info.contiguous) {
    std::memcpy(to, from, static_cast<std::size_t>(count) * info.size);
    return;
  }
  const MPI_Count per_piece = itemsPerPiece(info);
  for (MPI_Count done = 0; done < count;) {
    const MPI_Count items = std::min(per_piece, count - done);
    const std::uint64_t bytes = static_cast<std::uint64_t>(items) * info.size;
    int position = 0;
    const int rc =
        PMPI_Pack(static_cast<const char*>(from) + done * info.extent, static_cast<int>(items),
                  type, to, static_cast<int>(bytes), &position, comm);
    checkPacked(rc, position, bytes, "MPI_Pack");
    to += bytes;
    done += items;
  }
}

void unpack(const std::byte* from, void* to, MPI_Count count, MPI_Datatype type,
            const TypeInfo& info, MPI_Comm comm) {
  if (info.contiguous) {
    std::memcpy(to, from, static_cast<std::size_t>(count) * info.size);
    return;
  }
  const MPI_Count per_piece = itemsPerPiece(info);
  for (MPI_Count done = 0; done < count;) {
    const MPI_Count items = std::min(per_piece, count - done);
    const std::uint64_t bytes = static_cast<std::uint64_t>(items) * info.size;
    int position = 0;
    const int rc = PMPI_Unpack(from, static_cast<int>(bytes), &position,
                               static_cast<char*>(to) + done * info.extent, static_cast<int>(items),
                               type, comm);
    checkPacked(rc, position, bytes, "MPI_Unpack");
    from += bytes;
    done += items;
  }
}

ScratchLease::~ScratchLease() {
  Scratch& s = threadScratch();
  if (s.capacity > kKeepBytes) {
    s.data.reset();
    s.capacity = 0;
  }
}

std::byte* ScratchLease::get(std::uint64_t bytes) {
  Scratch& s = threadScratch();
  if (s.capacity < bytes) {
    s.data.reset();
    s.data.reset(new std::byte[bytes]);
    s.capacity = bytes;
  }
  return s.data.get();
}

}  // namespace blink::glue
