// The directed, integer-capacity graph that trees are packed on, built from a
// Topology. Capacities are exact integer multiples of a small unit of GB/s (the
// link speeds of the table are rationals such as 1024/65 GB/s for PCIe gen3 x16),
// so max-flow answers and packings are exact, with no floating-point tolerance.
//
// Switch-like vertices (PCIe and NV switches, CPUs, NICs, network switches) are not
// endpoints of a collective. They are removed by splitting off: a pair of arcs
// u->s, s->w becomes a direct arc u->w that remembers its route through s, by the
// largest amount that keeps the requirement (rooted connectivity K) intact. The
// packers then work on GPUs only, and routes map trees back onto real links.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "treegen/budget.hpp"
#include "treegen/flow_network.hpp"

namespace blink::treegen {

struct PackArc {
  int from = 0;
  int to = 0;
  Capacity capacity = 0;
  // The topology vertices this arc travels through, endpoints included
  // (two entries for a real link, more for an arc made by splitting).
  std::vector<topo::Vertex> route;
};

struct PackingGraph {
  // Vertex i of the packing graph is topology vertex `topo_vertex[i]`; vertices
  // 0..num_terminals-1 are the GPUs in increasing gpu_index.
  std::vector<topo::Vertex> topo_vertex;
  int num_terminals = 0;
  std::vector<PackArc> arcs;
  // GB/s per capacity unit.
  double unit_gbps = 1.0;
  // Why the unit is approximate, if it is ("" when exact).
  std::string unit_note;
  // The account every max-flow network built from this graph charges (budget.hpp);
  // nullptr: none. Algorithms on the graph stop at a safe point once it is spent.
  Budget* budget = nullptr;

  int numVertices() const { return static_cast<int>(topo_vertex.size()); }
  bool isTerminal(int v) const { return v < num_terminals; }
  // Builds a FlowNetwork with one arc per PackArc (same ids), plus `extra_vertices`.
  FlowNetwork network(int extra_vertices = 0) const;
  // Multiplies every capacity by `factor` (and divides the unit).
  void scale(Capacity factor);
  // Adds a vertex (not a topology vertex: topo_vertex gets `sentinel`) and returns it.
  int addVirtualVertex();
  // Whether the budget (if any) is spent.
  bool outOfBudget() const;
};

inline constexpr topo::Vertex kVirtualVertex = static_cast<topo::Vertex>(-1);

// Builds the packing graph of `topology`, keeping only links whose kind is in
// `kinds` (all kinds when empty). Parallel links of different kinds between one
// ordered pair become one arc per kind. Non-GPU vertices that cannot relay (no
// arc in or no arc out, after removing GPU-less leaves) are dropped.
PackingGraph buildPackingGraph(const topo::Topology& topology,
                               const std::set<topo::LinkKind>& kinds);

// min over terminals t != root of maxflow(root, t); 0 when a terminal is unreachable.
Capacity rootedConnectivity(const PackingGraph& g, int root);

// Which terminal limits rooted connectivity (for messages); -1 if none.
int weakestTerminal(const PackingGraph& g, int root);

// Splits off every non-terminal vertex while keeping, for every terminal t != root,
// maxflow(root, t) >= required. Non-terminals that cannot be completely split are
// kept (their names go to `unsplit`). Deterministic.
void splitOffSwitches(PackingGraph& g, int root, Capacity required,
                      std::vector<std::string>* unsplit, const topo::Topology& topology);

// The route `first` (u..s) followed by `second` (s..w), with any detour cut out: a
// route that visits a device twice (up to a CPU and back down the same switch)
// travels the shorter way, which uses a subset of the same links.
std::vector<topo::Vertex> joinRoutes(const std::vector<topo::Vertex>& first,
                                     const std::vector<topo::Vertex>& second);

}  // namespace blink::treegen
