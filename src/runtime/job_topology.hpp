// The topology a communicator plans on, and which plan rank each of its ranks is.
// With BLINK_TOPO (and BLINK_TOPO_GPUS) rank i of MPI_COMM_WORLD acts as GPU i of
// that machine (in increasing GPU index), and a communicator of some of the ranks
// plans on the allocation view of their GPUs; otherwise every rank is a host
// process and the ranks of a node meet in shared memory (a star through the node's
// memory), nodes through a NIC each.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "runtime/rank_layout.hpp"
#include "topology/topology.hpp"

namespace blink::runtime {

struct JobTopology {
  topo::Topology topology;
  std::vector<int> plan_rank_of;  // for each communicator rank
  std::vector<int> comm_rank_of;  // for each plan rank
  std::string source;             // where the topology came from, for messages
};

// The host-rank topology of `layout`: GPU-kind vertices "rank<r>" (gpu_index r) so
// that plan rank r is communicator rank r.
topo::Topology hostRanksTopology(const RankLayout& layout);

// Collective over `comm` (whose layout is `layout`): BLINK_TOPO if set, else
// hostRanksTopology. With BLINK_TOPO the topology must have one GPU per rank of
// MPI_COMM_WORLD, and ranks share a node exactly when their GPUs do; throws
// blinkInvalidInput otherwise, naming both sides.
JobTopology jobTopology(const RankLayout& layout, MPI_Comm comm);

}  // namespace blink::runtime
