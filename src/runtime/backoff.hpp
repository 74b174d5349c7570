// How the runtime waits: spin briefly (a peer on another core answers within
// microseconds), then yield the core (eight ranks on two cores must let the peer
// they wait for run), then sleep in short naps. Every wait has a deadline, measured
// from the last progress, after which the caller reports who it was waiting for.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace blink::runtime {

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

// The blinkTimeout of a wait on a peer in a shared-memory call: `call` of
// `collective` (`bytes`) on `path`, where `rank` waited `seconds` for `peer` and
// `what_for` says for what ("to post its data").
[[noreturn]] void throwPeerTimeout(const char* collective, std::size_t bytes, const char* path,
                                   std::uint64_t call, int rank, int peer, const char* what_for,
                                   double seconds);

}  // namespace blink::runtime
