#include "transport/shm/streaming_copy.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace blink::transport {

void streamingCopy(std::byte* to, const std::byte* from, std::size_t bytes) {
#if defined(__x86_64__)
  constexpr std::size_t kLine = 64;
  // Small copies and the unaligned head go through memcpy; whole lines stream.
  const auto misalignment = reinterpret_cast<std::uintptr_t>(to) % kLine;
  std::size_t head = misalignment == 0 ? 0 : kLine - misalignment;
  if (bytes < 4 * kLine || head >= bytes) {
    std::memcpy(to, from, bytes);
    return;
  }
  std::memcpy(to, from, head);
  std::size_t at = head;
  for (; at + kLine <= bytes; at += kLine) {
    const auto* src = reinterpret_cast<const __m128i*>(from + at);
    auto* dst = reinterpret_cast<__m128i*>(to + at);
    const __m128i a = _mm_loadu_si128(src);
    const __m128i b = _mm_loadu_si128(src + 1);
    const __m128i c = _mm_loadu_si128(src + 2);
    const __m128i d = _mm_loadu_si128(src + 3);
    _mm_stream_si128(dst, a);
    _mm_stream_si128(dst + 1, b);
    _mm_stream_si128(dst + 2, c);
    _mm_stream_si128(dst + 3, d);
  }
  // Non-temporal stores are weakly ordered: fence them before anyone publishes.
  _mm_sfence();
  std::memcpy(to + at, from + at, bytes - at);
#else
  std::memcpy(to, from, bytes);
#endif
}

void StagingWriter::copy(std::byte* to, const std::byte* from, std::size_t bytes) {
  if (bytes < kTimedBytes) {
    std::memcpy(to, from, bytes);
    return;
  }
  if (streaming_left_ > 0) {
    // The last streaming copy hands over to a cached one that decides alone.
    probing_ = --streaming_left_ == 0;
    streamingCopy(to, from, bytes);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  std::memcpy(to, from, bytes);
  recordCached(bytes,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void StagingWriter::recordCached(std::size_t bytes, double seconds) {
  if (bytes < kTimedBytes) return;
  // Rates differ by size (a copy that fits in L2 outruns one that goes to memory),
  // so each power of two compares with its own best.
  double& best = best_rate_[static_cast<std::size_t>(std::bit_width(bytes) - 1)];
  const double rate = static_cast<double>(bytes) / std::max(seconds, 1e-9);
  if (rate > best) best = rate;
  if (rate * kSlowFactor >= best) {
    slow_in_a_row_ = 0;
    probing_ = false;
    return;
  }
  // A preempted copy is slow once; lines held elsewhere make every copy slow.
  if (probing_ || ++slow_in_a_row_ >= kSlowCopiesInARow) {
    streaming_left_ = kStreamingCopies;
    slow_in_a_row_ = 0;
    probing_ = false;
  }
}

}  // namespace blink::transport
