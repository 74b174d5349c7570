// Point-to-point over PMPI: between nodes where UCX is not built, cannot be set up,
// or BLINK_TRANSPORT names pmpi, and for the node leaders' rounds where measured
// faster. Each (peer, channel) is an MPI tag on Blink's own duplicate of the user's
// communicator, so MPI's ordered matching keeps the plan's message order.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace blink::transport {

class PmpiTransport final : public Transport {
 public:
  explicit PmpiTransport(MPI_Comm comm);  // not owned
  ~PmpiTransport() override;
  PmpiTransport(const PmpiTransport&) = delete;
  PmpiTransport& operator=(const PmpiTransport&) = delete;

  std::string name() const override { return "pmpi"; }
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) override;
  SendStream& sendStream(StreamKey key) override;
  RecvStream& recvStream(StreamKey key) override;
  bool movesAllAtOnce(std::size_t largest_bytes) const override;
  // Every message its own request, all polled with one MPI_Testsome per round of the
  // wait (one progress of Open MPI, as its own MPI_Waitall), straight into the
  // receivers' buffers.
  int moveAllAtOnce(const WholeMessage* messages, int count, Backoff& backoff) override;

 private:
  MPI_Comm comm_;
  int tag_ub_ = 32767;
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;
  // moveAllAtOnce's requests and completions, kept to avoid allocating per call.
  std::vector<MPI_Request> batch_;
  std::vector<int> indices_;
};

}  // namespace blink::transport
