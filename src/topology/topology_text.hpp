// A human-readable summary of a topology, for `blink-topo show`, BLINK_DEBUG=INFO
// and blinkCommExplain.
#pragma once

#include <string>

#include "topology/topology.hpp"

namespace blink::topo {

// Counts by device kind, links by kind, one row per GPU (lanes and bandwidth per
// link kind, peers), and the GPU-to-GPU NVLink lane matrix when there is one.
std::string describeTopology(const Topology& topology);

// Every device (id, kind, node, model) and every link with its speed and where the
// speed came from (LinkSource), a pair of equal opposite links as one "<->" line:
// the graph itself, for `blink-info --topology` and BLINK_DEBUG=INFO.
std::string listDevicesAndLinks(const Topology& topology);

}  // namespace blink::topo
