// The graph a job plans on, from what its ranks gathered: each node's description
// (node_description.hpp) and each rank's node, local rank and socket. A pure
// function of that data, so every rank that gathered the same data builds the same
// graph (the planner runs on every rank and the plan hashes are compared).
//
// Binding. Where every node has at least as many GPUs as ranks, rank r is a GPU rank:
// its vertex is GPU <local rank> of its node (in discovery's gpu_index order, which is
// local rank 0's CUDA order when CUDA sees every GPU; a per-rank CUDA_VISIBLE_DEVICES is
// not gathered), and the GPUs no rank uses are dropped (an allocation view). Otherwise
// (no GPUs, or more ranks than GPUs on some node: two processes on one GPU would
// share its links, which the planner cannot model) every rank is a host rank and the
// GPUs are dropped: rank r is a GPU-kind vertex "rank<r>" (gpu_index r, so plan rank
// = communicator rank) with a duplex shm link (speed from the link table) to the
// socket it is bound to; a rank bound to no single socket goes to socket
// (local rank mod sockets), round-robin, as mpirun's --map-by socket would place it.
#pragma once

#include <string>
#include <vector>

#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

struct RankPlace {
  int node = 0;        // index into the node descriptions
  int local_rank = 0;  // among the ranks of its node, in rank order
  int package = -1;    // the socket it is bound to (placement.hpp), -1: none
};

struct JobGraph {
  Topology topology;
  std::vector<int> plan_rank_of;  // for each rank
  std::vector<int> comm_rank_of;  // for each plan rank
  bool gpu_ranks = false;
  std::string binding;  // how ranks were bound, one line for messages
};

// nodes[k] describes node k (entries may repeat); ranks[r] is rank r. Throws
// blinkInvalidInput when a rank names a node that is not described or a node has no
// CPU to attach host ranks to.
JobGraph buildJobGraph(const std::vector<const Topology*>& nodes,
                       const std::vector<RankPlace>& ranks, const LinkTable& table);

}  // namespace blink::topo
