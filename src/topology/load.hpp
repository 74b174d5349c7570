// One entry point for "where does the topology come from": a zoo name, a Blink
// JSON file or an NCCL topology XML file, or the running machine.
#pragma once

#include <string>
#include <vector>

#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

// "dgx1-v100", "dgx1-v100:4", "my-machine.json" or "nccl-dump.xml". A file whose name
// ends in ".xml" (or whose first non-blank character is '<') is read as NCCL XML;
// any other file as Blink JSON. Throws blinkInvalidInput when the spec is neither a
// zoo name nor a readable file, or when the file is malformed.
Topology loadTopology(const std::string& spec, const LinkTable& table);

// Discovery of this machine with hwloc, NVML and CUDA (see discover.hpp).
Topology discoverThisMachine(const LinkTable& table);

// What the runtime uses: BLINK_TOPO if set, else discovery; then BLINK_TOPO_GPUS
// as an allocation view; link speeds from BLINK_LINK_GBPS.
Topology topologyFromEnvironment();

// Applies an allocation view when `gpus` is non-empty.
Topology withAllocation(Topology topology, const std::vector<int>& gpus);

}  // namespace blink::topo
