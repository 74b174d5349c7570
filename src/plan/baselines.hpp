// The baselines Blink is compared with (and falls back to), as plans on the same IR:
// NCCL-style rings and double binary trees.
#pragma once

#include <cstdint>
#include <string>
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

// As NCCL does. On one node: as many directed Hamiltonian rings over NVLink lanes
// as the lanes allow (each ring takes one lane per hop); if there is none, one ring
// in rank order over the fastest paths (PCIe, CPU links). On GPUs of several nodes:
// one ring per NIC of a node (the fewest any node has), each through every node in
// turn, entering and leaving a node at the GPU that uses that NIC (NodeLayout) and
// crossing the network on it, inside a node along an NVLink ring of its GPUs (rank
// order without one).
std::vector<Ring> findRings(const topo::Topology& topology);

// One line naming the rings NCCL would run here: how many and over which links.
std::string describeRings(const topo::Topology& topology, const std::vector<Ring>& rings);

// One line naming the double binary tree modelled on this topology.
std::string describeDoubleBinaryTree(const topo::Topology& topology);

// A ring plan: the buffer split evenly over the rings, each ring pipelined in chunks.
Plan ringPlan(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
              int root_rank, const LowerOptions& options);

// NCCL's double binary tree: two binary trees over the ranks, the second the first
// shifted by one rank so that most leaves of one are inner nodes of the other, each
// carrying half the data over the fastest paths. On GPUs of several nodes, as NCCL
// runs it: the two binary trees over the nodes, linked head GPU to head GPU over
// their NICs (the first NIC of a node for one tree, the last for the other), and a
// chain inside each node from its head along its NVLink ring, in chunks of 1 MiB as
// the ring's (unless LowerOptions::chunk_bytes sets one).
Plan doubleBinaryTreePlan(Collective collective, const topo::Topology& topology,
                          std::uint64_t bytes, int root_rank, const LowerOptions& options);

}  // namespace blink::plan
