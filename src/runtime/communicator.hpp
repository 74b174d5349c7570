// A Blink communicator over the ranks of an MPI communicator. Bootstrap uses only
// PMPI_* (the interposer sits on top of it): a private duplicate of the MPI
// communicator for Blink's traffic, the rank layout (nodes, local ranks), the
// topology (job_topology.hpp) and the transports the registry picks for streams
// within and between nodes (transport/registry.hpp).
//
// How each call runs is decided in one place, chooseAlgorithm (algorithm_choice.hpp):
// the node algorithms (the one-shot board, the direct path) and the planner's plans
// are all candidates with a predicted time; the fastest wins, or BLINK_ALGO's.
// Each (collective, size in bytes, element size, root) is decided once, on every
// rank alike (the choice is deterministic), checked across ranks by a hash, and
// cached with what it needs (a compiled plan and its streams, or the board or the
// direct path, set up at their first use).
//
// Device buffers. Where every rank has a device (runtime/process_device.hpp:
// BLINK_DEVICE, a GPU bound by local rank, or the emulated one) and all ranks share
// one node, calls whose buffers are all device memory run the planner's plans on
// the device: the executor on device memory, streams of the device transport
// (transport/cuda/device_transport.hpp), scratch in device memory. The node
// algorithms (board, direct path) move host memory only and are not candidates
// there. Each call first agrees on the kind of its buffers (memory_agreement.hpp).
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/node_collectives.hpp"
#include "algorithms/node_leaders.hpp"
#include "algorithms/shm_one_shot.hpp"
#include "blink/blink.h"
#include "plan/plan.hpp"
#include "runtime/algorithm_choice.hpp"
#include "runtime/executor.hpp"
#include "runtime/job_topology.hpp"
#include "runtime/memory_agreement.hpp"
#include "runtime/peer_health.hpp"
#include "runtime/rank_layout.hpp"
#include "transport/paced_transport.hpp"
#include "transport/registry.hpp"

namespace blink::runtime {

class Communicator {
 public:
  // Collective over `comm`. Throws blink::Error on every rank when any rank fails.
  explicit Communicator(MPI_Comm comm);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return layout_.rank; }
  int size() const { return layout_.size; }
  const RankLayout& layout() const { return layout_; }

  // Arguments as in blink.h; each throws blink::Error(blinkInvalidArgument) for bad
  // ones (checked before any communication).
  void allReduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
                 blinkRedOp_t op);
  void broadcast(const void* send, void* recv, std::size_t count, blinkDataType_t type, int root);
  void reduce(const void* send, void* recv, std::size_t count, blinkDataType_t type,
              blinkRedOp_t op, int root);
  void allGather(const void* send, void* recv, std::size_t send_count, blinkDataType_t type);
  // An AllReduce of one byte (blinkBarrier).
  void barrier();
  void reduceScatter(const void* send, void* recv, std::size_t recv_count, blinkDataType_t type,
                     blinkRedOp_t op);
  // Built on the collectives above (communicator_vector.cpp): blocks padded to the
  // largest, or (Gather) an AllGather whose other ranks drop the blocks.
  void allGatherV(const void* send, std::size_t send_count, void* recv,
                  const std::size_t* recv_counts, const std::size_t* displs, blinkDataType_t type);
  void gather(const void* send, void* recv, std::size_t send_count, blinkDataType_t type, int root);
  void reduceScatterV(const void* send, void* recv, const std::size_t* recv_counts,
                      blinkDataType_t type, blinkRedOp_t op);

  std::string explain() const;
  // Decisions cached (one per collective, size, element size and root), and how
  // many were made (a plan built, or a node algorithm chosen).
  std::size_t cachedPlans() const { return cache_.size(); }
  std::size_t plansBuilt() const { return plans_built_; }
  // Calls this communicator ran with `algorithm` (size-1 communicators run none).
  std::uint64_t callsWith(Algorithm algorithm) const {
    return calls_[static_cast<std::size_t>(algorithm)];
  }

 private:
  struct CachedChoice {
    Algorithm algorithm = Algorithm::Trees;
    plan::Plan plan;  // when the algorithm runs a plan
    Program program;
    std::string why;
    double predicted_seconds = 0.0;
    double planning_seconds = 0.0;  // deciding, building and setting up, on this rank
    std::list<std::tuple<int, std::uint64_t, int, int, bool>>::iterator lru_position;
  };
  // collective, bytes, element, root, on the device
  using PlanKey = std::tuple<int, std::uint64_t, int, int, bool>;

  // The decision for a call, made collectively at its first use (see the top).
  CachedChoice& choiceFor(plan::Collective c, std::uint64_t bytes, int element_size, int root_plan,
                          bool on_device);
  // Sets up what `algorithm` needs (the board, the direct path), collectively; false
  // (on every rank) when it cannot be made, which rules it out from then on.
  bool ensureNodeAlgorithm(Algorithm algorithm);
  bool ensureLeaders();  // the same for the node leaders' algorithm
  // Where streams between nodes took UCX by default, the leaders' rounds (one small
  // message per peer: latency, not the NIC, decides) take whichever of UCX and PMPI a
  // short measurement at set-up finds faster, the same on every rank.
  void chooseLeadersTransport();
  void dropRoundsAlternatives();  // once the leaders' transport is chosen
  // On three nodes or more, each collective's shape between the leaders
  // (algorithms/node_leaders.hpp): the cost of a round and of a message fitted to
  // 8-byte AllReduces timed in each shape at set-up, the same on every rank.
  void chooseLeadersShapes();
  // Where BLINK_LEADERS_MPI allows it, each collective whose 8-byte calls through the
  // leaders are measured no more than 5% slower with MPI's own collective among the
  // leaders than in Blink's shape takes MPI's (the same on every rank), and the time of
  // the way chosen prices the leaders from then on (node_.leaders_measured); returns
  // the times, for the note.
  std::string chooseLeadersMpi();
  // After kLeadersSteadyCalls calls through the leaders, their shapes and MPI's way
  // are measured again (the set-up's times are taken while the job starts: UCX's
  // wire-up, first touches, the other ranks' own set-up, and were seen 2-4x off), and
  // the small calls' decisions are made again with the new times.
  static constexpr std::uint64_t kLeadersSteadyCalls = 64;
  void measureLeadersAgain();
  // Drops the cached decisions of calls the leaders could take (every rank alike).
  void forgetSmallDecisions();
  // The node leaders' algorithm over `between` on this communicator's board and layout.
  std::unique_ptr<algorithms::NodeLeaders> makeNodeLeaders(Transport& between) const;
  // Runs the cached plan on `work`. `input`, when not null, holds this rank's input in
  // the working buffer's layout and saves copying it into `work` first.
  // BLINK_PACE_BETWEEN_NODES=1: the streams between nodes go through
  // transport::PacedTransport (transport/paced_transport.hpp).
  void paceBetweenNodes();
  void runPlan(CachedChoice& choice, std::byte* work, const void* input, std::uint64_t bytes,
               blinkDataType_t type, blinkRedOp_t op, bool on_device);
  // Runs `body` (a call on the board or the direct path) unless the communicator is
  // broken, and breaks it if the call fails midway.
  template <typename Body>
  void runOffPlan(Body&& body);
  // runOffPlan for the node leaders, whose rounds use the streams between nodes: they
  // are settled before the call returns, as a plan's are (transport.hpp, settle).
  template <typename Body>
  void runLeaders(Body&& body);
  // Returns once what this rank pushed on any transport has left the process.
  void settleTransports();
  // After each call through `leaders` (the runtime's or a candidate measured at set-up,
  // so that the measurement prices what a call pays): settles `between` (all transports
  // where null) if the call used it.
  void settleAfterLeaders(const algorithms::NodeLeaders& leaders, Transport* between);
  void checkUsable() const;
  // Collective: throws MemoryTypeError on every rank when any rank's buffers are
  // not host memory (memory_agreement.hpp); before any data of the call moves. For the
  // collectives built on others (communicator_vector.cpp), which pad in host scratch.
  void requireHostMemory(std::initializer_list<MemoryAgreement::Buffer> buffers);
  // Collective: whether the call's buffers are device memory (every rank alike);
  // throws MemoryTypeError on every rank when they can go neither way.
  bool placeBuffers(std::initializer_list<MemoryAgreement::Buffer> buffers);
  std::byte* scratch(std::size_t bytes, bool on_device = false);
  // memcpy, or a copy on the device (finished when it returns).
  void moveBytes(bool on_device, void* to, const void* from, std::size_t bytes);
  void divideResult(bool on_device, void* buffer, std::size_t count, blinkDataType_t type);
  void checkRoot(int root) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  RankLayout layout_;
  JobTopology job_;
  bool identity_ranks_ = true;
  std::string broken_;  // why this communicator can no longer run collectives ("" if it can)
  int bound_gpu_ = -1;  // CUDA ordinal for this rank when GPUs exist (local rank modulo count)
  std::string gpu_note_;
  MemoryAgreement memory_;  // every collective's first step: its buffers are host memory
  double timeout_s_ = 300.0;
  bool cross_memory_allowed_ = true;  // BLINK_SHM_SINGLE_COPY is not 0
  transport::TransportSelection transports_;
  std::vector<std::unique_ptr<Transport>> transport_objects_;  // each selected one, once
  Transport* within_node_ = nullptr;
  Transport* between_nodes_ = nullptr;
  // Measured against between_nodes_ for the leaders' rounds (pmpi, sockets), where that
  // is the default transport.
  std::vector<Transport*> rounds_alternatives_;
  std::string alternativesNote() const;    // for explain: how the leaders' transport is chosen
  Transport* leaders_between_ = nullptr;   // what the leaders' rounds take (set up with them)
  std::string leaders_note_;               // why, for INFO and explain
  std::uint64_t leaders_calls_ = 0;        // run through the leaders, up to the second measurement
  bool small_decisions_stale_ = false;     // measured again: decide the small calls again
  bool leaders_mpi_ = true;                // BLINK_LEADERS_MPI is not 0
  MPI_Comm leaders_comm_ = MPI_COMM_NULL;  // the node leaders (rank = node), for it
  std::string between_note_;         // why between_nodes_ is what it is, and its NICs, for explain
  bool pace_between_nodes_ = false;  // BLINK_PACE_BETWEEN_NODES=1
  std::size_t pace_piece_bytes_ = transport::kPacedPieceBytes;  // BLINK_PACE_PIECE_BYTES
  PeerHealth health_;  // for timeouts: which rank on this machine is stopped or gone
  ForcedAlgorithms forced_;
  std::string forced_text_;      // BLINK_ALGO as given, for explain
  NodeAlgorithms node_;          // agreed by every rank; updated when a set-up fails
  std::size_t staging_max_ = 0;  // agreed by every rank; BLINK_SHM_STAGING_BYTES
  std::unique_ptr<algorithms::ShmOneShot> one_shot_;
  std::unique_ptr<algorithms::NodeCollectives> direct_;
  std::unique_ptr<algorithms::NodeLeaders> leaders_;  // after one_shot_: it uses the board
  std::map<PlanKey, CachedChoice> cache_;
  std::list<PlanKey> lru_;  // most recently used first
  // The last decision used and its key: a run of equal calls skips the map.
  PlanKey last_key_{};
  CachedChoice* last_choice_ = nullptr;
  std::size_t plans_built_ = 0;
  double first_planning_seconds_ = -1.0;  // the first decision's, with the trees it packed
  double planning_seconds_ = 0.0;         // all decisions together
  std::array<std::uint64_t, kNumAlgorithms> calls_{};
  std::vector<std::byte> scratch_;
  // The padded blocks of the vector collectives (scratch_ is the collectives' own).
  std::vector<std::byte> padded_;
  // The GPU data path (see the top); device_path_ is agreed by every rank.
  device::Device* device_ = nullptr;
  bool device_path_ = false;
  std::string device_off_;  // why there is no device path
  std::unique_ptr<Transport> device_transport_;
  device::Device::Stream device_stream_ = -1;
  std::vector<device::Device::Event> device_events_;
  std::byte* device_scratch_ = nullptr;
  std::size_t device_scratch_bytes_ = 0;
};

}  // namespace blink::runtime
