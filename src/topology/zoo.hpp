// Built-in reference machines, selectable by name wherever a topology file is
// accepted: "dgx1-v100", or "dgx1-v100:4" for a cluster of four joined by their
// NICs through one network switch.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

struct ZooEntry {
  std::string name;
  std::string description;
};

// The single-node machines, in a stable order.
const std::vector<ZooEntry>& zooMachines();

// True for "NAME" or "NAME:N" where NAME is a zoo machine (N is not checked here).
bool isZooName(std::string_view spec);

// Builds "NAME" or "NAME:N" (1 <= N <= 128). Throws blinkInvalidInput for an unknown
// name (listing the known ones) or a bad node count.
Topology makeZooTopology(std::string_view spec, const LinkTable& table);

}  // namespace blink::topo
