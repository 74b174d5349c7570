// The pacing of streams between nodes (transport/paced_transport.hpp) over a
// model of an eager transport: a piece handed over leaves on a FIFO link, one per
// tick, whether or not its receiver is pulling. Counted exactly: the bytes granted
// per lane, the messages the inner transport carries, the bytes delivered.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "transport/paced_transport.hpp"

namespace {

using blink::transport::PacedTransport;
using blink::transport::PieceSink;
using blink::transport::RecvStream;
using blink::transport::SendStream;
using blink::transport::StreamKey;
using blink::transport::Transport;

constexpr std::size_t kPiece = 1024;

// The network: messages handed over wait on one link in order and leave one per
// tick into their receiver's queue (eager: no receiver needed).
struct Wire {
  using Pair = std::tuple<int, int, int>;  // from, to, channel
  std::deque<std::pair<Pair, std::vector<std::byte>>> on_link;
  std::map<Pair, std::deque<std::vector<std::byte>>> arrived;
  std::size_t handed = 0, left = 0;  // messages, in order
  std::vector<std::size_t> sizes;    // of every message handed over

  std::size_t hand(Pair pair, const std::byte* data, std::size_t bytes) {
    on_link.emplace_back(pair, std::vector<std::byte>(data, data + bytes));
    sizes.push_back(bytes);
    return handed++;
  }
  void tick() {
    if (on_link.empty()) return;
    arrived[on_link.front().first].push_back(std::move(on_link.front().second));
    on_link.pop_front();
    ++left;
  }
};

class WireSend final : public SendStream {
 public:
  WireSend(Wire& wire, Wire::Pair pair) : wire_(wire), pair_(pair) {}
  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    if (sent >= bytes) return true;
    if (!in_flight_) {
      id_ = wire_.hand(pair_, data, bytes);
      in_flight_ = true;
    }
    if (id_ >= wire_.left) return false;
    in_flight_ = false;
    sent = bytes;
    return true;
  }

 private:
  Wire& wire_;
  Wire::Pair pair_;
  bool in_flight_ = false;
  std::size_t id_ = 0;
};

class WireRecv final : public RecvStream {
 public:
  WireRecv(Wire& wire, Wire::Pair pair) : wire_(wire), pair_(pair) {}
  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override {
    if (received >= bytes) return true;
    auto& queue = wire_.arrived[pair_];
    if (queue.empty()) return false;
    // Each message must be pulled with its own size, as MPI matches them.
    EXPECT_EQ(queue.front().size(), bytes - received);
    sink(received, queue.front().data(), queue.front().size());
    received += queue.front().size();
    queue.pop_front();
    return received >= bytes;
  }

 private:
  Wire& wire_;
  Wire::Pair pair_;
};

class WireTransport final : public Transport {
 public:
  WireTransport(Wire& wire, int rank) : wire_(wire), rank_(rank) {}
  std::string name() const override { return "wire"; }
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) override {
    for (const StreamKey& k : sends) {
      sends_.try_emplace(k,
                         std::make_unique<WireSend>(wire_, Wire::Pair{rank_, k.peer, k.channel}));
    }
    for (const StreamKey& k : recvs) {
      recvs_.try_emplace(k,
                         std::make_unique<WireRecv>(wire_, Wire::Pair{k.peer, rank_, k.channel}));
    }
  }
  SendStream& sendStream(StreamKey key) override { return *sends_.at(key); }
  RecvStream& recvStream(StreamKey key) override { return *recvs_.at(key); }

 private:
  Wire& wire_;
  int rank_;
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;
};

// Ranks 0 and 1 on node 0, ranks 2 and 3 on node 1.
std::unique_ptr<PacedTransport> pacedRank(Wire& wire, int rank) {
  return std::make_unique<PacedTransport>(std::make_unique<WireTransport>(wire, rank),
                                          std::vector<int>{0, 0, 1, 1}, kPiece);
}

std::vector<std::byte> pattern(std::size_t bytes, int seed) {
  std::vector<std::byte> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return out;
}

// One message per lane from rank 0, received by its peer in place.
struct Message {
  StreamKey to;    // of rank 0's send
  StreamKey from;  // of the receiver's receive
  Transport* receiver;
  std::vector<std::byte> data, got;
  std::size_t sent = 0, received = 0;
  bool pushed = false, pulled = false;
};

void pushAll(Transport& sender, std::vector<Message>& messages, bool reverse) {
  for (std::size_t k = 0; k < messages.size(); ++k) {
    Message& m = messages[reverse ? messages.size() - 1 - k : k];
    if (!m.pushed) m.pushed = sender.sendStream(m.to).push(m.data.data(), m.data.size(), m.sent);
  }
}

void pull(Message& m) {
  if (!m.pulled)
    m.pulled = m.receiver->recvStream(m.from).pullTo(m.got.size(), m.received, m.got.data());
}

// Three channels from rank 0 to ranks 2 and 3 (one link: node 1), shares 3 : 1 : 2,
// polled in the order least favourable to the heavy ones: while all are busy, the
// bytes granted per unit of share differ by at most one piece at every tick, and
// every message arrives whole.
TEST(PacedTransport, BusyLanesGetBytesInProportionToTheirShares) {
  Wire wire;
  auto sender = pacedRank(wire, 0), to2 = pacedRank(wire, 2), to3 = pacedRank(wire, 3);
  // Two channels on each pair, so both pairs are paced.
  sender->ensureStreams({{2, 0}, {2, 1}, {3, 2}, {3, 0}}, {});
  to2->ensureStreams({}, {{0, 0}, {0, 1}});
  to3->ensureStreams({}, {{0, 2}, {0, 0}});
  const std::vector<double> shares = {3.0, 1.0, 2.0};
  for (Transport* t : {static_cast<Transport*>(sender.get()), static_cast<Transport*>(to2.get()),
                       static_cast<Transport*>(to3.get())}) {
    t->paceByShares(shares);
  }
  const std::size_t bytes = 300 * kPiece + 17;
  std::vector<Message> messages;
  messages.push_back({{2, 0}, {0, 0}, to2.get(), pattern(bytes, 1), std::vector<std::byte>(bytes)});
  messages.push_back({{2, 1}, {0, 1}, to2.get(), pattern(bytes, 2), std::vector<std::byte>(bytes)});
  messages.push_back({{3, 2}, {0, 2}, to3.get(), pattern(bytes, 3), std::vector<std::byte>(bytes)});
  auto finish = [&](std::size_t m) {
    const StreamKey lane = messages[m].to;
    return static_cast<double>(sender->pacer().granted(1, lane)) /
           shares[static_cast<std::size_t>(lane.channel)];
  };
  for (int tick = 0; tick < 4000; ++tick) {
    pushAll(*sender, messages, true);
    wire.tick();
    for (Message& m : messages) pull(m);
    bool all_busy = true;
    for (const Message& m : messages) all_busy = all_busy && !m.pushed;
    if (!all_busy) continue;
    for (std::size_t a = 0; a < 3; ++a) {
      for (std::size_t b = 0; b < 3; ++b) {
        ASSERT_LE(finish(a) - finish(b), static_cast<double>(kPiece) / 1.0 + 1e-9)
            << "tick " << tick;
      }
    }
  }
  for (const Message& m : messages) {
    ASSERT_TRUE(m.pushed && m.pulled);
    EXPECT_EQ(m.got, m.data);
  }
  // Pieces of kPiece, the last shorter; never a whole message at once.
  for (std::size_t size : wire.sizes) EXPECT_LE(size, kPiece);
  // The lighter lane (share 1) finished last: while busy it got a third of lane 0's.
  EXPECT_EQ(sender->pacer().granted(1, StreamKey{2, 1}), bytes);
}

// A receiver that does not pull holds nobody back: rank 0's pieces to it leave
// anyway (eager), and the other lane's message arrives whole; the slow one's
// arrives when it pulls.
TEST(PacedTransport, ASlowReceiverDeadlocksNothing) {
  Wire wire;
  auto sender = pacedRank(wire, 0), receiver = pacedRank(wire, 2);
  sender->ensureStreams({{2, 0}, {2, 1}}, {});
  receiver->ensureStreams({}, {{0, 0}, {0, 1}});
  sender->paceByShares({1.0, 1.0});
  receiver->paceByShares({1.0, 1.0});
  const std::size_t bytes = 40 * kPiece;
  std::vector<Message> messages;
  messages.push_back(
      {{2, 0}, {0, 0}, receiver.get(), pattern(bytes, 4), std::vector<std::byte>(bytes)});
  messages.push_back(
      {{2, 1}, {0, 1}, receiver.get(), pattern(bytes, 5), std::vector<std::byte>(bytes)});
  int ticks = 0;
  for (; ticks < 1000 && !(messages[0].pushed && messages[1].pulled); ++ticks) {
    pushAll(*sender, messages, false);
    wire.tick();
    pull(messages[1]);  // channel 0's receiver is busy elsewhere
  }
  EXPECT_LE(ticks, 2 * 40 + 2);  // one piece per tick, nobody waiting on the slow one
  ASSERT_TRUE(messages[1].pulled);
  EXPECT_EQ(messages[1].got, messages[1].data);
  ASSERT_FALSE(messages[0].pulled);
  pull(messages[0]);
  ASSERT_TRUE(messages[0].pulled);
  EXPECT_EQ(messages[0].got, messages[0].data);
}

// A pair of ranks with one channel is passed through: one message of the inner
// transport per message, nothing asked of the pacer. A lane whose message is done
// holds the others back no more.
TEST(PacedTransport, OneChannelPerPairIsNotPaced) {
  Wire wire;
  auto sender = pacedRank(wire, 0), receiver = pacedRank(wire, 3);
  sender->ensureStreams({{3, 5}}, {});
  receiver->ensureStreams({}, {{0, 5}});
  sender->paceByShares({});
  const std::size_t bytes = 10 * kPiece + 3;
  std::vector<Message> messages;
  messages.push_back(
      {{3, 5}, {0, 5}, receiver.get(), pattern(bytes, 6), std::vector<std::byte>(bytes)});
  for (int tick = 0; tick < 4 && !messages[0].pulled; ++tick) {
    pushAll(*sender, messages, false);
    wire.tick();
    pull(messages[0]);
  }
  ASSERT_TRUE(messages[0].pulled);
  EXPECT_EQ(messages[0].got, messages[0].data);
  EXPECT_EQ(wire.sizes, std::vector<std::size_t>{bytes});
  EXPECT_EQ(sender->pacer().granted(1, StreamKey{3, 5}), 0u);
}

TEST(PacedTransport, AFinishedLaneHoldsNobodyBack) {
  Wire wire;
  auto sender = pacedRank(wire, 1), receiver = pacedRank(wire, 2);
  sender->ensureStreams({{2, 0}, {2, 1}}, {});
  receiver->ensureStreams({}, {{1, 0}, {1, 1}});
  sender->paceByShares({1.0, 1.0});
  std::vector<std::byte> short_one = pattern(2 * kPiece, 7), long_one = pattern(30 * kPiece, 8);
  std::size_t short_sent = 0, long_sent = 0;
  bool short_done = false, long_done = false;
  int ticks = 0;
  for (; ticks < 1000 && !long_done; ++ticks) {
    if (!short_done)
      short_done = sender->sendStream({2, 0}).push(short_one.data(), short_one.size(), short_sent);
    long_done = sender->sendStream({2, 1}).push(long_one.data(), long_one.size(), long_sent);
    wire.tick();
  }
  EXPECT_TRUE(short_done);
  // One piece left at every tick (the link never idled), and one more tick told
  // the sender that the last had left.
  EXPECT_EQ(wire.left, 2u + 30u);
  EXPECT_EQ(ticks, 2 + 30 + 1);
}

}  // namespace
