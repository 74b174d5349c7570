// Minimum-cost spanning arborescence (Chu–Liu/Edmonds), the oracle of the
// multiplicative-weight tree packer: the packer prices every link by how loaded it
// is and asks, thousands of times per packing, for the cheapest broadcast tree under
// those prices. Boost.Graph has no such algorithm, hence this one.
#pragma once

#include <optional>
#include <vector>

namespace blink::treegen {

struct WeightedArc {
  int from;
  int to;
  double cost;
};

// Minimum total cost spanning arborescence of vertices 0..num_vertices-1 rooted at
// `root`: every vertex other than root has exactly one chosen incoming arc, and all
// are reachable from root along chosen arcs.
//
// Returns the indices into `arcs` of the chosen arcs (num_vertices-1 of them, in
// ascending order), or std::nullopt if some vertex is unreachable from root.
// Parallel arcs are allowed; arcs into root and self-loops are ignored.
// Ties are broken deterministically: whenever several arcs are equally cheap, the
// lowest index wins, so equal inputs give equal outputs (on every rank).
//
// Throws blink::Error(blinkInvalidInput) when num_vertices < 1, root or an arc end is
// out of range, or a cost is negative or not finite. O(V * E) time.
std::optional<std::vector<int>> minCostArborescence(int num_vertices, int root,
                                                    const std::vector<WeightedArc>& arcs);

// Sum of arcs[i].cost over i in `chosen` (indices as minCostArborescence returns).
double arborescenceCost(const std::vector<WeightedArc>& arcs, const std::vector<int>& chosen);

}  // namespace blink::treegen
