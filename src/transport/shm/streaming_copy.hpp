// Copies into shared memory that another core reads next.
//
// Cached stores leave the data in this core's cache, where the reader finds it
// fastest. But each store first takes its line from whoever holds it, and a peer
// holds the lines it read last round. Where the two cores sit on different dies
// that costs about 30 ns per line, one line after another: measured on an AMD EPYC
// VM, a 512 KiB staging copy took 250 us instead of 17, in about a third of the
// runs (the host moves the vCPUs), and an AllGather fell to 0.2x Open MPI.
// Non-temporal stores write whole lines without fetching them, at memory speed
// whatever the peer cached, but the reader then finds the data in memory, not in a
// cache: on the same VM at 1-4 MiB they halved the good runs' bandwidth.
//
// So StagingWriter uses cached stores and watches them: it times every copy of
// 64 KiB or more, and 8 copies in a row at under a third of the best rate it has
// seen for copies of that size (one such copy is a preemption, not a pattern)
// switch it to non-temporal stores for the next 64 copies. Then one cached copy
// decides: slow, and it streams again at once. Each rank decides alone: the choice
// changes how bytes are written, not which bytes.
#pragma once

#include <array>
#include <cstddef>

namespace blink::transport {

// memcpy(to, from, bytes) with non-temporal stores where the CPU has them (x86-64);
// a plain memcpy elsewhere. The ranges must not overlap. Stores are complete (fenced)
// when it returns, so a release store after it publishes them.
void streamingCopy(std::byte* to, const std::byte* from, std::size_t bytes);

class StagingWriter {
 public:
  // Copies that are timed, and how long a slow copy switches to streaming stores.
  static constexpr std::size_t kTimedBytes = std::size_t{64} << 10;
  static constexpr int kStreamingCopies = 64;
  static constexpr double kSlowFactor = 3.0;
  static constexpr int kSlowCopiesInARow = 8;

  // memcpy(to, from, bytes) by cached or streaming stores (see above); the stores
  // are complete when it returns.
  void copy(std::byte* to, const std::byte* from, std::size_t bytes);

  // The policy alone, for tests: a cached copy of `bytes` took `seconds`.
  void recordCached(std::size_t bytes, double seconds);
  // Whether the next timed copy streams.
  bool streaming() const { return streaming_left_ > 0; }

 private:
  std::array<double, 64> best_rate_{};  // bytes per second, by floor(log2(bytes))
  int streaming_left_ = 0;
  int slow_in_a_row_ = 0;
  bool probing_ = false;  // the first cached copy after streaming ones
};

}  // namespace blink::transport
