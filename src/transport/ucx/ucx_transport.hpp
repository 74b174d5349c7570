// Streams between nodes over UCX (UCP), one context and worker per NIC of the node.
//
// The default between nodes where UCX is built and every rank sets it up (pmpi
// otherwise; registry.cpp); BLINK_TRANSPORT=between=pmpi chooses pmpi. Files: the
// fabric (ucx_fabric.hpp: workers, endpoints), its progress thread
// (ucx_progress_thread.hpp), the streams (ucx_streams.hpp), and this, the
// transport of one communicator (set-up, greetings, NIC choice).
//
// What UCX 1.13 over TCP (emulated hosts) taught:
// - A send completes once UCX has copied it; the bytes the socket did not take move
//   only while the SENDER's worker is progressed, and an endpoint's wire-up or
//   flush completes only once the PEER's worker answers. A rank that has returned
//   from Blink (into PMPI or user code) progressed nothing, so its peers waited for
//   it for ever: first a Reduce whose sender sat in PMPI_Reduce; then, with every
//   collective flushing its workers before it returned, the node leaders' Broadcast
//   of 32 bytes back to back across 2+2 hosts (tests/e2e/rooted_loop.c, stalled in
//   3 runs of 3): the root's flush waited for the other node's non-leader, which
//   had left for its node's board, where it waited for its leader, which waited in
//   its UCX receive for the root's next Broadcast: a cycle. Every scheme in which a
//   rank waits for a peer to answer after that peer has what it needs fails once the
//   peer leaves Blink (flushing only the endpoints sent on, synchronous sends,
//   staged acknowledged sends: branch wip-ucx17b-sync-experiment).
// - The fix: progress that does not depend on Blink being called. A progress thread
//   per process (ucx_progress_thread.hpp) progresses the workers whenever no
//   collective drives them, asleep on their event fds, so sends stay eager and
//   settle() waits for nobody: it hands the workers back to the thread.
// - Every wait progresses every NIC's worker, not only the stream's (once per pass
//   of the executor over its streams: UcxFabric::progressOncePerPass).
// - On IP interfaces sends are eager (RNDV_THRESH=inf unless UCX_RNDV_THRESH is
//   set): a rendezvous of 40 KB sometimes never completed, both sides progressing.
//
// Why the tagged API: a stream is an ordered sequence of messages from one rank to
// one peer, and the receiver always knows the size of the next one: that is exactly
// tag matching. UCP's tagged sends pick the protocol by size (eager, buffered
// copies for small pieces; zero-copy rendezvous for large ones, with UCX's own
// registration cache, so no ucp_mem_map per buffer is needed), match in order and
// complete on the receiver without it handing out remote keys. RMA (put/get) would
// need an rkey exchange per buffer and, over TCP, a target that keeps progressing
// its worker (a put can stall forever otherwise); active messages would need our
// own reassembly and ordering. A message's tag holds (communicator, channel,
// sender, sequence number), so it can only land in the step it belongs to.
//
// One set of workers per process (the "fabric"), made at the first communicator
// that spans nodes and kept until the process exits: communicators come and go
// (the interposer makes one per MPI communicator), and UCP contexts, listening
// sockets and connections are slow to make and unsafe to tear down while a peer
// may still be reading what was sent (what a destroyed communicator sent keeps
// leaving: the progress thread outlives it).
// Endpoints are kept per (NIC, peer worker), shared by communicators. The workers
// are UCS_THREAD_MODE_SERIALIZED with one mutex of the fabric around every UCP call
// (UCX's own thread-safe mode cost 20x in small-call latency); collectives of
// communicators that use ucx must still not run on several threads at once (their
// tags' sequence numbers assume one caller).
//
// NICs: each process opens one context per NIC of its node (nic_list.hpp),
// restricted to that device (UCX_NET_DEVICES). Every rank's worker addresses are
// traded over MPI when a communicator is made. The stream (sender s, channel c)
// uses, on both sides, the NIC the plan routes s's inter-node share through
// (UcxSetUp::nics_of_rank: its port's NIC, the c-th mod its ports where it has
// several); where the plan's topology does not name this machine's NICs (BLINK_TOPO),
// NIC (local rank of s + c) mod N, round robin. Indices are taken mod N, N the
// fewest NICs of any node.
//
// Failures: endpoints use UCX's peer error handling; a peer whose connection
// breaks (its process died) makes every stream to or from it throw, naming the
// rank, its host and the device. Both ends greet each other on a link's first
// use, so that a receiver too hears of a sender's death. Everything else is
// bounded by the executor's timeout. Progress is non-blocking: push/pull progress
// every NIC's worker and return.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace blink::transport {

struct UcxSetUp {
  MPI_Comm comm = MPI_COMM_NULL;     // not owned; used at set-up only
  int rank = 0;                      // in comm
  std::vector<int> local_rank_of;    // per rank of comm: its rank within its node
  std::vector<std::string> host_of;  // per rank of comm: its node's name (messages)
  double timeout_seconds = 300.0;
  std::vector<std::vector<int>> nics_of_rank;  // per rank: its ports' NICs (may be empty)
};

struct UcxLink;  // an endpoint to one peer worker on one NIC

class UcxTransport final : public Transport {
 public:
  // Collective over set_up.comm: makes (once per process) the workers, trades
  // worker addresses and connects to the ranks of other nodes; throws
  // CollectiveError on every rank when any failed.
  explicit UcxTransport(const UcxSetUp& set_up);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string name() const override { return "ucx"; }
  // "NICs eth0 (1.25 GB/s from sysfs), eth1 (...)": the NICs in use.
  std::string details() const override;
  void ensureStreams(const std::vector<StreamKey>& sends,
                     const std::vector<StreamKey>& recvs) override;
  SendStream& sendStream(StreamKey key) override;
  RecvStream& recvStream(StreamKey key) override;
  // Hands the workers back to the progress thread (see the header comment).
  void settle(double timeout_seconds) override;

  // The NIC index a stream from `sender` on `channel` uses.
  int nicFor(int sender, int channel) const;

 private:
  UcxLink& linkTo(int peer, int nic);

  UcxSetUp set_up_;
  std::uint32_t comm_id_ = 0;  // in every tag: the same on every rank of the communicator
  int nic_count_ = 1;
  std::vector<std::vector<std::string>> addresses_;  // [rank][nic]
  std::map<StreamKey, std::unique_ptr<SendStream>> sends_;
  std::map<StreamKey, std::unique_ptr<RecvStream>> recvs_;
  std::vector<std::pair<int, UcxLink*>> used_links_;  // (peer, link) of the streams
};

}  // namespace blink::transport
