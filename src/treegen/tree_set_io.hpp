// TreeSets as text (for people and BLINK_DEBUG=INFO), JSON (a stable interface for
// scripts) and Graphviz DOT.
#pragma once

#include <string>

#include "topology/topology.hpp"
#include "treegen/tree_set.hpp"

namespace blink::treegen {

// JSON keys: collective, topology, method, root (or null), rate_gbps, bound_gbps,
// rate_over_bound, millis, notes, and trees: [{root, weight_gbps, arcs, routes}] where
// `arcs` lists every hop as [from, to] (a GPU by its index, any other device by its
// id) and `routes` lists each tree edge as the devices it crosses.
std::string toJson(const TreeSet& set, const topo::Topology& topology);

// One line per tree (weight, then its edges as 0->4 or 0->pcisw0->1), then the
// rate, the bound, their ratio, the tree count and the time.
std::string toText(const TreeSet& set, const topo::Topology& topology);

// Every tree drawn over the topology's devices in its own colour.
std::string toDot(const TreeSet& set, const topo::Topology& topology);

}  // namespace blink::treegen
