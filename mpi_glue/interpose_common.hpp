// What every interposed collective shares: the checks that decide whether Blink
// takes a call, running it on Blink with its accounting and failure rules, and the
// staged reductions. Internal to libblink_mpi.so.
#pragma once

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

inline bool isIntraComm(MPI_Comm comm) {
  if (isLastUsed(comm)) return true;  // only intra-communicators get an entry
  int inter = 0;
  return comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter;
}

// Shared checks of every collective; nullopt means "take it", else the reason not to.
inline std::optional<Fallback> commonChecks(Coll c, MPI_Comm comm, std::uint64_t bytes) {
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
inline std::optional<int> runOnBlink(Coll c, MPI_Comm comm, std::uint64_t bytes, Body&& body) {
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

inline std::optional<Fallback> reductionChecks(Coll c, MPI_Comm comm, int count, MPI_Datatype type,
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
inline std::optional<Fallback> movementChecks(Coll c, MPI_Comm comm, int count, MPI_Datatype type,
                                              TypeInfo& info, std::uint64_t& bytes) {
  if (!state().enabled.load(std::memory_order_relaxed)) return Fallback::Disabled;
  describe(type, info);
  if (!info.run) return Fallback::Datatype;
  auto b = signatureBytes(count, info);
  if (!b) return Fallback::Arguments;
  bytes = *b;
  return commonChecks(c, comm, bytes);
}

inline int commSize(MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return size;
}

inline bool validRoot(int root, MPI_Comm comm) {
  return root >= 0 && root < commSize(comm);
}

// The bytes of all ranks' blocks, when they fit in 64 bits.
inline std::optional<std::uint64_t> allBlocks(std::uint64_t block, MPI_Comm comm) {
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(block, static_cast<std::uint64_t>(commSize(comm)), &total)) {
    return std::nullopt;
  }
  return total;
}

inline const void* offsetBy(const void* p, MPI_Aint bytes) {
  return static_cast<const char*>(p) + bytes;
}

// The reductions on contiguous elements of r.type, whoever computes them:
// `reduce(in, out)` gets the input and result buffers (equal when in place),
// which are the caller's own when its layout is contiguous, else a packed copy.
template <typename Reduce>
inline void stagedAllreduce(const Reduction& r, const void* in, void* recvbuf, int count,
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
inline void stagedReduce(const Reduction& r, const void* in, void* recvbuf, int count,
                         MPI_Datatype type, bool at_root, MPI_Comm comm, Reduce&& reduce) {
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
inline void stagedReduceScatter(const Reduction& r, const void* in, void* recvbuf, int recvcount,
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
inline bool reduceAsElements(const Reduction& r, Fallback why) {
  return (why == Fallback::BelowThreshold || why == Fallback::Unavailable ||
          why == Fallback::PlanFailed) &&
         r.derived && r.elements() <= static_cast<std::size_t>(INT_MAX);
}

// Runs `call` (an MPI call with staging around it); a failure to stage goes to the
// communicator's error handler, as an MPI error would.
template <typename Call>
inline int asMpiCall(MPI_Comm comm, Call&& call) {
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
inline const void* inPlaceFor(const void* in, const void* out) {
  return in == out ? MPI_IN_PLACE : in;
}

}  // namespace blink::glue
