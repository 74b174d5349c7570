// Streams between nodes paced by the plan's channel shares, over any transport.
//
// Flat tree plans across nodes put several channels on one NIC, and the simulator
// divides the NIC among them by their shares (transport.hpp); TCP under PMPI or UCX
// divides it about equally among the messages in flight. This decorator makes the
// division follow the shares: where a pair of ranks has streams on two channels or
// more, every message between them travels as pieces of at most `piece_bytes`, each
// its own message of the inner transport, and a sender hands a piece over only when
// the ChannelPacer (channel_pacer.hpp) grants it among the lanes to the peer's node
// (the link its NICs serve). One piece per lane is in flight at a time, so a lane
// that the pacer holds back waits for pieces the others have already handed over.
// Those leave without their receivers' help as long as a piece is below the inner
// transport's eager limit (Open MPI's TCP: 64 KiB with headers, hence 32 KiB by
// default; over TCP UCX sends eagerly, ucx_fabric.cpp; on InfiniBand its rendezvous
// threshold is not verified): no pacing wait can
// join a cycle of plan dependencies.
//
// Both ends of a pair split alike: a pair's channels (those of every plan run so
// far) are the same set on both (the sender's send keys to the receiver are the
// receiver's receive keys from it, made by the same collective ensureStreams calls),
// and a pair with one channel is passed through untouched, so a plan with one stream per pair of
// ranks between nodes costs nothing. Every rank must pace alike (BLINK_PACE_BETWEEN_NODES).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "transport/channel_pacer.hpp"
#include "transport/transport.hpp"

namespace blink::transport {

inline constexpr std::size_t kPacedPieceBytes = std::size_t{32} << 10;

class PacedTransport final : public Transport {
 public:
  // link_of_rank: per rank of the communicator, the link its streams share (its
  // node); piece_bytes: see the top.
  PacedTransport(std::unique_ptr<Transport> inner, std::vector<int> link_of_rank,
                 std::size_t piece_bytes = kPacedPieceBytes);
  ~PacedTransport() override;
  PacedTransport(const PacedTransport&) = delete;
  PacedTransport& operator=(const PacedTransport&) = delete;

  std::string name() const override { return inner_->name(); }
  std::string details() const override;
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) override;
  SendStream& sendStream(StreamKey key) override;
  RecvStream& recvStream(StreamKey key) override;
  void paceByShares(const std::vector<double>& shares) override;
  void settle(double timeout_seconds) override { inner_->settle(timeout_seconds); }

  const ChannelPacer& pacer() const { return pacer_; }  // for tests

 private:
  int linkOf(int peer) const;

  std::unique_ptr<Transport> inner_;
  std::vector<int> link_of_rank_;
  std::size_t piece_bytes_;
  ChannelPacer pacer_;
  std::map<int, std::set<int>> send_channels_;  // by peer
  std::map<int, std::set<int>> recv_channels_;  // by peer
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;
};

}  // namespace blink::transport
