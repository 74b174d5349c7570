// The set-up protocol that the shared-memory and the device transports share. Every
// receiver publishes, per generation of streams, one shared-memory segment that starts
// with a FifoSegmentHeader and one FifoSegmentEntry per (sender, channel) it receives
// from; what else lies in it (slots, counters, a device allocation's handle) is the
// subclass's. ensureStreams, collective over the node's ranks:
//   1. each rank with new receive streams creates its segment and their streams
//      (createReceiveFifos), then marks the segment initialised with the magic number;
//   2. every rank learns every segment's name ('!' from a rank that failed); each
//      sender maps the segment of every peer it has new streams to (adoptPeerSegment)
//      and makes a send stream for each entry there that names it (makeSendStream);
//   3. once every rank has confirmed, the names are unlinked (a crash after set-up
//      leaves nothing in /dev/shm), and a failure anywhere is thrown on every rank.
// One place for the protocol, so that both transports agree on what a set-up means
// and fail alike when plans differ.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/shm/shm_segment.hpp"
#include "transport/transport.hpp"

namespace blink::transport {

// The producer's and the consumer's counters of one FIFO, on cache lines of their
// own so that the producer's writes do not evict the consumer's line and vice versa.
struct alignas(64) FifoCounters {
  std::uint64_t written;
  char pad0[56];
  std::uint64_t consumed;
  char pad1[56];
};
static_assert(sizeof(FifoCounters) == 128);

struct FifoSegmentHeader {
  std::uint64_t magic;  // stored last (release): the segment is initialised
  std::uint32_t fifo_count;
  std::uint32_t slots;
  std::uint64_t slot_bytes;
};

// Follows the header (or the subclass's header, which starts with one), one per FIFO.
struct FifoSegmentEntry {
  std::int32_t sender;  // comm rank
  std::int32_t channel;
  std::uint64_t offset;  // of this FIFO's part of the segment; the subclass says which part
};

class FifoSegmentTransport : public Transport {
 public:
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) final;
  SendStream& sendStream(StreamKey key) final;
  RecvStream& recvStream(StreamKey key) final;

 protected:
  // `node_comm`: the ranks of this node (not owned); `node_rank_of`: for every rank
  // of the Blink communicator its rank in node_comm, or -1 when on another node.
  // `what` begins every error message ("shared memory"); `magic` tells this
  // transport's initialised segments.
  FifoSegmentTransport(MPI_Comm node_comm, std::vector<int> node_rank_of, int my_comm_rank,
                       double timeout_seconds, std::string what, std::uint64_t magic);

  // Collective over node_comm_ at the start of every set-up (probes, agreements).
  virtual void prepareSetUp(int node_size) = 0;
  // Step 1: creates `segment` for `new_recvs` (header but its magic, entries and the
  // rest) and their receive streams in recvs_. Throws blink::Error; what it put in
  // `segment` is kept either way.
  virtual void createReceiveFifos(const std::vector<StreamKey>& new_recvs, ShmSegment& segment) = 0;
  // Step 2: keeps `segment`, the initialised segment of `peer`, for as long as the
  // transport, prepares to write into it, and returns its base. Throws blink::Error.
  virtual std::byte* adoptPeerSegment(int peer, ShmSegment segment) = 0;
  // Step 2: the stream for `key` into FIFO `index` of the segment adopted last
  // (at `base`). Throws blink::Error.
  virtual std::unique_ptr<SendStream> makeSendStream(StreamKey key, std::byte* base,
                                                     std::uint32_t index) = 0;
  // After a set-up that made `count` > 0 receive FIFOs (in own_segments_.back()).
  virtual void logNewReceiveFifos(std::size_t count) const = 0;

  MPI_Comm node_comm_;
  std::vector<int> node_rank_of_;
  int my_comm_rank_;
  std::vector<ShmSegment> own_segments_;  // the receive FIFOs of this rank
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;

 private:
  // Step 2 at a sender: maps every peer's segment and makes the new send streams.
  void openSendFifos(const std::vector<StreamKey>& new_sends, const std::vector<char>& names);

  double timeout_seconds_;
  std::string what_;
  std::uint64_t magic_;
};

}  // namespace blink::transport
