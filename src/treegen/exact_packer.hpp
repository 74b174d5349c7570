// Exact integral packing of spanning arborescences (Lovász's constructive proof of
// Edmonds' branching theorem), with multiplicities so that few distinct trees carry
// the whole rate.
#pragma once

#include <vector>

#include "treegen/packing_graph.hpp"

namespace blink::treegen {

struct PackedTree {
  std::vector<int> arcs;  // indices into PackingGraph::arcs, parents before children
  Capacity multiplicity = 0;
};

// Packs arborescences rooted at `root` spanning `span` (which must contain root)
// with total multiplicity `k`, using only g's arcs within capacity. Requires that
// maxflow(root, v) >= k for every v in span (throws blinkInternalError otherwise).
// Each round grows one tree arc by arc, accepting an arc only if every vertex keeps
// connectivity >= k-1 in what is left (always possible, by Lovász), then gives the
// tree the largest multiplicity mu that keeps connectivity >= k-mu.
// Once g's budget is spent it returns the trees finished so far (total
// multiplicity below k): still a packing within capacity.
std::vector<PackedTree> packArborescences(const PackingGraph& g, int root,
                                          const std::vector<int>& span, Capacity k);

}  // namespace blink::treegen
