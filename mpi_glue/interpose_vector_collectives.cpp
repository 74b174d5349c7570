// The interposed vector and synchronising collectives of libblink_mpi.so:
// MPI_Barrier, MPI_Allgatherv, MPI_Gather, MPI_Gatherv and MPI_Reduce_scatter, run as
// padded blocks over Blink's AllGather / ReduceScatter (or one AllReduce), with the
// rules of interpose_collectives.cpp.
#include "interpose_common.hpp"

using blink::glue::Coll;
using blink::glue::Fallback;
using blink::glue::runOnBlink;
using blink::glue::ScratchLease;
using blink::glue::stageable;
using blink::glue::state;

namespace blink::glue {
namespace {

// What every rank agrees on about a vector collective before it runs on Blink.
struct Blocks {
  std::uint64_t largest = 0;  // signature bytes of the largest block
  std::uint64_t padded = 0;   // ranks * largest
};

// The padded blocks of `largest` bytes each, when they fit in 64 bits and each
// block in MPI's int (the staging pieces of the vector collectives).
std::optional<Blocks> paddedBlocks(std::uint64_t largest, MPI_Comm comm) {
  auto all = allBlocks(largest, comm);
  if (!all || largest > static_cast<std::uint64_t>(INT_MAX)) return std::nullopt;
  return Blocks{largest, *all};
}

// Checks of a collective whose largest block (`largest` bytes) every rank knows.
std::optional<Fallback> vectorChecks(Coll c, MPI_Comm comm, std::uint64_t largest,
                                     std::optional<Blocks>& blocks) {
  if (auto why = commonChecks(c, comm, largest)) return why;
  blocks = paddedBlocks(largest, comm);
  if (!blocks) return Fallback::Arguments;
  return std::nullopt;
}

// Runs the padded AllGather: this rank's block is already at work + rank * largest;
// afterwards block r of every rank is at work + r * largest.
void paddedAllGather(BlinkComm& c, std::byte* work, const Blocks& b) {
  c.allGather(work + static_cast<std::uint64_t>(c.rank()) * b.largest, work,
              static_cast<std::size_t>(b.largest), blinkUint8);
}

// This rank's own block of a gather: its send buffer or, in place, its place in the
// receive buffer.
struct OwnBlock {
  const void* buffer;
  int count;
  MPI_Datatype type;
  const TypeInfo& info;
};

// Packs this rank's block into its slot of `work`, then runs the padded AllGather.
void gatherPaddedBlocks(BlinkComm& c, std::byte* work, const Blocks& b, const OwnBlock& own,
                        MPI_Comm comm) {
  pack(own.buffer, own.count, own.type, own.info,
       work + static_cast<std::uint64_t>(c.rank()) * b.largest, comm);
  paddedAllGather(c, work, b);
}

std::uint64_t itemBytes(int count, const TypeInfo& info) {
  return count > 0 ? static_cast<std::uint64_t>(count) * info.size : 0;
}

}  // namespace
}  // namespace blink::glue

using blink::glue::Blocks;

extern "C" int MPI_Barrier(MPI_Comm comm) {
  // Nothing to move: only whether Blink is on, and the communicator, decide.
  blink::glue::GlueState& s = state();
  std::optional<Fallback> why;
  if (!s.enabled.load(std::memory_order_relaxed)) {
    why = Fallback::Disabled;
  } else if (!blink::glue::isIntraComm(comm)) {
    why = Fallback::InterComm;
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Barrier, comm, 0, [&](auto& c) { c.barrier(); })) return *rc;
  } else {
    state().fellBack(Coll::Barrier, *why);
  }
  return PMPI_Barrier(comm);
}

extern "C" int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm) {
  // recvcounts and the receive signature are the same on every rank (displs are
  // this rank's layout only), so they decide.
  std::optional<Fallback> why;
  blink::glue::TypeInfo recv;
  std::optional<Blocks> blocks;
  const int ranks = blink::glue::commSize(comm);
  if (!state().enabled.load(std::memory_order_relaxed)) {
    why = Fallback::Disabled;
  } else {
    blink::glue::describe(recvtype, recv);
    int largest = 0;
    for (int r = 0; r < ranks; ++r) largest = std::max(largest, recvcounts[r]);
    if (!recv.run) {
      why = Fallback::Datatype;
    } else if (!blink::glue::stageable(recv)) {
      why = Fallback::Arguments;
    } else {
      why = blink::glue::vectorChecks(Coll::Allgatherv, comm, blink::glue::itemBytes(largest, recv),
                                      blocks);
    }
  }
  const bool in_place = sendbuf == MPI_IN_PLACE;
  blink::glue::TypeInfo send;
  if (!why && !in_place) blink::glue::describe(sendtype, send);
  if (!why) {
    if (auto rc = runOnBlink(Coll::Allgatherv, comm, blocks->largest, [&](auto& c) {
          const int me = c.rank();
          const std::uint64_t mine = blink::glue::itemBytes(recvcounts[me], recv);
          if (!in_place && blink::glue::signatureBytes(sendcount, send) != mine) {
            throw blink::glue::Error(blinkInvalidArgument,
                                     "the send buffer's signature does not match its receive "
                                     "count");
          }
          ScratchLease scratch;
          std::byte* work = scratch.get(blocks->padded);
          using blink::glue::OwnBlock;
          blink::glue::gatherPaddedBlocks(
              c, work, *blocks,
              in_place ? OwnBlock{blink::glue::offsetBy(
                                      recvbuf, static_cast<MPI_Aint>(displs[me]) * recv.extent),
                                  recvcounts[me], recvtype, recv}
                       : OwnBlock{sendbuf, sendcount, sendtype, send},
              comm);
          for (int r = 0; r < c.size(); ++r) {
            if (in_place && r == me) continue;
            blink::glue::unpack(
                work + static_cast<std::uint64_t>(r) * blocks->largest,
                static_cast<char*>(recvbuf) + static_cast<MPI_Aint>(displs[r]) * recv.extent,
                recvcounts[r], recvtype, recv, comm);
          }
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Allgatherv, *why);
  }
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

extern "C" int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  // Every rank's block has the same signature, which the root knows from its
  // receive side and the others from their send side: that decides.
  std::optional<Fallback> why;
  std::optional<Blocks> blocks;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  const bool at_root = rank == root;
  const bool in_place = at_root && sendbuf == MPI_IN_PLACE;
  blink::glue::TypeInfo recv, send;
  if (!state().enabled.load(std::memory_order_relaxed)) {
    why = Fallback::Disabled;
  } else if (!blink::glue::validRoot(root, comm)) {
    why = Fallback::Arguments;
  } else {
    // The signature that decides: the root's receive block, everyone else's send.
    if (at_root) blink::glue::describe(recvtype, recv);
    if (!in_place) blink::glue::describe(sendtype, send);
    const blink::glue::TypeInfo& decides = at_root ? recv : send;
    const int items = at_root ? recvcount : sendcount;
    if (!decides.run) {
      why = Fallback::Datatype;
    } else if (auto bytes = blink::glue::signatureBytes(items, decides); !bytes) {
      why = Fallback::Arguments;
    } else {
      why = blink::glue::vectorChecks(Coll::Gather, comm, *bytes, blocks);
    }
    // Staging is per rank; a block fits in int (vectorChecks), so anyone can pack it.
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Gather, comm, blocks->largest, [&](auto& c) {
          const int me = c.rank();
          if (!in_place && blink::glue::signatureBytes(sendcount, send) != blocks->largest) {
            throw blink::glue::Error(blinkInvalidArgument,
                                     "the send buffer's signature does not match a receive block");
          }
          ScratchLease scratch;
          std::byte* work = scratch.get(blocks->padded);
          using blink::glue::OwnBlock;
          blink::glue::gatherPaddedBlocks(
              c, work, *blocks,
              in_place ? OwnBlock{blink::glue::offsetBy(
                                      recvbuf, static_cast<MPI_Aint>(me) * recvcount * recv.extent),
                                  recvcount, recvtype, recv}
                       : OwnBlock{sendbuf, sendcount, sendtype, send},
              comm);
          if (me == root) {
            blink::glue::unpack(work, recvbuf, static_cast<MPI_Count>(recvcount) * c.size(),
                                recvtype, recv, comm);
          }
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Gather, *why);
  }
  return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

extern "C" int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                           int root, MPI_Comm comm) {
  // Only the root knows every block's size, so the ranks first agree, in one Blink
  // AllReduce of two numbers, on the largest block and whether every rank's
  // signature is a run Blink moves; that costs one small round even when the call
  // then goes to MPI.
  std::optional<Fallback> why;
  std::optional<Blocks> blocks;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  const bool at_root = rank == root;
  const bool in_place = at_root && sendbuf == MPI_IN_PLACE;
  blink::glue::TypeInfo recv, send;
  if (!state().enabled.load(std::memory_order_relaxed)) {
    why = Fallback::Disabled;
  } else if (!blink::glue::isIntraComm(comm)) {
    why = Fallback::InterComm;
  } else if (!blink::glue::validRoot(root, comm)) {
    why = Fallback::Arguments;
  }
  blink::glue::BlinkComm* blink_comm = nullptr;
  if (!why) {
    blink_comm = blink::glue::communicatorFor(comm);
    if (blink_comm == nullptr) why = Fallback::Unavailable;
  }
  if (!why) {
    // agreed[0]: 1 where some rank cannot take part; agreed[1]: the largest block.
    std::uint64_t mine[2] = {0, 0}, agreed[2] = {0, 0};
    if (at_root) blink::glue::describe(recvtype, recv);
    if (!in_place) blink::glue::describe(sendtype, send);
    const blink::glue::TypeInfo& decides = in_place ? recv : send;
    const int items = in_place ? recvcounts[root] : sendcount;
    auto bytes = blink::glue::signatureBytes(items, decides);
    if (!decides.run || !bytes || (at_root && !recv.run)) {
      mine[0] = 1;
    } else {
      mine[1] = *bytes;
    }
    try {
      blink_comm->allReduce(mine, agreed, 2, blinkUint64, blinkMax);
    } catch (const std::exception& e) {
      // As a failed collective: every rank meets it, and MPI reports it.
      blink::glue::log::write(blink::glue::log::Level::Warn,
                              std::string("MPI_Gatherv failed in Blink: ") + e.what());
      MPI_Comm report = comm;
      PMPI_Comm_call_errhandler(report, MPI_ERR_OTHER);
      return MPI_ERR_OTHER;
    }
    if (agreed[0] != 0) {
      why = Fallback::Datatype;
    } else {
      why = blink::glue::vectorChecks(Coll::Gatherv, comm, agreed[1], blocks);
    }
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Gatherv, comm, blocks->largest, [&](auto& c) {
          const int me = c.rank();
          ScratchLease scratch;
          std::byte* work = scratch.get(blocks->padded);
          using blink::glue::OwnBlock;
          blink::glue::gatherPaddedBlocks(
              c, work, *blocks,
              in_place ? OwnBlock{blink::glue::offsetBy(
                                      recvbuf, static_cast<MPI_Aint>(displs[me]) * recv.extent),
                                  recvcounts[me], recvtype, recv}
                       : OwnBlock{sendbuf, sendcount, sendtype, send},
              comm);
          if (me != root) return;
          for (int r = 0; r < c.size(); ++r) {
            if (in_place && r == me) continue;
            if (blink::glue::itemBytes(recvcounts[r], recv) > blocks->largest) {
              throw blink::glue::Error(blinkInvalidArgument,
                                       "a receive count exceeds what its rank sent");
            }
            blink::glue::unpack(
                work + static_cast<std::uint64_t>(r) * blocks->largest,
                static_cast<char*>(recvbuf) + static_cast<MPI_Aint>(displs[r]) * recv.extent,
                recvcounts[r], recvtype, recv, comm);
          }
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Gatherv, *why);
  }
  return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                      comm);
}

extern "C" int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  // recvcounts are the same on every rank: the largest block decides, as one
  // Reduce_scatter_block of that size would.
  const int ranks = blink::glue::commSize(comm);
  int largest = 0;
  std::uint64_t total_items = 0;
  for (int r = 0; r < ranks; ++r) {
    largest = std::max(largest, recvcounts[r]);
    total_items += static_cast<std::uint64_t>(std::max(recvcounts[r], 0));
  }
  blink::glue::Reduction r;
  auto why = blink::glue::reductionChecks(Coll::ReduceScatter, comm, largest, datatype, op, r);
  std::optional<Blocks> blocks;
  if (!why) {
    blocks = blink::glue::paddedBlocks(r.bytes, comm);
    if (!blocks) why = Fallback::Arguments;
  }
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::ReduceScatter, comm, r.bytes, [&](auto& c) {
          const int me = c.rank();
          const std::uint64_t item = r.info.size;
          ScratchLease scratch;
          // The input as contiguous bytes (a second buffer only for layouts with gaps).
          std::unique_ptr<std::byte[]> packed;
          const std::byte* input = static_cast<const std::byte*>(in);
          if (!r.info.contiguous) {
            packed.reset(new std::byte[total_items * item]);
            blink::glue::pack(in, static_cast<MPI_Count>(total_items), datatype, r.info,
                              packed.get(), comm);
            input = packed.get();
          }
          const bool equal_blocks =
              std::all_of(recvcounts, recvcounts + c.size(), [&](int k) { return k == largest; });
          if (equal_blocks && r.info.contiguous) {  // a Reduce_scatter_block
            c.reduceScatter(in, recvbuf, r.elements(), r.type, r.op);
            return;
          }
          std::uint64_t before_me = 0;
          for (int k = 0; k < me; ++k) before_me += static_cast<std::uint64_t>(recvcounts[k]);
          const std::size_t per_item = static_cast<std::size_t>(item / r.info.element_size);
          std::byte* result = nullptr;
          if (blocks->padded <= 2 * total_items * item) {
            // Padded blocks: block k of the input at k * largest, the rest unset (reduced
            // along, never read).
            std::byte* work = scratch.get(blocks->padded);
            std::uint64_t at = 0;
            for (int k = 0; k < c.size(); ++k) {
              const std::uint64_t n = static_cast<std::uint64_t>(recvcounts[k]) * item;
              if (n > 0)
                std::memcpy(work + static_cast<std::uint64_t>(k) * blocks->largest, input + at, n);
              at += n;
            }
            result = work + static_cast<std::uint64_t>(me) * blocks->largest;
            c.reduceScatter(work, result, r.elements(), r.type, r.op);
          } else {
            std::byte* work = scratch.get(total_items * item);
            c.allReduce(input, work, static_cast<std::size_t>(total_items) * per_item, r.type,
                        r.op);
            result = work + before_me * item;
          }
          blink::glue::unpack(result, recvbuf, recvcounts[me], datatype, r.info, comm);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::ReduceScatter, *why);
  }
  return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
}
