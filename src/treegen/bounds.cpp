#include "treegen/bounds.hpp"

#include <limits>
#include <numeric>

#include "common/error.hpp"

namespace blink::treegen {

Capacity broadcastBound(const PackingGraph& g, int root) {
  return rootedConnectivity(g, root);
}

RationalRate allGatherBound(const PackingGraph& g, std::vector<int>* weakest) {
  const int gpus = g.num_terminals;
  if (gpus < 2) return {};
  // Start from the single-GPU sets: lambda <= c_out({t}) for every t.
  RationalRate lambda{std::numeric_limits<Capacity>::max(), 1};
  std::vector<Capacity> out_capacity(static_cast<std::size_t>(g.numVertices()), 0);
  for (const auto& a : g.arcs) out_capacity[a.from] += a.capacity;
  for (int t = 0; t < gpus; ++t) {
    if (out_capacity[t] < lambda.numerator) {
      lambda = {out_capacity[t], 1};
      if (weakest) *weakest = {t};
    }
  }
  if (lambda.numerator == 0) return {0, 1};

  for (int iteration = 0; iteration < 4 * gpus + 8; ++iteration) {
    // Scale capacities by the denominator q so that lambda = p/q becomes the integer p.
    const Capacity p = lambda.numerator, q = lambda.denominator;
    FlowNetwork net(g.numVertices() + 1);
    for (const auto& a : g.arcs) net.addArc(a.from, a.to, a.capacity * q);
    const int sigma = g.numVertices();
    for (int t = 0; t < gpus; ++t) net.addArc(sigma, t, p);
    bool improved = false;
    for (int t = 0; t < gpus && !improved; ++t) {
      if (net.maxFlow(sigma, t) >= p * gpus) continue;
      // The source side S (without sigma) violates c_out(S) >= lambda |S ∩ GPUs|.
      std::vector<bool> side = net.sourceSideOfMinCut();
      Capacity c_out = 0;
      for (const auto& a : g.arcs) {
        if (side[a.from] && !side[a.to]) c_out += a.capacity;
      }
      Capacity members = 0;
      std::vector<int> in_set;
      for (int v = 0; v < gpus; ++v) {
        if (side[v]) {
          ++members;
          in_set.push_back(v);
        }
      }
      if (members == 0 || c_out * q >= p * members) {
        throw Error(blinkInternalError, "allGatherBound: min cut does not improve lambda");
      }
      Capacity d = std::gcd(c_out, members);
      lambda = {c_out / d, members / d};
      if (weakest) *weakest = in_set;
      improved = true;
    }
    if (!improved) return lambda;
  }
  throw Error(blinkInternalError, "allGatherBound: Dinkelbach's iteration did not converge");
}

}  // namespace blink::treegen
