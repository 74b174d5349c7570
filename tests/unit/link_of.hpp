// Test helper: the one link of a kind between two devices named by id.
#pragma once

#include <optional>
#include <string>

#include "topology/topology.hpp"

namespace blink::topo::testing {

// The one link of `kind` from a to b (by id); nullopt when either is missing or
// there is none.
inline std::optional<Link> linkOf(const Topology& t, const std::string& a, const std::string& b,
                                  LinkKind kind) {
  auto u = t.find(a), v = t.find(b);
  if (!u || !v) return std::nullopt;
  for (Edge e : t.linksBetween(*u, *v)) {
    if (t.link(e).kind == kind) return t.link(e);
  }
  return std::nullopt;
}

}  // namespace blink::topo::testing
