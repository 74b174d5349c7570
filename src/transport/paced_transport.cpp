#include "transport/paced_transport.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace blink::transport {
namespace {

// A pair is paced where it has streams on two channels or more (paced_transport.hpp).
bool paced(const std::set<int>& channels_of_pair) {
  return channels_of_pair.size() > 1;
}

class PacedSendStream final : public SendStream {
 public:
  PacedSendStream(SendStream& inner, ChannelPacer& pacer, int link, StreamKey key,
                  const std::set<int>& channels_of_pair, std::size_t piece_bytes)
      : inner_(inner),
        pacer_(pacer),
        link_(link),
        key_(key),
        channels_of_pair_(channels_of_pair),
        piece_bytes_(piece_bytes) {}

  bool push(const std::byte* data, std::size_t bytes, std::size_t& sent) override {
    if (!paced(channels_of_pair_)) return inner_.push(data, bytes, sent);
    while (sent < bytes) {
      if (piece_ == 0) {
        const std::size_t n = std::min(piece_bytes_, bytes - sent);
        if (!pacer_.mayIssue(link_, key_, n)) return false;  // held: it keeps asking
        piece_ = n;
      }
      // The lane stays busy (holding lighter lanes back) while its piece is in flight.
      if (!inner_.push(data + sent, piece_, piece_sent_)) return false;
      sent += piece_;
      piece_ = piece_sent_ = 0;
    }
    pacer_.idle(link_, key_);  // nothing more to hand over until the next message
    return true;
  }

 private:
  SendStream& inner_;
  ChannelPacer& pacer_;
  int link_;
  StreamKey key_;
  const std::set<int>& channels_of_pair_;
  std::size_t piece_bytes_;
  std::size_t piece_ = 0;       // bytes of the piece in flight (0: none)
  std::size_t piece_sent_ = 0;  // of it, taken by the inner stream
};

class PacedRecvStream final : public RecvStream {
 public:
  PacedRecvStream(RecvStream& inner, const std::set<int>& channels_of_pair, std::size_t piece_bytes)
      : inner_(inner), channels_of_pair_(channels_of_pair), piece_bytes_(piece_bytes) {}

  bool pull(std::size_t bytes, std::size_t& received, const PieceSink& sink) override {
    return pieceByPiece(bytes, received, [&](std::size_t base, std::size_t n, std::size_t& got) {
      return inner_.pull(n, got, [&](std::size_t at, const std::byte* piece, std::size_t len) {
        sink(base + at, piece, len);
      });
    });
  }
  bool pullTo(std::size_t bytes, std::size_t& received, std::byte* dest) override {
    return pieceByPiece(bytes, received, [&](std::size_t base, std::size_t n, std::size_t& got) {
      return inner_.pullTo(n, got, dest + base);
    });
  }

 private:
  // The message as the sender split it: pieces of piece_bytes_ (the last shorter).
  template <typename PullPiece>
  bool pieceByPiece(std::size_t bytes, std::size_t& received, PullPiece&& pull_piece) {
    if (!paced(channels_of_pair_)) return pull_piece(0, bytes, received);
    while (received < bytes) {
      const std::size_t base = received - piece_received_;
      const std::size_t n = std::min(piece_bytes_, bytes - base);
      const bool whole = pull_piece(base, n, piece_received_);
      received = base + piece_received_;
      if (!whole) return false;
      piece_received_ = 0;
    }
    return true;
  }

  RecvStream& inner_;
  const std::set<int>& channels_of_pair_;
  std::size_t piece_bytes_;
  std::size_t piece_received_ = 0;  // of the current piece
};

}  // namespace

PacedTransport::PacedTransport(std::unique_ptr<Transport> inner, std::vector<int> link_of_rank,
                               std::size_t piece_bytes)
    : inner_(std::move(inner)), link_of_rank_(std::move(link_of_rank)), piece_bytes_(piece_bytes) {
  if (piece_bytes_ == 0) throw Error(blinkInternalError, "paced transport: pieces of 0 bytes");
}

PacedTransport::~PacedTransport() = default;

std::string PacedTransport::details() const {
  const std::string inner = inner_->details();
  return (inner.empty() ? "" : inner + "; ") + "paced by the plan's channel shares in pieces of " +
         std::to_string(piece_bytes_ >> 10) + " KiB where a pair of ranks has several channels";
}

int PacedTransport::linkOf(int peer) const {
  if (peer < 0 || static_cast<std::size_t>(peer) >= link_of_rank_.size()) return peer;
  return link_of_rank_[static_cast<std::size_t>(peer)];
}

void PacedTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                   const std::vector<StreamKey>& recvs) {
  inner_->ensureStreams(sends, recvs);
  for (const StreamKey& k : sends) {
    std::set<int>& channels = send_channels_[k.peer];
    channels.insert(k.channel);
    if (sends_.count(k) == 0) {
      sends_[k] = std::make_unique<PacedSendStream>(inner_->sendStream(k), pacer_, linkOf(k.peer),
                                                    k, channels, piece_bytes_);
    }
  }
  for (const StreamKey& k : recvs) {
    std::set<int>& channels = recv_channels_[k.peer];
    channels.insert(k.channel);
    if (recvs_.count(k) == 0) {
      recvs_[k] = std::make_unique<PacedRecvStream>(inner_->recvStream(k), channels, piece_bytes_);
    }
  }
}

SendStream& PacedTransport::sendStream(StreamKey key) {
  auto it = sends_.find(key);
  if (it == sends_.end()) throw Error(blinkInternalError, "paced transport: no such send stream");
  return *it->second;
}

RecvStream& PacedTransport::recvStream(StreamKey key) {
  auto it = recvs_.find(key);
  if (it == recvs_.end()) {
    throw Error(blinkInternalError, "paced transport: no such receive stream");
  }
  return *it->second;
}

void PacedTransport::paceByShares(const std::vector<double>& shares) {
  pacer_.setShares(shares);
  inner_->paceByShares(shares);
}

}  // namespace blink::transport
