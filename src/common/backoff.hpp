// How the runtime waits: spin briefly (a peer on another core answers within
// microseconds), then yield the core (eight ranks on two cores must let the peer
// they wait for run), then sleep in short naps. Every wait has a deadline, measured
// from the end of the spins after the last progress, after which the caller reports
// who it was waiting for. The clock is read only once a wait outlasts its spins: a
// small collective's whole call takes less than two clock reads.
//
// A wait that outlasts its spins also lets MPI progress, at most once per
// kMpiProgressEvery (one PMPI_Iprobe: a pass of Open MPI's progress engine). Open MPI
// moves what a socket did not take (EAGAIN), and answers a rendezvous, only inside an
// MPI call of the sending process: a rank that returned from MPI with bytes still
// queued there and then waited in Blink for a peer that was itself waiting in MPI for
// those bytes stalled both until BLINK_TIMEOUT_S (a PMPI_Reduce between two Blink
// calls over UCX, 1 run in 6-30 across emulated hosts; README, "A stall once taken
// for a lost UCX message").
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace blink {

// The spins before the first yield: kSpinRounds pauses (about a microsecond) when
// every rank of the node can have a core, else a few (a peer that shares our core
// runs only once we yield, as Open MPI's mpi_yield_when_idle does at once).
inline constexpr unsigned kSpinRounds = 32;
inline constexpr unsigned kOversubscribedSpinRounds = 4;
inline constexpr std::chrono::microseconds kMpiProgressEvery{100};
unsigned spinRoundsFor(int ranks_on_node);

class Backoff {
 public:
  explicit Backoff(double timeout_seconds, unsigned spin_rounds = kSpinRounds);

  // Something moved: the next idle period starts from scratch.
  void progressed() {
    idle_rounds_ = 0;
    clock_started_ = false;
  }
  // Nothing moved this round. Waits a little; false once the deadline has passed.
  bool idle();
  double secondsSinceProgress() const;
  // Idle rounds since the last progress: past the spins, each one a yield or a nap.
  unsigned idleRounds() const { return idle_rounds_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::chrono::nanoseconds timeout_;
  Clock::time_point last_progress_;      // valid once clock_started_
  Clock::time_point last_mpi_progress_;  // valid once clock_started_
  unsigned spin_rounds_;
  unsigned idle_rounds_ = 0;
  bool clock_started_ = false;
};

// Waits with the Backoff policy until `counter`, a word in shared memory that a peer
// raises with release stores, reaches `target` (acquire); after `timeout_seconds`
// without that, calls `timed_out(seconds waited)`, which must throw.
// Returns the counter's value. `spin_rounds` (if given) adapts to how the wait went:
// one that lasted many yields waited for a peer that was not running (a machine busy
// with other work), and the next wait yields almost at once, as Open MPI's
// mpi_yield_when_idle does; one over within a few yields spins `full_spin` again.
template <typename TimedOut>
std::uint64_t awaitCounter(std::uint64_t& counter, std::uint64_t target, double timeout_seconds,
                           TimedOut&& timed_out, unsigned* spin_rounds = nullptr,
                           unsigned full_spin = kSpinRounds) {
  auto word = std::atomic_ref(counter);
  std::uint64_t seen = word.load(std::memory_order_acquire);
  if (seen >= target) return seen;
  Backoff backoff(timeout_seconds, spin_rounds != nullptr ? *spin_rounds : kSpinRounds);
  while ((seen = word.load(std::memory_order_acquire)) < target) {
    if (!backoff.idle()) timed_out(backoff.secondsSinceProgress());
  }
  if (spin_rounds != nullptr) {
    constexpr unsigned kManyYields = 8;
    *spin_rounds =
        backoff.idleRounds() > *spin_rounds + kManyYields ? kOversubscribedSpinRounds : full_spin;
  }
  return seen;
}

// The blinkTimeout of a wait on a peer in a shared-memory call: `call` of
// `collective` (`bytes`) on `path`, where `rank` waited `seconds` for `peer` and
// `what_for` says for what ("to post its data").
[[noreturn]] void throwPeerTimeout(const char* collective, std::size_t bytes, const char* path,
                                   std::uint64_t call, int rank, int peer, const char* what_for,
                                   double seconds);

}  // namespace blink
