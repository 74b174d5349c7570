// How the runtime waits: spin briefly (a peer on another core answers within
// microseconds), then yield the core (eight ranks on two cores must let the peer
// they wait for run), then sleep in short naps. Every wait has a deadline, measured
// from the last progress, after which the caller reports who it was waiting for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace blink {

class Backoff {
 public:
  explicit Backoff(double timeout_seconds);

  // Something moved: the next idle period starts from scratch.
  void progressed();
  // Nothing moved this round. Waits a little; false once the deadline has passed.
  bool idle();
  double secondsSinceProgress() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::chrono::nanoseconds timeout_;
  Clock::time_point last_progress_;
  unsigned idle_rounds_ = 0;
};

// Waits with the Backoff policy until `counter`, a word in shared memory that a peer
// raises with release stores, reaches `target` (acquire); after `timeout_seconds`
// without that, calls `timed_out(seconds waited)`, which must throw.
template <typename TimedOut>
void awaitCounter(std::uint64_t& counter, std::uint64_t target, double timeout_seconds,
                  TimedOut&& timed_out) {
  auto word = std::atomic_ref(counter);
  if (word.load(std::memory_order_acquire) >= target) return;
  Backoff backoff(timeout_seconds);
  while (word.load(std::memory_order_acquire) < target) {
    if (!backoff.idle()) timed_out(backoff.secondsSinceProgress());
  }
}

// The blinkTimeout of a wait on a peer in a shared-memory call: `call` of
// `collective` (`bytes`) on `path`, where `rank` waited `seconds` for `peer` and
// `what_for` says for what ("to post its data").
[[noreturn]] void throwPeerTimeout(const char* collective, std::size_t bytes, const char* path,
                                   std::uint64_t call, int rank, int peer, const char* what_for,
                                   double seconds);

}  // namespace blink
