// The undirected view of a packing graph, for reduce+broadcast trees (each tree
// edge carries data both ways at once), and splitting off its switches.
//
// A GPU pair's undirected capacity along a route is the smaller of its two
// directions. Splitting a switch s pairs edges u-s and s-w into a direct edge u-w
// (the route through s) by the most both allow, most loaded neighbour first, while
// no other neighbour would be left holding more than half of s's remaining
// capacity (which would strand it: a complete splitting pairs every unit with a
// unit to another neighbour). Every split moves capacity from two real edges onto
// one route over both, so trees on the split graph never load a link beyond its
// capacity; and splitting only adds edges between the vertices left, so the
// strength of the GPUs' direct links (NVLink alone) is never lost. What cannot be
// paired is dropped, and said. Trees through switches are Steiner trees, whose best
// packing has no formula: the split graph's strength is what the packing reaches,
// not a bound on every Steiner packing.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "treegen/packing_graph.hpp"

namespace blink::treegen {

struct RouteEdge {
  int u = 0;
  int v = 0;
  Capacity capacity = 0;
  std::vector<topo::Vertex> route;  // from u to v, endpoints included
};

// One edge per GPU pair and route, of the capacity both directions offer.
std::vector<RouteEdge> undirectedEdges(const PackingGraph& g);

// Splits off every non-terminal vertex of `g` (the edges are `g`'s vertices) and
// returns the edges between terminals. Capacities are doubled first so that halves
// stay whole: the caller halves the unit (`*capacity_scale` is set to 2). Switches
// with capacity left unpaired go to `unpaired`. Charges g.budget (scans).
// halve_joins: a pair that joins two components takes at most half of the smaller
// side while the switch has other neighbours. Neither rule is best everywhere (on
// pcie-8gpu greedy pairing strands two GPUs; on dgx1-v100:2 halving loses a
// quarter of the strength): callers try both and keep the stronger graph.
std::vector<RouteEdge> splitOffSwitchesUndirected(const PackingGraph& g,
                                                  std::vector<RouteEdge> edges,
                                                  const topo::Topology& topology,
                                                  std::vector<std::string>* unpaired,
                                                  Capacity* capacity_scale, bool halve_joins);

}  // namespace blink::treegen
