// Where NCCL's rings and double binary trees run on a topology, as the baselines
// (baselines.hpp) model them: the routes NCCL sends along, the NVLink rings through
// one node's GPUs, and on several nodes the rings through every node by its NICs and
// the two binary trees over the nodes. Lowering them into plans is baselines.cpp's.
#pragma once

#include <vector>

#include "plan/baselines.hpp"
#include "topology/topology.hpp"
#include "treegen/tree_set.hpp"

namespace blink::plan::nccl {

// The widest path (largest bottleneck capacity, then fewest hops) between two
// devices over any links: where NCCL would send when there is no direct link.
// Throws blink::Error(blinkInvalidInput) when there is none.
std::vector<topo::Vertex> fastestRoute(const topo::Topology& t, topo::Vertex from, topo::Vertex to);

// The NVLink lanes from a to b.
int nvlinkLanes(const topo::Topology& t, topo::Vertex a, topo::Vertex b);

// Depth-first search for a directed Hamiltonian cycle from path's first rank over arcs
// with a free lane (lanes[a][b] > 0), extending `path` (and `used`); gives up once it
// has spent `budget` steps.
bool hamiltonian(const std::vector<std::vector<int>>& lanes, std::vector<int>& path,
                 std::vector<bool>& used, long& budget);

std::vector<topo::Vertex> gpuVertices(const topo::Topology& t);

// The order of NCCL's first ring through one node's GPUs (ranks, as given): an NVLink
// ring where the lanes allow one, else the ranks in order.
std::vector<int> nodeRingOrder(const topo::Topology& t, const std::vector<int>& ranks);

// NCCL's rings on a cluster: one per NIC of a node (the fewest any node has), each
// through every node in turn, entering and leaving a node near its NIC.
std::vector<Ring> clusterRings(const topo::Topology& t);

// NCCL's double binary tree on a cluster, rooted at `root_rank` (whose node tops both
// trees, with the root as its head).
treegen::TreeSet clusterDoubleBinaryTrees(const topo::Topology& t, int root_rank);

}  // namespace blink::plan::nccl
