// Shared memory between the ranks of one node. Every receiver owns one segment per
// generation of streams holding a single-producer/single-consumer FIFO of slots
// for each (sender, channel) it receives from; a sender copies a message into
// slots, the receiver copies or reduces out of them, and two counters on separate
// cache lines say how many slots were written and consumed.
//
// Segments are created with mode 0600 under unguessable names and unlinked as
// soon as every peer has mapped them, so a crash leaves nothing in /dev/shm.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/transport.hpp"

namespace blink::transport {

struct ShmOptions {
  std::size_t slot_bytes = 64 * 1024;  // a multiple of 64 (so of every element size)
  std::size_t slots = 4;
  double timeout_seconds = 300.0;  // for the set-up exchange between the node's ranks
};

class ShmTransport final : public runtime::Transport {
 public:
  // `node_comm`: the ranks of this node (not owned); `node_rank_of`: for every rank
  // of the Blink communicator its rank in node_comm, or -1 when on another node.
  ShmTransport(MPI_Comm node_comm, std::vector<int> node_rank_of, int my_comm_rank,
               ShmOptions options = {});
  ~ShmTransport() override;
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  std::string name() const override { return "shm"; }
  void ensureStreams(const std::vector<runtime::StreamKey>& sends,
                     const std::vector<runtime::StreamKey>& recvs) override;
  runtime::SendStream& sendStream(runtime::StreamKey key) override;
  runtime::RecvStream& recvStream(runtime::StreamKey key) override;

  // Bytes of shared memory this rank has created (for diagnostics).
  std::size_t bytesOwned() const { return bytes_owned_; }

 private:
  struct Mapping {
    void* base = nullptr;
    std::size_t size = 0;
  };
  MPI_Comm node_comm_;
  std::vector<int> node_rank_of_;
  int my_comm_rank_;
  ShmOptions options_;
  std::vector<Mapping> mappings_;
  std::map<runtime::StreamKey, std::unique_ptr<runtime::SendStream>> sends_;
  std::map<runtime::StreamKey, std::unique_ptr<runtime::RecvStream>> recvs_;
  std::size_t bytes_owned_ = 0;
};

}  // namespace blink::transport
