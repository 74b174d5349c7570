// A human-readable summary of a topology, for `blink-topo show`, BLINK_DEBUG=INFO
// and blinkCommExplain.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace blink::topo {

// Counts by device kind, links by kind, one row per GPU (lanes and bandwidth per
// link kind, peers), and the GPU-to-GPU NVLink lane matrix when there is one.
std::string describeTopology(const Topology& topology);

}  // namespace blink::topo
