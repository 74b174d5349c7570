// Fewer trees for the same rate. Each tree costs a stream and a pipeline at run
// time, and MWU returns thousands of slivers. The paper cuts them down with an
// integer program; Debian carries no ILP solver under a licence we can take, and
// an exact, loss-free reduction exists anyway:
//
// 1. Loss-free (Carathéodory): a packing is a point of the polytope {x >= 0 :
//    sum_i x_i a_i <= c}; any point can be rewritten with at most rank(A) + roots
//    trees at the same per-link loads and the same per-root rates. Whenever a
//    tree's link-use vector (with its root's indicator) is a combination of
//    others', weight is shifted along that dependency until some tree's weight is
//    zero. Loads and rates never change, so neither does anything the plan sees.
// 2. Lossy, bounded: then the lightest trees are dropped while the rate given up
//    stays within `tolerance` (a fraction of the rate).
#pragma once

#include "topology/topology.hpp"
#include "treegen/budget.hpp"
#include "treegen/tree_set.hpp"

namespace blink::treegen {

// Rewrites set.trees and set.rate_gbps; notes what was done. tolerance in [0, 1).
// Each loss-free step charges `budget` (if any) the size of the basis it works
// on; once it is spent the remaining trees are kept as they are (loads and rates
// are unchanged by every step, so the result is as good as the input) and only
// the cheap lossy pass runs.
void minimizeTrees(TreeSet& set, double tolerance, Budget* budget = nullptr);

}  // namespace blink::treegen
