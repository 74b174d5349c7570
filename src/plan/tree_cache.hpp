// Trees depend on the topology, the shape of the collective (one root, or every GPU
// as a root) and the packing options, never on the message size. Packing is the
// expensive part of planning (max-flows per arc), so it is done once per key for
// the life of the process: every communicator on the same topology, and every size
// after the first, only lowers and chunks. Thread-safe and deterministic: a hit
// returns what a miss would have computed and charges the planning budget
// (treegen/budget.hpp) the work the packing cost, so ranks with and without the
// trees cached still plan alike; packings cut short by the budget are not kept.
#pragma once

#include <cstddef>

#include "topology/topology.hpp"
#include "treegen/treegen.hpp"

namespace blink::plan {

// treegen::packBroadcast / packAllGather through the cache.
treegen::TreeSet broadcastTrees(const topo::Topology& topology, int root_gpu,
                                const treegen::PackOptions& options);
treegen::TreeSet allGatherTrees(const topo::Topology& topology,
                                const treegen::PackOptions& options);
// treegen::packReduceBroadcast (AllReduce's undirected trees) through the cache.
treegen::TreeSet reduceBroadcastTrees(const topo::Topology& topology,
                                      const treegen::PackOptions& options);

struct TreeCacheStats {
  std::size_t hits = 0;
  std::size_t misses = 0;
  double packing_seconds = 0.0;  // spent in the misses
};
TreeCacheStats treeCacheStats();

}  // namespace blink::plan
