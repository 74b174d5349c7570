// The Blink paper's packer: a multiplicative-weight-update (Garg–Könemann) fractional
// packing of spanning arborescences, with a minimum-cost arborescence oracle.
#pragma once

#include <vector>

#include "treegen/exact_packer.hpp"
#include "treegen/packing_graph.hpp"

namespace blink::treegen {

struct MwuResult {
  // Tree weights are multiplicity * scale capacity units (fractional in general).
  std::vector<PackedTree> trees;
  double scale = 0.0;
  int iterations = 0;
};

// A (1 - O(epsilon))-optimal fractional packing of arborescences rooted at `root`
// spanning `span`. Each round prices every arc by its load, asks the oracle for the
// cheapest tree, routes the tree's bottleneck capacity along it and raises the
// prices of its arcs by (1 + epsilon * share). Prices live in a rescaled form so
// they never underflow; the result is scaled so its most loaded arc is exactly full.
// Once g's budget is spent it stops and scales what it has routed so far the
// same way (empty when nothing was). Throws blinkInvalidArgument unless 0 < epsilon < 1.
MwuResult packMwu(const PackingGraph& g, int root, const std::vector<int>& span, double epsilon);

}  // namespace blink::treegen
