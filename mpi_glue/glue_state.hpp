// Process-wide state of the interposition layer: whether it is on, the size
// thresholds, and the accounting printed at MPI_Finalize.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace blink::glue {

enum class Coll {
  Allreduce,
  Bcast,
  Reduce,
  Allgather,
  ReduceScatterBlock,
  Allgatherv,
  Gather,
  Gatherv,
  ReduceScatter,
  Barrier,
  Iallreduce,
  Ibcast,
  Count
};
constexpr std::size_t kNumColls = static_cast<std::size_t>(Coll::Count);
// "allreduce", "bcast", "reduce", "allgather", "reduce_scatter_block", "allgatherv",
// "gather", "gatherv", "reduce_scatter", "barrier", "iallreduce", "ibcast"
const char* name(Coll c);
// Whether BLINK_MPI_MIN_BYTES names it (all but the barrier and the nonblocking ones).
bool hasThreshold(Coll c);

// Why a call went to the MPI library. Every fallback is counted by reason.
enum class Fallback {
  Disabled,        // BLINK_MPI_DISABLE=1 or an invalid BLINK_* setting on any rank, ranks
                   // whose settings differ, or MPI initialised without MPI_Init*
  BelowThreshold,  // fewer bytes than BLINK_MPI_MIN_BYTES
  ZeroCount,
  Datatype,  // the signature is not a run of one predefined type (reductions: of one
             // Blink reduces)
  Op,        // user-defined, MAXLOC/MINLOC, or a bitwise or logical op on a floating type
  InterComm,
  Arguments,    // an invalid root, more bytes than 64 bits count, or (over 2 GiB) a layout
                // some rank cannot stage
  Unavailable,  // Blink could not set up on this communicator (reason logged once)
  PlanFailed,   // every rank failed to build the plan together
  MemoryType,   // a rank passed memory Blink cannot move (CUDA device or managed)
  Nonblocking,  // MPI_Iallreduce / MPI_Ibcast: always MPI's (see interpose_collectives.cpp)
  Count
};
constexpr std::size_t kNumFallbacks = static_cast<std::size_t>(Fallback::Count);
const char* name(Fallback f);

// One thread's counts of one collective. Only that thread writes them (a plain load
// and store, no locked instruction on the path of a sub-microsecond call); the
// report sums every thread's.
struct Counters {
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> bytes{0};
  std::array<std::atomic<std::uint64_t>, kNumFallbacks> fallbacks{};
  // Calls on device buffers Blink cannot move that a non-CUDA-aware MPI cannot take
  // either: failed with MPI_ERR_BUFFER (cuda_aware.hpp).
  std::atomic<std::uint64_t> refused_memory_type{0};
};
using ThreadCounters = std::array<Counters, kNumColls>;
// This thread's counters, made and registered on its first call.
ThreadCounters& threadCounters();

struct GlueState {
  // True once MPI_Init found every rank's settings valid, equal and enabled.
  std::atomic<bool> enabled{false};
  std::array<std::uint64_t, kNumColls> min_bytes{};
  // Whether the MPI library takes device buffers, agreed by every rank in MPI_Init
  // (cuda_aware.hpp), and why (for messages).
  bool mpi_cuda_aware = false;
  std::string mpi_cuda_aware_why;

  void handled(Coll c, std::uint64_t bytes) {
    Counters& k = threadCounters()[static_cast<std::size_t>(c)];
    add(k.calls, 1);
    add(k.bytes, bytes);
  }
  void fellBack(Coll c, Fallback why) {
    add(threadCounters()[static_cast<std::size_t>(c)].fallbacks[static_cast<std::size_t>(why)], 1);
  }
  void refused(Coll c) {
    add(threadCounters()[static_cast<std::size_t>(c)].refused_memory_type, 1);
  }

 private:
  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

// Constant-initialised, so that reaching it costs no guard: every interposed call
// asks it several times.
extern constinit GlueState glue_state;
inline GlueState& state() {
  return glue_state;
}

// Reads BLINK_MPI_DISABLE and BLINK_MPI_MIN_BYTES into state() (this rank's view;
// MPI_Init then agrees it across ranks). Throws Error(blinkInvalidInput)
// for a malformed threshold.
void configure();

// One line per collective: "blink-accounting allreduce handled=3 bytes=12288
// fallback.below_threshold=1 ... refused.memory_type=1", the format tests and scripts
// parse.
std::string accountingReport();

}  // namespace blink::glue
