#include "transport/shm/fifo_segment_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/error.hpp"
#include "common/mpi_wait.hpp"
#include "transport/shm/node_segment.hpp"

namespace blink::transport {
namespace {

constexpr std::size_t kNameBytes = ShmSegment::kMaxNameBytes;

// The keys of `wanted` that `existing` lacks, each once, in their order.
template <typename Streams>
std::vector<StreamKey> newKeys(const std::vector<StreamKey>& wanted, const Streams& existing) {
  std::vector<StreamKey> added;
  for (const StreamKey& k : wanted) {
    if (!existing.count(k) && std::find(added.begin(), added.end(), k) == added.end())
      added.push_back(k);
  }
  return added;
}

}  // namespace

FifoSegmentTransport::FifoSegmentTransport(MPI_Comm node_comm, std::vector<int> node_rank_of,
                                           int my_comm_rank, double timeout_seconds,
                                           std::string what, std::uint64_t magic)
    : node_comm_(node_comm),
      node_rank_of_(std::move(node_rank_of)),
      my_comm_rank_(my_comm_rank),
      timeout_seconds_(timeout_seconds),
      what_(std::move(what)),
      magic_(magic) {}

void FifoSegmentTransport::ensureStreams(const std::vector<StreamKey>& sends,
                                         const std::vector<StreamKey>& recvs) {
  const std::vector<StreamKey> new_recvs = newKeys(recvs, recvs_);
  const std::vector<StreamKey> new_sends = newKeys(sends, sends_);
  int node_size = 0;
  checkSetUpCall(PMPI_Comm_size(node_comm_, &node_size), what_, "MPI_Comm_size");
  prepareSetUp(node_size);

  // 1. Each receiver with new streams creates one segment for them.
  char my_name[kNameBytes] = {};
  std::string failure;
  ShmSegment created;
  if (!new_recvs.empty()) {
    try {
      createReceiveFifos(new_recvs, created);
      auto* header = reinterpret_cast<FifoSegmentHeader*>(created.data());
      std::atomic_ref(header->magic).store(magic_, std::memory_order_release);
      std::memcpy(my_name, created.name().c_str(), created.name().size() + 1);
    } catch (const Error& e) {
      failure = e.what();
      my_name[0] = '!';
    }
  }

  // 2. Everyone learns every segment name; senders map the segments they write to.
  std::vector<char> names(static_cast<std::size_t>(node_size) * kNameBytes);
  allgatherWithin(my_name, static_cast<int>(kNameBytes), MPI_CHAR, names.data(), node_comm_,
                  timeout_seconds_, what_ + ": exchanging segment names");
  bool peer_failed = false;
  for (int r = 0; r < node_size; ++r)
    peer_failed |= names[static_cast<std::size_t>(r) * kNameBytes] == '!';
  if (failure.empty() && !peer_failed) {
    try {
      openSendFifos(new_sends, names);
    } catch (const Error& e) {
      failure = e.what();
    }
  }

  // 3. Once every sender has mapped, the names are no longer needed.
  const bool all_ok = everyRankOk(failure.empty(), node_comm_, timeout_seconds_,
                                  what_ + ": confirming the mappings");
  created.unlink();
  if (created.data() != nullptr) own_segments_.push_back(std::move(created));
  if (!failure.empty()) throw Error(blinkSystemError, failure);  // each names what_
  if (peer_failed || !all_ok) {
    throw Error(blinkSystemError, what_ +
                                      ": another rank of this node could not set up its "
                                      "streams (see its error)");
  }
  if (!new_recvs.empty()) logNewReceiveFifos(new_recvs.size());
}

void FifoSegmentTransport::openSendFifos(const std::vector<StreamKey>& new_sends,
                                         const std::vector<char>& names) {
  std::vector<int> peers;
  for (const StreamKey& k : new_sends) {
    if (std::find(peers.begin(), peers.end(), k.peer) == peers.end()) peers.push_back(k.peer);
  }
  for (int peer : peers) {
    const int node_rank = node_rank_of_.at(static_cast<std::size_t>(peer));
    const char* name =
        node_rank < 0 ? nullptr : &names[static_cast<std::size_t>(node_rank) * kNameBytes];
    if (name == nullptr || name[0] == '\0') {
      throw Error(blinkInternalError, what_ + ": rank " + std::to_string(peer) +
                                          " made no new streams (plans differ?)");
    }
    ShmSegment segment = ShmSegment::open(name);
    auto* header = reinterpret_cast<FifoSegmentHeader*>(segment.data());
    if (std::atomic_ref(header->magic).load(std::memory_order_acquire) != magic_) {
      throw Error(blinkInternalError, what_ + ": a peer's segment is not initialised");
    }
    std::byte* base = adoptPeerSegment(peer, std::move(segment));  // the mapping stays
    const auto* entries = reinterpret_cast<const FifoSegmentEntry*>(header + 1);
    // Every new send to this peer whose FIFO lives in this segment.
    for (const StreamKey& s : new_sends) {
      if (s.peer != peer || sends_.count(s)) continue;
      for (std::uint32_t i = 0; i < header->fifo_count; ++i) {
        if (entries[i].sender == my_comm_rank_ && entries[i].channel == s.channel) {
          sends_[s] = makeSendStream(s, base, i);
        }
      }
      if (!sends_.count(s)) {
        throw Error(blinkInternalError, what_ + ": rank " + std::to_string(s.peer) +
                                            " has no stream from this rank on channel " +
                                            std::to_string(s.channel) + " (plans differ?)");
      }
    }
  }
}

SendStream& FifoSegmentTransport::sendStream(StreamKey key) {
  auto it = sends_.find(key);
  if (it == sends_.end()) {
    throw Error(blinkInternalError, what_ + ": no send stream to rank " + std::to_string(key.peer) +
                                        " channel " + std::to_string(key.channel));
  }
  return *it->second;
}

RecvStream& FifoSegmentTransport::recvStream(StreamKey key) {
  auto it = recvs_.find(key);
  if (it == recvs_.end()) {
    throw Error(blinkInternalError, what_ + ": no receive stream from rank " +
                                        std::to_string(key.peer) + " channel " +
                                        std::to_string(key.channel));
  }
  return *it->second;
}

}  // namespace blink::transport
