// Graphviz rendering of a topology: `blink-topo export --format dot | dot -Tsvg`.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace blink::topo {

// One cluster per node; a pair of opposite links with equal properties is drawn as
// one two-headed edge labelled "lanes x GB/s"; colours by link kind.
std::string toDot(const Topology& topology);

}  // namespace blink::topo
