// Streams between ranks of one node whose buffers are device memory. Every receiver
// owns, per generation of streams, one device allocation holding a FIFO of slots for
// each (sender, channel) it receives from, and a host shared-memory segment with the
// FIFOs' counters and the allocation's IPC handle; each sender opens that segment and
// the allocation once (cached per peer and generation) and copies into the slots.
//
// One device stream per stream of the plan (per peer, channel and direction), so
// the channels' copies run side by side on the copy engines. Chunk by chunk:
//   sender    copy chunk -> slot on its stream, record the slot's event; once the
//             event has passed, publish the slot as written (host counter);
//   receiver  for each written slot, queue the reduction (or copy) slot -> its
//             buffer on its stream, record the slot's event; once passed, publish
//             the slot as consumed, which lets the sender reuse it.
// Up to `slots` chunks are in flight per stream in each direction; nothing waits
// for the whole device, and the executor polls events without blocking.
//
// Host-staged pairs. At the first set-up the node's ranks agree which pairs of their
// GPUs reach each other peer to peer (Device::canAccessPeer, both ways; none with
// peer_to_peer off). For the others the sender never opens the receiver's memory
// (CUDA IPC cannot map it): the FIFO's slots lie in the receiver's control segment,
// pinned in both processes (Device::registerHost); the sender copies device -> host
// slot, the receiver host slot -> its own device slot and then reduces from there,
// both on their FIFO's stream, so the same events order the same pipeline.
//
// Pacing. Before each plan runs, the plan's channel shares are handed in
// (paceByShares); send streams ask the ChannelPacer before queuing each chunk, so
// that among the channels to one peer the busy ones queue bytes in proportion to
// their shares (channel_pacer.hpp says why it never deadlocks). What the copy engines
// then make of the queued order is the hardware's (unverified on a GPU).
//
// Not done here: streams between nodes (device buffers across nodes have no path).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/combine.hpp"
#include "transport/channel_pacer.hpp"
#include "transport/cuda/device.hpp"
#include "transport/shm/fifo_segment_transport.hpp"
#include "transport/shm/shm_segment.hpp"
#include "transport/transport.hpp"

namespace blink::transport {

// A receive stream that can also reduce on the device: dest[i] = op(first[i],
// piece[i]) chunk by chunk (first may be dest). pull() with a host sink is not
// available on device streams.
class DeviceRecvStream : public RecvStream {
 public:
  virtual bool pullReduce(std::size_t bytes, std::size_t& received, std::byte* dest,
                          const std::byte* first, Reduction reduction) = 0;
};

// What one step of a plan costs on device buffers before its bytes move: the sender's
// copy queued and its event seen to pass, the slot published through host memory, the
// receiver's reduction launched and its event seen to pass. Measured on an H200 with
// two and four ranks sharing it under MPS (2026-12-04): a two-step ring AllReduce of
// 256 KiB took 60 us, double binary trees of 4 MiB in ~100 steps 2.3 ms, so about
// 25 us per step, against the 1 us the planner charges a step between host ranks.
// The planner weighs chunks (fewer, larger ones) and algorithms with it; without it,
// it chose plans of many small chunks that ran 20x slower than a ring there.
inline constexpr double kDeviceStepOverheadUs = 25.0;

struct DeviceTransportOptions {
  std::size_t slot_bytes = 1024 * 1024;  // a multiple of 64 (so of every element size)
  std::size_t slots = 4;
  double timeout_seconds = 300.0;  // for the set-up exchange between the node's ranks
  // False: every pair is staged through pinned host memory, as if no GPU reached
  // another (BLINK_DEVICE_P2P=OFF: the staged path checked on any machine).
  bool peer_to_peer = true;
};

class DeviceTransport final : public FifoSegmentTransport {
 public:
  // `node_comm`: the ranks of this node (not owned); `node_rank_of`: for every rank
  // of the Blink communicator its rank in node_comm, or -1 when on another node.
  DeviceTransport(device::Device& device, MPI_Comm node_comm, std::vector<int> node_rank_of,
                  int my_comm_rank, DeviceTransportOptions options = {});
  ~DeviceTransport() override;
  DeviceTransport(const DeviceTransport&) = delete;
  DeviceTransport& operator=(const DeviceTransport&) = delete;

  std::string name() const override { return "cuda"; }
  void paceByShares(const std::vector<double>& shares) override;

 private:
  // Collective over node_comm_, at the first ensureStreams: which pairs of the
  // node's GPUs reach each other peer to peer (both ways).
  void learnPeerReach(int node_size);
  bool reachable(int node_rank_a, int node_rank_b) const;
  bool direct(int comm_peer) const;  // this rank's GPU and the peer's

  void prepareSetUp(int node_size) override;
  void createReceiveFifos(const std::vector<StreamKey>& new_recvs, ShmSegment& control) override;
  std::byte* adoptPeerSegment(int peer, ShmSegment control) override;
  std::unique_ptr<SendStream> makeSendStream(StreamKey key, std::byte* base,
                                             std::uint32_t index) override;
  void logNewReceiveFifos(std::size_t count) const override;

  struct PeerMapping {
    ShmSegment control;
    bool staged = false;    // its GPU is out of reach: copies go to its host slots
    void* slots = nullptr;  // else the peer's allocation, opened here
  };

  device::Device& device_;
  DeviceTransportOptions options_;
  std::vector<void*> own_slots_;  // device allocations, one per generation
  std::vector<PeerMapping> peers_;
  std::vector<char> peer_reach_;  // node_size x node_size: row r, what r's GPU reaches
  int my_node_rank_ = 0;
  int node_size_ = 0;
  std::vector<void*> registered_;  // host slots pinned for this device
  ChannelPacer pacer_;
};

}  // namespace blink::transport
