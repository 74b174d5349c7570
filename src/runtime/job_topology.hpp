// The topology a communicator plans on, and which plan rank each of its ranks is.
// With BLINK_TOPO (and BLINK_TOPO_GPUS) rank i of MPI_COMM_WORLD acts as GPU i of
// that machine (in increasing GPU index), and a communicator of some of the ranks
// plans on the allocation view of their GPUs. Otherwise the machine is discovered:
// local rank 0 of each node describes its node (topology/node_description.hpp),
// every rank reports the socket it is bound to, the distinct descriptions are
// gathered once each over PMPI, and every rank builds the same job graph from the
// gathered data alone (topology/job_graph.hpp: GPU ranks or host ranks).
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
  // Where the topology came from, for messages: "BLINK_TOPO=dgx1-v100", or
  // "discovered: 2 nodes (a, b), 1 distinct description; host ranks ...".
  std::string source;
  bool discovered = false;
  int distinct_descriptions = 0;  // node descriptions that travelled (discovered only)
};

// Collective over `comm` (whose layout is `layout`), PMPI only: BLINK_TOPO if set on
// every rank, else discovery. With BLINK_TOPO the topology must have one GPU per rank
// of MPI_COMM_WORLD, and ranks share a node exactly when their GPUs do. Every rank
// makes the same PMPI calls whatever fails, then throws: blinkInvalidInput for a bad
// BLINK_TOPO (naming both sides) or BLINK_TOPO set on some ranks only,
// blinkSystemError when a node could not be discovered.
JobTopology jobTopology(const RankLayout& layout, MPI_Comm comm);

}  // namespace blink::runtime
