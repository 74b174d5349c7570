// The interposed collectives of libblink_mpi.so. Each decides from its arguments
// whether Blink takes the call (see eligibility.hpp; the same decision on every
// rank) and otherwise calls its PMPI_* twin with the caller's arguments unchanged.
// Once Blink has taken a call, a failure goes to the communicator's MPI error
// handler (as an MPI error would), except a failure every rank met together
// before any data moved, which hands the call to the MPI library instead.
#include <mpi.h>

#include <cstdint>
#include <optional>

#include "comm_cache.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "eligibility.hpp"
#include "glue_state.hpp"
#include "runtime/memory_type.hpp"

namespace blink::glue {
namespace {

// Shared checks of every collective; nullopt means "take it", else the reason not to.
std::optional<Fallback> commonChecks(Coll c, MPI_Comm comm, std::uint64_t bytes) {
  GlueState& s = state();
  if (!s.enabled.load(std::memory_order_relaxed)) return Fallback::Disabled;
  if (bytes == 0) return Fallback::ZeroCount;
  if (bytes < s.min_bytes[static_cast<std::size_t>(c)]) return Fallback::BelowThreshold;
  int inter = 0;
  if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    return Fallback::InterComm;
  }
  return std::nullopt;
}

// Runs `body` on the Blink communicator of `comm`; returns the MPI result, or
// nullopt when the call must go to PMPI after all (counted under `c`).
template <typename Body>
std::optional<int> runOnBlink(Coll c, MPI_Comm comm, std::uint64_t bytes, Body&& body) {
  runtime::Communicator* blink_comm = communicatorFor(comm);
  if (blink_comm == nullptr) {
    state().fellBack(c, Fallback::Unavailable);
    return std::nullopt;
  }
  try {
    body(*blink_comm);
    state().handled(c, bytes);
    return MPI_SUCCESS;
  } catch (const runtime::MemoryTypeError& e) {
    BLINK_LOG(Info, name(c) << " of " << bytes << " bytes goes to MPI: " << e.what());
    state().fellBack(c, Fallback::MemoryType);
    return std::nullopt;
  } catch (const CollectiveError& e) {
    BLINK_LOG(Info, name(c) << " of " << bytes << " bytes goes to MPI: " << e.what());
    state().fellBack(c, Fallback::PlanFailed);
    return std::nullopt;
  } catch (const std::exception& e) {
    log::write(log::Level::Warn, std::string("MPI_") + name(c) + " failed in Blink: " + e.what());
    MPI_Comm report = comm;
    PMPI_Comm_call_errhandler(report, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
  }
}

std::uint64_t bytesOf(int count, std::size_t element) {
  return count > 0 ? static_cast<std::uint64_t>(count) * element : 0;
}

// Reductions: contiguous predefined types and ops only.
std::optional<Fallback> reductionChecks(Coll c, MPI_Comm comm, int count, MPI_Datatype type,
                                        MPI_Op op, blinkDataType_t& blink_type,
                                        blinkRedOp_t& blink_op, std::uint64_t& bytes) {
  if (!state().enabled.load(std::memory_order_relaxed)) return Fallback::Disabled;
  auto t = reductionType(type);
  if (!t) return Fallback::Datatype;
  auto o = reductionOp(op);
  if (!o) return Fallback::Op;
  blink_type = *t;
  blink_op = *o;
  bytes = bytesOf(count, blinkDataTypeSize(*t));
  return commonChecks(c, comm, bytes);
}

bool validRoot(int root, MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return root >= 0 && root < size;
}

}  // namespace
}  // namespace blink::glue

using blink::glue::Coll;
using blink::glue::Fallback;
using blink::glue::runOnBlink;
using blink::glue::state;

extern "C" int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm) {
  blinkDataType_t type{};
  blinkRedOp_t blink_op{};
  std::uint64_t bytes = 0;
  auto why = blink::glue::reductionChecks(Coll::Allreduce, comm, count, datatype, op, type,
                                          blink_op, bytes);
  if (!why) {
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (auto rc = runOnBlink(Coll::Allreduce, comm, bytes, [&](auto& c) {
          c.allReduce(in, recvbuf, static_cast<std::size_t>(count), type, blink_op);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Allreduce, *why);
  }
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

extern "C" int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm) {
  blinkDataType_t type{};
  blinkRedOp_t blink_op{};
  std::uint64_t bytes = 0;
  auto why =
      blink::glue::reductionChecks(Coll::Reduce, comm, count, datatype, op, type, blink_op, bytes);
  if (!why && !blink::glue::validRoot(root, comm)) why = Fallback::Arguments;
  if (!why) {
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (auto rc = runOnBlink(Coll::Reduce, comm, bytes, [&](auto& c) {
          c.reduce(in, recvbuf, static_cast<std::size_t>(count), type, blink_op, root);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Reduce, *why);
  }
  return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

extern "C" int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  blinkDataType_t type{};
  blinkRedOp_t blink_op{};
  std::uint64_t bytes = 0;
  auto why = blink::glue::reductionChecks(Coll::ReduceScatterBlock, comm, recvcount, datatype, op,
                                          type, blink_op, bytes);
  if (!why) {
    // With MPI_IN_PLACE the input is the whole of recvbuf and the result lands at
    // its start; Blink reads all of its input before it writes the result.
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (auto rc = runOnBlink(Coll::ReduceScatterBlock, comm, bytes, [&](auto& c) {
          c.reduceScatter(in, recvbuf, static_cast<std::size_t>(recvcount), type, blink_op);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::ReduceScatterBlock, *why);
  }
  return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

extern "C" int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  std::optional<Fallback> why;
  std::uint64_t bytes = 0;
  if (!state().enabled.load(std::memory_order_relaxed)) {
    why = Fallback::Disabled;
  } else if (auto size = blink::glue::contiguousSize(datatype)) {
    bytes = blink::glue::bytesOf(count, *size);
    why = blink::glue::commonChecks(Coll::Bcast, comm, bytes);
    if (!why && !blink::glue::validRoot(root, comm)) why = Fallback::Arguments;
  } else {
    why = Fallback::Datatype;
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Bcast, comm, bytes, [&](auto& c) {
          c.broadcast(buffer, buffer, static_cast<std::size_t>(bytes), blinkUint8, root);
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
  std::optional<Fallback> why;
  std::uint64_t block = 0;
  if (!state().enabled.load(std::memory_order_relaxed)) {
    why = Fallback::Disabled;
  } else if (auto size = blink::glue::contiguousSize(recvtype)) {
    block = blink::glue::bytesOf(recvcount, *size);
    why = blink::glue::commonChecks(Coll::Allgather, comm, block);
    // Every rank sees the same (sendcount, sendtype) rule: MPI_IN_PLACE or the
    // receive type and count; anything else (a different but matching type map)
    // stays with MPI.
    if (!why && sendbuf != MPI_IN_PLACE && (sendtype != recvtype || sendcount != recvcount)) {
      why = Fallback::Arguments;
    }
  } else {
    why = Fallback::Datatype;
  }
  if (!why) {
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    const void* in = sendbuf == MPI_IN_PLACE
                         ? static_cast<const void*>(static_cast<const char*>(recvbuf) +
                                                    static_cast<std::size_t>(rank) * block)
                         : sendbuf;
    if (auto rc = runOnBlink(Coll::Allgather, comm, block, [&](auto& c) {
          c.allGather(in, recvbuf, static_cast<std::size_t>(block), blinkUint8);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Allgather, *why);
  }
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
