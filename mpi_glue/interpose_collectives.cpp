// The interposed collectives of libblink_mpi.so. Each decides whether Blink takes
// the call from what MPI guarantees equal on every rank (the collective, root, op,
// communicator and the datatype's signature, see type_signature.hpp), never from a
// rank's datatype handle, layout, buffer or MPI_IN_PLACE, so every rank decides
// alike; otherwise it calls its PMPI_* twin with the caller's arguments unchanged.
// Layouts with gaps are staged through a scratch buffer (staging.hpp).
// Once Blink has taken a call, a failure goes to the communicator's MPI error
// handler (as an MPI error would), except a failure every rank met together
// before any data moved, which hands the call to the MPI library instead; device
// buffers Blink cannot move go to the library only where it is CUDA-aware, else
// MPI_ERR_BUFFER (cuda_aware.hpp).
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>

#include "comm_cache.hpp"
#include "eligibility.hpp"
#include "glue_state.hpp"
#include "glue_support.hpp"
#include "staging.hpp"
#include "type_signature.hpp"

namespace blink::glue {
namespace {

bool isIntraComm(MPI_Comm comm) {
  if (isLastUsed(comm)) return true;  // only intra-communicators get an entry
  int inter = 0;
  return comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter;
}

// Shared checks of every collective; nullopt means "take it", else the reason not to.
std::optional<Fallback> commonChecks(Coll c, MPI_Comm comm, std::uint64_t bytes) {
  GlueState& s = state();
  if (!s.enabled.load(std::memory_order_relaxed)) return Fallback::Disabled;
  if (bytes == 0) return Fallback::ZeroCount;
  if (bytes < s.min_bytes[static_cast<std::size_t>(c)]) return Fallback::BelowThreshold;
  if (!isIntraComm(comm)) return Fallback::InterComm;
  return std::nullopt;
}

// Runs `body` on the Blink communicator of `comm`; returns the MPI result, or
// nullopt when the call must go to PMPI after all (counted under `c`).
template <typename Body>
std::optional<int> runOnBlink(Coll c, MPI_Comm comm, std::uint64_t bytes, Body&& body) {
  BlinkComm* blink_comm = communicatorFor(comm);
  if (blink_comm == nullptr) {
    state().fellBack(c, Fallback::Unavailable);
    return std::nullopt;
  }
  try {
    body(*blink_comm);
    state().handled(c, bytes);
    return MPI_SUCCESS;
  } catch (const CallFailed& e) {
    if (e.kind() == blinkFailedMemoryType && !state().mpi_cuda_aware) {
      // Every rank alike (both the refusal and the MPI library's awareness are agreed).
      log::write(log::Level::Warn, std::string("MPI_") + name(c) + " of " + std::to_string(bytes) +
                                       " bytes refused: " + e.what() +
                                       "; and the MPI library is not CUDA-aware (" +
                                       state().mpi_cuda_aware_why + "), so it cannot take it");
      state().refused(c);
      MPI_Comm report = comm;
      PMPI_Comm_call_errhandler(report, MPI_ERR_BUFFER);
      return MPI_ERR_BUFFER;
    }
    if (e.kind() != blinkFailedMidCall) {  // every rank alike, before any data moved
      GLUE_LOG(Info, name(c) << " of " << bytes << " bytes goes to MPI: " << e.what());
      state().fellBack(
          c, e.kind() == blinkFailedMemoryType ? Fallback::MemoryType : Fallback::PlanFailed);
      return std::nullopt;
    }
    log::write(log::Level::Warn, std::string("MPI_") + name(c) + " failed in Blink: " + e.what());
  } catch (const std::exception& e) {
    log::write(log::Level::Warn, std::string("MPI_") + name(c) + " failed in Blink: " + e.what());
  }
  MPI_Comm report = comm;
  PMPI_Comm_call_errhandler(report, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

// Reductions: a run of one predefined type Blink reduces, and a predefined op.
struct Reduction {
  TypeInfo info;  // complete once the checks passed, or for a derived type
  bool derived = false;
  blinkDataType_t type{};
  blinkRedOp_t op{};
  std::uint64_t bytes = 0;  // signature bytes of one rank's buffer (a block for
                            // Reduce_scatter_block)
  // Of `type` in those bytes (a division: only off the fast path).
  std::size_t elements() const { return static_cast<std::size_t>(bytes / info.element_size); }
};

std::optional<Fallback> reductionChecks(Coll c, MPI_Comm comm, int count, MPI_Datatype type,
                                        MPI_Op op, Reduction& r) {
  if (!state().enabled.load(std::memory_order_relaxed)) return Fallback::Disabled;
  // A predefined type (nearly every call) is decided on without describing it.
  if (auto predefined = reductionType(type)) {
    r.type = *predefined;
    r.bytes = count > 0 ? static_cast<std::uint64_t>(count) * reducibleSize(*predefined) : 0;
  } else {
    r.info = describeOther(type);
    r.derived = true;
    if (!r.info.run || !r.info.reducible) return Fallback::Datatype;
    auto bytes = signatureBytes(count, r.info);
    if (!bytes) return Fallback::Arguments;
    r.type = *r.info.reducible;
    r.bytes = *bytes;
  }
  auto o = reductionOp(op);
  if (!o || !reducesWith(r.type, *o)) return Fallback::Op;
  r.op = *o;
  if (auto why = commonChecks(c, comm, r.bytes)) return why;
  if (!r.derived) describePredefined(type, r.type, reducibleSize(r.type), r.info);
  return std::nullopt;
}

// Bcast and Allgather: any run of one predefined type, moved as bytes.
std::optional<Fallback> movementChecks(Coll c, MPI_Comm comm, int count, MPI_Datatype type,
                                       TypeInfo& info, std::uint64_t& bytes) {
  if (!state().enabled.load(std::memory_order_relaxed)) return Fallback::Disabled;
  describe(type, info);
  if (!info.run) return Fallback::Datatype;
  auto b = signatureBytes(count, info);
  if (!b) return Fallback::Arguments;
  bytes = *b;
  return commonChecks(c, comm, bytes);
}

int commSize(MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return size;
}

bool validRoot(int root, MPI_Comm comm) {
  return root >= 0 && root < commSize(comm);
}

// The bytes of all ranks' blocks, when they fit in 64 bits.
std::optional<std::uint64_t> allBlocks(std::uint64_t block, MPI_Comm comm) {
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(block, static_cast<std::uint64_t>(commSize(comm)), &total)) {
    return std::nullopt;
  }
  return total;
}

const void* offsetBy(const void* p, MPI_Aint bytes) {
  return static_cast<const char*>(p) + bytes;
}

// The reductions on contiguous elements of r.type, whoever computes them:
// `reduce(in, out)` gets the input and result buffers (equal when in place),
// which are the caller's own when its layout is contiguous, else a packed copy.
template <typename Reduce>
void stagedAllreduce(const Reduction& r, const void* in, void* recvbuf, int count,
                     MPI_Datatype type, MPI_Comm comm, Reduce&& reduce) {
  if (r.info.contiguous) return reduce(in, recvbuf);
  ScratchLease scratch;
  std::byte* work = scratch.get(r.bytes);
  pack(in, count, type, r.info, work, comm);
  reduce(work, work);
  unpack(work, recvbuf, count, type, r.info, comm);
}

// recvbuf matters on the root only.
template <typename Reduce>
void stagedReduce(const Reduction& r, const void* in, void* recvbuf, int count, MPI_Datatype type,
                  bool at_root, MPI_Comm comm, Reduce&& reduce) {
  if (r.info.contiguous) return reduce(in, recvbuf);
  ScratchLease scratch;
  std::byte* work = scratch.get(r.bytes);
  pack(in, count, type, r.info, work, comm);
  reduce(work, work);
  if (at_root) unpack(work, recvbuf, count, type, r.info, comm);
}

// The input is comm-size blocks of recvcount items; in place, the result lands at
// the start of the input.
template <typename Reduce>
void stagedReduceScatter(const Reduction& r, const void* in, void* recvbuf, int recvcount,
                         MPI_Datatype type, MPI_Comm comm, Reduce&& reduce) {
  if (r.info.contiguous) return reduce(in, recvbuf);
  const auto ranks = static_cast<std::uint64_t>(commSize(comm));
  ScratchLease scratch;
  std::byte* work = scratch.get(r.bytes * ranks);
  pack(in, static_cast<MPI_Count>(recvcount) * static_cast<MPI_Count>(ranks), type, r.info, work,
       comm);
  reduce(work, work);
  unpack(work, recvbuf, recvcount, type, r.info, comm);
}

// Open MPI 4.1 rejects predefined ops on derived datatypes (MPI_ERR_OP), while
// Blink reduces a run of one predefined type as that type. So that such a call
// does not succeed in Blink and fail in MPI, one that Blink would have taken but
// for its size or for Blink being unavailable goes to MPI as elements of the
// predefined type (packed where the layout has gaps). Every rank knows the same
// reason; the elements' count must fit MPI's int.
bool reduceAsElements(const Reduction& r, Fallback why) {
  return (why == Fallback::BelowThreshold || why == Fallback::Unavailable ||
          why == Fallback::PlanFailed) &&
         r.derived && r.elements() <= static_cast<std::size_t>(INT_MAX);
}

// Runs `call` (an MPI call with staging around it); a failure to stage goes to the
// communicator's error handler, as an MPI error would.
template <typename Call>
int asMpiCall(MPI_Comm comm, Call&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    log::write(log::Level::Warn, std::string("staging for MPI failed: ") + e.what());
    MPI_Comm report = comm;
    PMPI_Comm_call_errhandler(report, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
  }
}

// MPI's spelling of an in-place call whose input is its output.
const void* inPlaceFor(const void* in, const void* out) {
  return in == out ? MPI_IN_PLACE : in;
}

}  // namespace
}  // namespace blink::glue

using blink::glue::Coll;
using blink::glue::Fallback;
using blink::glue::runOnBlink;
using blink::glue::ScratchLease;
using blink::glue::stageable;
using blink::glue::state;

extern "C" int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm) {
  blink::glue::Reduction r;
  auto why = blink::glue::reductionChecks(Coll::Allreduce, comm, count, datatype, op, r);
  if (!why && !blink::glue::everyRankCanStage(comm, r.bytes, stageable(r.info))) {
    why = Fallback::Arguments;
  }
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::Allreduce, comm, r.bytes, [&](auto& c) {
          blink::glue::stagedAllreduce(r, in, recvbuf, count, datatype, comm,
                                       [&](const void* from, void* to) {
                                         c.allReduce(from, to, r.elements(), r.type, r.op);
                                       });
        })) {
      return *rc;
    }
    why = Fallback::Unavailable;  // or PlanFailed: runOnBlink counted which
  } else {
    state().fellBack(Coll::Allreduce, *why);
  }
  if (blink::glue::reduceAsElements(r, *why)) {
    int rc = MPI_SUCCESS;
    return blink::glue::asMpiCall(comm, [&] {
      blink::glue::stagedAllreduce(
          r, in, recvbuf, count, datatype, comm, [&](const void* from, void* to) {
            rc = PMPI_Allreduce(blink::glue::inPlaceFor(from, to), to,
                                static_cast<int>(r.elements()), r.info.element, op, comm);
          });
      return rc;
    });
  }
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

extern "C" int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm) {
  blink::glue::Reduction r;
  auto why = blink::glue::reductionChecks(Coll::Reduce, comm, count, datatype, op, r);
  if (!why && !blink::glue::validRoot(root, comm)) why = Fallback::Arguments;
  if (!why && !blink::glue::everyRankCanStage(comm, r.bytes, stageable(r.info))) {
    why = Fallback::Arguments;
  }
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::Reduce, comm, r.bytes, [&](auto& c) {
          blink::glue::stagedReduce(r, in, recvbuf, count, datatype, c.rank() == root, comm,
                                    [&](const void* from, void* to) {
                                      c.reduce(from, to, r.elements(), r.type, r.op, root);
                                    });
        })) {
      return *rc;
    }
    why = Fallback::Unavailable;  // or PlanFailed: runOnBlink counted which
  } else {
    state().fellBack(Coll::Reduce, *why);
  }
  if (blink::glue::reduceAsElements(r, *why) && blink::glue::validRoot(root, comm)) {
    int rank = 0, rc = MPI_SUCCESS;
    PMPI_Comm_rank(comm, &rank);
    return blink::glue::asMpiCall(comm, [&] {
      blink::glue::stagedReduce(
          r, in, recvbuf, count, datatype, rank == root, comm, [&](const void* from, void* to) {
            rc = PMPI_Reduce(rank == root ? blink::glue::inPlaceFor(from, to) : from,
                             rank == root ? to : nullptr, static_cast<int>(r.elements()),
                             r.info.element, op, root, comm);
          });
      return rc;
    });
  }
  return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

extern "C" int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  blink::glue::Reduction r;
  auto why =
      blink::glue::reductionChecks(Coll::ReduceScatterBlock, comm, recvcount, datatype, op, r);
  if (!why && !blink::glue::allBlocks(r.bytes, comm)) why = Fallback::Arguments;
  if (!why && !blink::glue::everyRankCanStage(comm, r.bytes, stageable(r.info))) {
    why = Fallback::Arguments;
  }
  // With MPI_IN_PLACE the input is the whole of recvbuf and the result lands at
  // its start; Blink reads all of its input before it writes the result.
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::ReduceScatterBlock, comm, r.bytes, [&](auto& c) {
          blink::glue::stagedReduceScatter(r, in, recvbuf, recvcount, datatype, comm,
                                           [&](const void* from, void* to) {
                                             c.reduceScatter(from, to, r.elements(), r.type, r.op);
                                           });
        })) {
      return *rc;
    }
    why = Fallback::Unavailable;  // or PlanFailed: runOnBlink counted which
  } else {
    state().fellBack(Coll::ReduceScatterBlock, *why);
  }
  if (blink::glue::reduceAsElements(r, *why)) {
    int rc = MPI_SUCCESS;
    return blink::glue::asMpiCall(comm, [&] {
      blink::glue::stagedReduceScatter(
          r, in, recvbuf, recvcount, datatype, comm, [&](const void* from, void* to) {
            rc =
                PMPI_Reduce_scatter_block(blink::glue::inPlaceFor(from, to), to,
                                          static_cast<int>(r.elements()), r.info.element, op, comm);
          });
      return rc;
    });
  }
  return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

extern "C" int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  blink::glue::TypeInfo info;
  std::uint64_t bytes = 0;
  auto why = blink::glue::movementChecks(Coll::Bcast, comm, count, datatype, info, bytes);
  if (!why && !blink::glue::validRoot(root, comm)) why = Fallback::Arguments;
  if (!why && !blink::glue::everyRankCanStage(comm, bytes, stageable(info))) {
    why = Fallback::Arguments;
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Bcast, comm, bytes, [&](auto& c) {
          if (info.contiguous) {
            c.broadcast(buffer, buffer, static_cast<std::size_t>(bytes), blinkUint8, root);
            return;
          }
          ScratchLease scratch;
          std::byte* work = scratch.get(bytes);
          if (c.rank() == root) blink::glue::pack(buffer, count, datatype, info, work, comm);
          c.broadcast(work, work, static_cast<std::size_t>(bytes), blinkUint8, root);
          if (c.rank() != root) blink::glue::unpack(work, buffer, count, datatype, info, comm);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Bcast, *why);
  }
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}

extern "C" int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  // Everything that decides comes from the receive side, whose signature is the
  // same on every rank; the send side (type, count, MPI_IN_PLACE) may differ per
  // rank and only says how this rank's block is read.
  blink::glue::TypeInfo recv;
  std::uint64_t block = 0, all = 0;
  auto why = blink::glue::movementChecks(Coll::Allgather, comm, recvcount, recvtype, recv, block);
  if (!why) {
    if (auto total = blink::glue::allBlocks(block, comm)) {
      all = *total;
    } else {
      why = Fallback::Arguments;
    }
  }
  const bool in_place = sendbuf == MPI_IN_PLACE;
  blink::glue::TypeInfo send;
  if (!why && !in_place) blink::glue::describe(sendtype, send);
  if (!why && !blink::glue::everyRankCanStage(comm, block,
                                              stageable(recv) && (in_place || stageable(send)))) {
    why = Fallback::Arguments;
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Allgather, comm, block, [&](auto& c) {
          const auto me = static_cast<MPI_Aint>(c.rank());
          if (!in_place && blink::glue::signatureBytes(sendcount, send) != block) {
            throw blink::glue::Error(blinkInvalidArgument,
                                     "the send buffer's signature does not match a receive block");
          }
          // This rank's block in recvbuf, where MPI_IN_PLACE keeps it.
          const void* own = blink::glue::offsetBy(recvbuf, me * recvcount * recv.extent);
          ScratchLease scratch;
          if (recv.contiguous) {
            const void* in = own;
            if (!in_place && send.contiguous) {
              in = sendbuf;
            } else if (!in_place) {
              std::byte* packed = scratch.get(block);
              blink::glue::pack(sendbuf, sendcount, sendtype, send, packed, comm);
              in = packed;
            }
            c.allGather(in, recvbuf, static_cast<std::size_t>(block), blinkUint8);
            return;
          }
          std::byte* work = scratch.get(all);
          std::byte* mine = work + static_cast<std::uint64_t>(me) * block;
          if (in_place) {
            blink::glue::pack(own, recvcount, recvtype, recv, mine, comm);
          } else {
            blink::glue::pack(sendbuf, sendcount, sendtype, send, mine, comm);
          }
          c.allGather(mine, work, static_cast<std::size_t>(block), blinkUint8);
          // Block i lands at i * recvcount * extent, as MPI_Allgather places it.
          blink::glue::unpack(work, recvbuf, static_cast<MPI_Count>(recvcount) * c.size(), recvtype,
                              recv, comm);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Allgather, *why);
  }
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// ---- The collectives Blink builds from the ones above ----------------------------
//
// Blink's runtime has no gather or vector algorithms of its own: Allgatherv and
// Gather(v) run as one Blink AllGather of equal blocks, each as large as the largest
// (the shorter ones padded), and Reduce_scatter as one ReduceScatter of padded blocks
// or, where padding would more than double the data, an AllReduce of the whole
// input. Each underlying call is planned and chosen like any other of its size.
// Gather(v) delivers every block to every rank and keeps them on the root only.

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

// Nonblocking collectives stay MPI's: running one to completion inside the call
// could deadlock a legal program (one that posts MPI_Iallreduce, then a send its
// peer must receive before posting its own), and completing it later would need a
// progress engine of Blink's own. They are counted, so the accounting shows them.
extern "C" int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  state().fellBack(Coll::Iallreduce, state().enabled.load(std::memory_order_relaxed)
                                         ? Fallback::Nonblocking
                                         : Fallback::Disabled);
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

extern "C" int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          MPI_Request* request) {
  state().fellBack(Coll::Ibcast, state().enabled.load(std::memory_order_relaxed)
                                     ? Fallback::Nonblocking
                                     : Fallback::Disabled);
  return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}
