// The baselines Blink is compared with (and falls back to), as plans on the same IR:
// NCCL-style rings and double binary trees.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/lower_trees.hpp"
#include "plan/plan.hpp"

namespace blink::plan {

// A ring: ranks in ring order, and for each position i the route from rank
// order[i] to order[i + 1].
struct Ring {
  std::vector<int> order;
  std::vector<std::vector<topo::Vertex>> hops;
  bool nvlink = false;  // every hop is a direct NVLink
};

// As NCCL does: as many directed Hamiltonian rings over NVLink lanes as the lanes
// allow (each ring takes one lane per hop); if there is none, one ring in rank
// order over the fastest paths (PCIe, CPU links, network).
std::vector<Ring> findRings(const topo::Topology& topology);

// A ring plan: the buffer split evenly over the rings, each ring pipelined in chunks.
Plan ringPlan(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
              int root_rank, const LowerOptions& options);

// NCCL's double binary tree: two binary trees over the ranks, the second the first
// shifted by one rank so that most leaves of one are inner nodes of the other, each
// carrying half the data over the fastest paths.
Plan doubleBinaryTreePlan(Collective collective, const topo::Topology& topology,
                          std::uint64_t bytes, int root_rank, const LowerOptions& options);

}  // namespace blink::plan
