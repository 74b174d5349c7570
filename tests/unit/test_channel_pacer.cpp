// The device transport's pacing (transport/channel_pacer.hpp): chunks granted
// to the channels sending to one peer, counted exactly, follow the plan's shares.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "transport/channel_pacer.hpp"

namespace {

using blink::transport::ChannelPacer;

constexpr std::size_t kChunk = 1024;
constexpr int kSlots = 4;

// Lanes from one sender to one peer over one link, as the device transport drives
// them: a lane queues chunks while the pacer says yes and it has a free slot; the
// link (one copy engine) finishes one queued chunk per tick in queue order, and the
// receiver frees its slot at once. A lane says idle when it is not busy: nothing
// more to queue, or nothing on the link.
struct Link {
  ChannelPacer& pacer;
  int peer;
  std::vector<int> in_flight;  // per lane
  std::vector<int> queue;      // lanes of the chunks on the link, in order

  void poll(int lane, bool more = true) {
    bool held = false;
    while (more && in_flight[static_cast<std::size_t>(lane)] < kSlots) {
      if (!pacer.mayIssue(peer, lane, kChunk)) {
        held = true;
        break;
      }
      ++in_flight[static_cast<std::size_t>(lane)];
      queue.push_back(lane);
    }
    if (!held && (!more || in_flight[static_cast<std::size_t>(lane)] == 0)) pacer.idle(peer, lane);
  }
  void tick() {
    if (queue.empty()) return;
    --in_flight[static_cast<std::size_t>(queue.front())];
    queue.erase(queue.begin());
  }
};

// Busy lanes, polled in the order least favourable to the heavier ones, though each
// lane has as many slots as the others: once all are busy, the bytes granted from
// then on are in proportion to the shares within a chunk or two at every tick.
TEST(ChannelPacer, BusyLanesGetBytesInProportionToTheirShares) {
  ChannelPacer pacer;
  const std::vector<double> shares = {3.0, 1.0, 2.0};
  pacer.setShares(shares);
  Link link{pacer, 5, {0, 0, 0}, {}};
  // Progress of each lane in chunks per unit of share since `from`.
  auto progress = [&](const std::vector<std::size_t>& from) {
    std::vector<double> p;
    for (std::size_t lane = 0; lane < 3; ++lane) {
      p.push_back(static_cast<double>(pacer.granted(5, static_cast<int>(lane)) - from[lane]) /
                  kChunk / shares[lane]);
    }
    return p;
  };
  std::vector<std::size_t> start(3, 0);
  for (int tick = 0; tick < 600; ++tick) {
    for (int lane = 2; lane >= 0; --lane) link.poll(lane);
    link.tick();
    if (tick == 10) {
      for (int lane = 0; lane < 3; ++lane)
        start[static_cast<std::size_t>(lane)] = pacer.granted(5, lane);
    }
    if (tick <= 10) continue;
    for (double a : progress(start)) {
      for (double b : progress(start)) ASSERT_LE(a - b, 2.0 + 1e-9) << "tick " << tick;
    }
  }
  const std::vector<double> last = progress(start);
  EXPECT_NEAR(last[0] / last[1], 1.0, 0.02);
  EXPECT_NEAR(last[2] / last[1], 1.0, 0.02);
}

// A lane with nothing to queue, or nothing on the link (waiting for its receiver),
// holds nobody back; lanes to another peer are paced apart.
TEST(ChannelPacer, IdleLanesAndOtherPeersHoldNobodyBack) {
  ChannelPacer pacer;
  pacer.setShares({1.0, 1.0});
  Link link{pacer, 1, {0, 0}, {}};
  link.poll(1);
  link.poll(0, false);  // its message is queued: idle
  for (int tick = 0; tick < 8; ++tick) {
    link.tick();
    link.poll(1);
  }
  EXPECT_EQ(pacer.granted(1, 1), 12 * kChunk);
  EXPECT_TRUE(pacer.mayIssue(2, 0, kChunk));  // another peer: its own link
  // A lane stuck on its receiver (no chunk on the link) does not hold lane 1.
  ChannelPacer stuck;
  EXPECT_TRUE(stuck.mayIssue(0, 0, kChunk));
  stuck.idle(0, 0);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(stuck.mayIssue(0, 1, kChunk));
}

// A lane back from idle starts level with the busy ones: no burst of the credit it
// did not use.
TEST(ChannelPacer, ALaneBackFromIdleGetsNoBurst) {
  ChannelPacer pacer;
  pacer.setShares({1.0, 1.0});
  Link link{pacer, 0, {0, 0}, {}};
  for (int tick = 0; tick < 100; ++tick) {
    link.poll(0);
    link.tick();
  }
  const std::size_t before = pacer.granted(0, 0);
  for (int tick = 0; tick < 40; ++tick) {
    link.poll(1);
    link.poll(0);
    link.tick();
    const auto a = static_cast<double>(pacer.granted(0, 0) - before);
    const auto b = static_cast<double>(pacer.granted(0, 1));
    ASSERT_LE(b - a, (kSlots + 1.0) * kChunk) << "tick " << tick;
  }
}

// Missing or non-positive shares count as 1 (equal division).
TEST(ChannelPacer, UnknownSharesAreEqual) {
  ChannelPacer pacer;
  pacer.setShares({0.0});
  Link link{pacer, 0, {0, 0, 0, 0}, {}};
  for (int tick = 0; tick < 100; ++tick) {
    link.poll(3);
    link.poll(0);
    link.tick();
  }
  const auto a = static_cast<long>(pacer.granted(0, 3)), b = static_cast<long>(pacer.granted(0, 0));
  EXPECT_LE(std::labs(a - b), static_cast<long>(kSlots * kChunk));  // the first lane's start
}

}  // namespace
