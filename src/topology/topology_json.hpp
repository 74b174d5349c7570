// Blink's topology file format: versioned JSON, documented in the README
// ("Topology files"). Reading is strict: every problem is reported with the file,
// the line (for syntax) or the field path (for content), and what was expected.
#pragma once

#include <string>
#include <string_view>

#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

inline constexpr int kTopologyFormatVersion = 1;

// Writes every device and link explicitly; a pair of opposite links with equal
// properties is written once with "duplex": true.
std::string toJson(const Topology& topology);

// Parses a topology; `origin` names the file in messages. A link may give a
// "generation" (e.g. "nvlink2") instead of kind/gbps/latency_us, which are then taken
// from `table`. Throws blink::Error(blinkInvalidInput) on any problem.
Topology fromJson(std::string_view text, const std::string& origin, const LinkTable& table);

// Reads and parses a file (blinkInvalidInput if it cannot be read).
Topology readJsonFile(const std::string& path, const LinkTable& table);

}  // namespace blink::topo
