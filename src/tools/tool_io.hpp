// What the blink-* tools share beyond argument parsing: where the topology comes
// from (--topo, --hwloc-xml, $BLINK_TOPO or discovery, then --gpus or
// $BLINK_TOPO_GPUS), link speeds (--link-gbps on top of $BLINK_LINK_GBPS) and
// where the output goes (--output or standard output).
#pragma once

#include <set>
#include <string>

#include "tools/cli.hpp"
#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::cli {

topo::LinkTable linkTableFromArgs(const Args& args);
topo::Topology topologyFromArgs(const Args& args);
// Writes to --output FILE when given (blinkSystemError if it cannot), else stdout.
void emitOutput(const Args& args, const std::string& text);

// --links: "all" (every kind: an empty set) or a comma list of link kinds.
std::set<topo::LinkKind> parseLinks(const std::string& text);

}  // namespace blink::cli
