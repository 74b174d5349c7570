// streamingCopy copies exactly what memcpy would, for every length and every
// alignment of source and destination (its head, lines and tail take different
// paths), and touches nothing outside the destination range. StagingWriter's policy:
// 8 cached copies in a row at under a third of the best rate for their size stream
// the next 64 copies, then one cached copy decides; other sizes and small copies do
// not count; and every copy, either way, writes the right bytes.
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

using blink::transport::StagingWriter;

TEST(StagingWriter, SlowCachedCopiesInARowStreamTheNextOnesThenOneDecides) {
  StagingWriter writer;
  const std::size_t bytes = StagingWriter::kTimedBytes;
  writer.recordCached(bytes, 1e-5);  // 6.5 GB/s: the best so far
  writer.recordCached(bytes, 2e-5);  // half of it: still cached
  for (int slow = 1; slow < StagingWriter::kSlowCopiesInARow; ++slow) {
    writer.recordCached(bytes, 4e-5);  // a quarter: slow, but once is a preemption
    EXPECT_FALSE(writer.streaming()) << slow << " slow copies";
  }
  writer.recordCached(bytes, 1e-5);  // a good one resets the count
  for (int slow = 1; slow < StagingWriter::kSlowCopiesInARow; ++slow) {
    writer.recordCached(bytes, 4e-5);
  }
  EXPECT_FALSE(writer.streaming());
  writer.recordCached(bytes, 4e-5);  // the eighth in a row
  ASSERT_TRUE(writer.streaming());
  std::vector<std::byte> from(bytes), to(bytes);
  for (int copy = 0; copy < StagingWriter::kStreamingCopies; ++copy) {
    EXPECT_TRUE(writer.streaming()) << "copy " << copy;
    for (std::size_t i = 0; i < bytes; i += 4096) from[i] = std::byte(copy + 1);
    writer.copy(to.data(), from.data(), bytes);
    ASSERT_EQ(to, from) << "copy " << copy;
  }
  EXPECT_FALSE(writer.streaming()) << "after 64 copies a cached one gets a try";
  writer.recordCached(bytes, 4e-5);  // still slow: back to streaming at once
  EXPECT_TRUE(writer.streaming());
}

TEST(StagingWriter, EachSizeComparesWithItsOwnBest) {
  StagingWriter writer;
  writer.recordCached(StagingWriter::kTimedBytes, 1e-6);  // 64 KiB at 65 GB/s
  writer.recordCached(std::size_t{4} << 20, 1e-3);        // 4 MiB at 4 GB/s: its first
  EXPECT_FALSE(writer.streaming());
  writer.recordCached(StagingWriter::kTimedBytes - 1, 1.0);  // small copies are not timed
  EXPECT_FALSE(writer.streaming());
  for (int slow = 0; slow < StagingWriter::kSlowCopiesInARow; ++slow) {
    writer.recordCached(std::size_t{5} << 20, 5e-3);  // same power of two, a fifth the rate
  }
  EXPECT_TRUE(writer.streaming());
}

}  // namespace
