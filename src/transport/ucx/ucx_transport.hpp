// Streams between nodes over UCX (UCP), one context and worker per NIC of the node.
//
// Why the tagged API: a stream is an ordered sequence of messages from one rank to
// one peer, and the receiver always knows the size of the next one: that is exactly
// tag matching. UCP's tagged sends pick the protocol by size (eager, buffered
// copies for small pieces; zero-copy rendezvous for large ones, with UCX's own
// registration cache, so no ucp_mem_map per buffer is needed), match in order and
// complete on the receiver without it handing out remote keys. RMA (put/get) would
// need an rkey exchange per buffer and, over TCP, a target that keeps progressing
// its worker (a put can stall forever otherwise); active messages would need our
// own reassembly and ordering. Each message's tag holds (channel, sender, sequence
// number), so a message can only land in the step it belongs to.
//
// NICs: each rank opens one context per NIC of its node (nic_list.hpp), restricted
// to that device (UCX_NET_DEVICES), and exchanges every worker's address with every
// rank over MPI when the transport is made. The stream (sender s, channel c) uses
// NIC (local rank of s + c) mod N on both sides, N the smallest NIC count of any
// node: a node's ranks and a plan's channels (trees) spread over all its NICs,
// round robin (the ranks of a host have no NIC nearer than another here).
//
// Failures: endpoints use UCX's peer error handling; a peer whose connection
// breaks (its process died) makes every stream to or from it throw at once,
// naming the rank, its host and the device. Every rank opens its endpoint to each
// peer it exchanges streams with and says hello on it when the streams are made,
// so a receiver also learns of a sender's death. Everything else is bounded by the
// executor's timeout. Progress is non-blocking: push/pull progress the worker of
// their NIC and return.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.hpp"
#include "transport/ucx/nic_list.hpp"

namespace blink::transport {

struct UcxSetUp {
  MPI_Comm comm = MPI_COMM_NULL;     // not owned; used at set-up only
  int rank = 0;                      // in comm
  std::vector<int> local_rank_of;    // per rank of comm: its rank within its node
  std::vector<std::string> host_of;  // per rank of comm: its node's name (messages)
  double timeout_seconds = 300.0;
};

class UcxTransport final : public Transport {
 public:
  // Collective over set_up.comm: every rank makes its contexts, then all trade
  // worker addresses; throws CollectiveError on every rank when any failed.
  explicit UcxTransport(const UcxSetUp& set_up);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string name() const override { return "ucx"; }
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) override;
  SendStream& sendStream(StreamKey key) override;
  RecvStream& recvStream(StreamKey key) override;

  // "NICs eth0 (1.25 GB/s from sysfs), eth1 (...)": the NICs in use.
  std::string details() const override;
  // The NIC index a stream from `sender` on `channel` uses.
  int nicFor(int sender, int channel) const;

  struct Worker;
  struct Link;

 private:
  Link& linkTo(int peer, int nic);

  UcxSetUp set_up_;
  std::vector<Nic> nics_;  // the first nic_count_ are used
  int nic_count_ = 1;
  std::vector<std::unique_ptr<Worker>> workers_;                // one per NIC in use
  std::vector<std::vector<std::vector<char>>> addresses_;       // [rank][nic]
  std::map<std::pair<int, int>, std::unique_ptr<Link>> links_;  // (peer, nic)
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;
};

}  // namespace blink::transport
