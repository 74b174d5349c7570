// The optimal rates that packings are measured against, computed exactly with
// Boost.Graph's max-flow on the packing graph (switches included, so a bound never
// assumes more than the real links carry).
#pragma once

#include "treegen/packing_graph.hpp"

namespace blink::treegen {

// A rate p/q in packing-graph units (q >= 1): exact, with no rounding.
struct RationalRate {
  Capacity numerator = 0;
  Capacity denominator = 1;
  double gbps(double unit_gbps) const {
    return static_cast<double>(numerator) / static_cast<double>(denominator) * unit_gbps;
  }
};

// Broadcast/Reduce from `root`: min over GPUs t of maxflow(root, t) (Edmonds).
Capacity broadcastBound(const PackingGraph& g, int root);

// AllGather/ReduceScatter: the largest rate lambda at which every GPU can send its
// share to all others at once, i.e. min over vertex sets S holding some but not all
// GPUs of c_out(S) / |S ∩ GPUs|. Found by Dinkelbach's iteration: with a super-source
// feeding lambda into every GPU, lambda is feasible iff every GPU receives
// lambda * |GPUs|; a violating min cut S gives the next, smaller lambda. `weakest`
// (optional) receives the GPUs of the final tight set.
RationalRate allGatherBound(const PackingGraph& g, std::vector<int>* weakest = nullptr);

}  // namespace blink::treegen
