// streamingCopy copies exactly what memcpy would, for every length and every
// alignment of source and destination (its head, lines and tail take different
// paths), and touches nothing outside the destination range.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/shm/streaming_copy.hpp"

namespace {

TEST(StreamingCopy, MatchesMemcpyForEveryLengthAndAlignment) {
  constexpr std::size_t kGuard = 64;
  std::vector<std::byte> source(5000);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = std::byte(i * 131 + 7);
  for (std::size_t length : {0u, 1u, 63u, 64u, 255u, 256u, 257u, 1000u, 4096u, 4831u}) {
    for (std::size_t to_offset = 0; to_offset < 64; to_offset += 7) {
      for (std::size_t from_offset : {0u, 1u, 16u, 33u}) {
        if (from_offset + length > source.size()) continue;
        std::vector<std::byte> target(kGuard + 64 + length + kGuard, std::byte{0xee});
        // Destination offsets relative to a 64-byte boundary inside the buffer.
        std::byte* base = target.data() + kGuard;
        const auto misaligned = reinterpret_cast<std::uintptr_t>(base) % 64;
        std::byte* to = base + (misaligned == 0 ? 0 : 64 - misaligned) + to_offset;
        blink::transport::streamingCopy(to, source.data() + from_offset, length);
        for (std::byte* p = target.data(); p < target.data() + target.size(); ++p) {
          const bool inside = p >= to && p < to + length;
          const std::byte want =
              inside ? source[from_offset + static_cast<std::size_t>(p - to)] : std::byte{0xee};
          ASSERT_EQ(*p, want) << "length " << length << ", destination offset " << to_offset
                              << ", source offset " << from_offset << ", byte "
                              << (p - target.data());
        }
      }
    }
  }
}

}  // namespace
