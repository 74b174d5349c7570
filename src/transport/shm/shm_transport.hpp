// Shared memory between the ranks of one node. Every receiver owns one segment per
// generation of streams holding a single-producer/single-consumer FIFO of slots
// for each (sender, channel) it receives from; a sender copies a message into
// slots, the receiver copies or reduces out of them, and two counters on separate
// cache lines say how many slots were written and consumed.
//
// Segments are created with mode 0600 under unguessable names and unlinked as
// soon as every peer has mapped them, so a crash after set-up leaves nothing in
// /dev/shm (ShmSegment sweeps a name left by one during set-up).
//
// Single copy. A message of at least ShmOptions::single_copy_min_bytes takes one
// slot for a descriptor (its address in the sender) and the receiver reads it
// straight from the sender's memory with Linux cross-memory attach
// (process_vm_readv), in pieces of slot_bytes * slots, into its destination or a
// piece buffer it reduces from; the sender's push completes when the receiver has
// consumed the descriptor slot, i.e. read every byte. That is one copy per hop
// instead of two. The minimum is larger than the FIFO, so only messages that could
// not fit in it anyway take this path: it makes no sender wait for its receiver
// that the slot path would not. The read costs more CPU per byte than a copy into a
// cache-hot slot, so it pays only where every rank has a core of its own (measured
// in perf/README.md): SingleCopyMode::Automatic uses it when the node's ranks do not
// outnumber its online CPUs. Either way every rank of the node must be able to read
// every other's memory (probed at the first ensureStreams: ptrace rules or seccomp
// may forbid it), and all of the node's ranks agree.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/shm/fifo_segment_transport.hpp"
#include "transport/shm/shm_segment.hpp"
#include "transport/transport.hpp"

namespace blink::transport {

enum class SingleCopyMode { Off, Automatic, On };

struct ShmOptions {
  std::size_t slot_bytes = 64 * 1024;  // a multiple of 64 (so of every element size)
  std::size_t slots = 4;
  double timeout_seconds = 300.0;  // for the set-up exchange between the node's ranks
  SingleCopyMode single_copy = SingleCopyMode::Automatic;  // BLINK_SHM_SINGLE_COPY
  std::size_t single_copy_min_bytes = 1024 * 1024;         // more than slots * slot_bytes
};

// What the streams of one transport share about the single-copy path.
struct SingleCopyState {
  bool enabled = false;                 // agreed by every rank of the node
  std::size_t min_bytes = 0;            // messages of at least this size use it
  std::vector<long> pid_of_rank;        // per rank of the Blink communicator (0: elsewhere)
  std::vector<std::byte> piece_buffer;  // the executor drives one transport from one thread

  // Whether a message of `bytes` goes by single copy (both ends decide alike).
  bool takes(std::size_t bytes) const { return enabled && bytes >= min_bytes; }
};

class ShmTransport final : public FifoSegmentTransport {
 public:
  // `node_comm`: the ranks of this node (not owned); `node_rank_of`: for every rank
  // of the Blink communicator its rank in node_comm, or -1 when on another node.
  ShmTransport(MPI_Comm node_comm, std::vector<int> node_rank_of, int my_comm_rank,
               ShmOptions options = {});
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  std::string name() const override { return "shm"; }

  // Bytes of shared memory this rank has created (for diagnostics).
  std::size_t bytesOwned() const { return bytes_owned_; }
  // True once the node's ranks agreed to read large messages from each other's memory.
  bool singleCopy() const { return single_copy_->enabled; }

 private:
  void probeSingleCopy();  // collective over node_comm_, at the first ensureStreams

  // The segment of a receiver: its header and entries, then per FIFO (at the
  // entry's offset) its counters followed by its slots.
  void prepareSetUp(int node_size) override;
  void createReceiveFifos(const std::vector<StreamKey>& new_recvs, ShmSegment& segment) override;
  std::byte* adoptPeerSegment(int peer, ShmSegment segment) override;
  std::unique_ptr<SendStream> makeSendStream(StreamKey key, std::byte* base,
                                             std::uint32_t index) override;
  void logNewReceiveFifos(std::size_t count) const override;

  ShmOptions options_;
  std::vector<ShmSegment> peer_segments_;  // the peers' segments this rank sends into
  bool probed_ = false;
  // What every peer reads back from this process to prove cross-memory attach works.
  std::uint64_t probe_word_;
  std::unique_ptr<SingleCopyState> single_copy_;  // the streams refer to it
  std::size_t bytes_owned_ = 0;
};

}  // namespace blink::transport
