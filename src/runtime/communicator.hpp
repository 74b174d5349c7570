// A Blink communicator over the ranks of an MPI communicator. Bootstrap uses only
// PMPI_* (the interposer sits on top of it): a private duplicate of the MPI
// communicator for Blink's traffic, the rank layout (nodes, local ranks), the
// topology (job_topology.hpp), shared memory within nodes and PMPI between them.
// Small collectives on a single node take the one-shot board (shm_one_shot.hpp),
// large ones the direct path (node_collectives.hpp): a staging area in shared memory
// (shm_staged.hpp), or cross-memory attach where ranks may read each other.
// Each other collective finds its plan in a cache keyed by collective, size in bytes,
// element size and root; a miss builds the plan on every rank (the planner is
// deterministic), checks that every rank built the same one (hash), and sets up
// the streams it needs.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <initializer_list>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "blink/blink.h"
#include "plan/plan.hpp"
#include "runtime/executor.hpp"
#include "runtime/job_topology.hpp"
#include "runtime/memory_agreement.hpp"
#include "runtime/rank_layout.hpp"
#include "transport/shm/node_collectives.hpp"
#include "transport/shm/shm_one_shot.hpp"
#include "transport/shm/shm_transport.hpp"

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
  void reduceScatter(const void* send, void* recv, std::size_t recv_count, blinkDataType_t type,
                     blinkRedOp_t op);

  std::string explain() const;
  std::size_t cachedPlans() const { return cache_.size(); }
  std::size_t plansBuilt() const { return plans_built_; }

 private:
  struct CachedPlan {
    plan::Plan plan;
    Program program;
    std::string why;
  };
  using PlanKey = std::tuple<int, std::uint64_t, int, int>;  // collective, bytes, element, root

  CachedPlan& planFor(plan::Collective c, std::uint64_t bytes, int element_size, int root_plan);
  // Runs the plan on `work`. `input`, when not null, holds this rank's input in the
  // working buffer's layout and saves copying it into `work` first.
  void runPlan(plan::Collective c, std::byte* work, const void* input, std::uint64_t bytes,
               blinkDataType_t type, blinkRedOp_t op, int root_plan);
  // Whether a collective of `bytes` takes the one-shot board (made at its first use,
  // on every rank alike). False for good if the board cannot be made.
  bool oneShot(std::uint64_t bytes);
  // Whether a collective of `bytes` takes the direct path (made at its first use,
  // on every rank alike). False for good if it cannot be made.
  bool direct(std::uint64_t bytes);
  // Runs `body` (a call on the board or the direct path) unless the communicator is
  // broken, and breaks it if the call fails midway.
  template <typename Body>
  void runOffPlan(Body&& body);
  void checkUsable() const;
  // Collective: throws MemoryTypeError on every rank when any rank's buffers are
  // not host memory (memory_agreement.hpp); before any data of the call moves.
  void requireHostMemory(std::initializer_list<MemoryAgreement::Buffer> buffers);
  std::byte* scratch(std::size_t bytes);
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
  transport::SingleCopyMode single_copy_ = transport::SingleCopyMode::Automatic;
  std::unique_ptr<Transport> shm_;
  std::unique_ptr<Transport> pmpi_;
  std::size_t one_shot_max_ = 0;  // agreed by every rank; 0 when the ranks span nodes
  std::unique_ptr<transport::ShmOneShot> one_shot_;
  std::string one_shot_off_;      // why the board is not used, when one_shot_max_ is 0
  std::uint64_t direct_min_ = 0;  // agreed by every rank; 0 when the direct path is off
  std::size_t staging_max_ = 0;   // agreed by every rank; BLINK_SHM_STAGING_BYTES
  std::unique_ptr<transport::NodeCollectives> direct_;
  std::string direct_off_;  // why the direct path is not used, when direct_min_ is 0
  std::map<PlanKey, CachedPlan> cache_;
  std::list<PlanKey> lru_;  // most recently used first
  std::size_t plans_built_ = 0;
  std::vector<std::byte> scratch_;
};

}  // namespace blink::runtime
