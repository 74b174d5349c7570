#include "treegen/mwu_packer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "common/error.hpp"
#include "treegen/min_arborescence.hpp"

namespace blink::treegen {

MwuResult packMwu(const PackingGraph& g, int root, const std::vector<int>& span, double epsilon) {
  if (!(epsilon > 0.0 && epsilon < 1.0)) {
    throw Error(blinkInvalidArgument,
                "MWU epsilon must be in (0, 1), got " + std::to_string(epsilon));
  }
  MwuResult result;
  // The oracle works on span vertices renumbered 0..n-1.
  std::vector<int> local(static_cast<std::size_t>(g.numVertices()), -1);
  for (std::size_t i = 0; i < span.size(); ++i) local[span[i]] = static_cast<int>(i);
  std::vector<int> arc_of;  // oracle arc -> packing arc
  std::vector<WeightedArc> arcs;
  for (int a = 0; a < static_cast<int>(g.arcs.size()); ++a) {
    const PackArc& arc = g.arcs[a];
    if (arc.capacity > 0 && local[arc.from] >= 0 && local[arc.to] >= 0) {
      arc_of.push_back(a);
      arcs.push_back({local[arc.from], local[arc.to], 0.0});
    }
  }
  const int n = static_cast<int>(span.size());
  const int m = static_cast<int>(arcs.size());
  if (n < 2 || m == 0) return result;

  // Garg–Könemann: lengths start at delta / c and the loop ends once
  // sum(c * length) reaches 1. Lengths are kept as length / 2^shift so that the
  // tiny starting values (delta ~ m^(-1/epsilon)) never underflow.
  const double log_delta = std::log1p(epsilon) - std::log((1.0 + epsilon) * m) / epsilon;
  std::vector<double> capacity(static_cast<std::size_t>(m));
  std::vector<double> length(static_cast<std::size_t>(m));
  double log_offset = log_delta;  // true length = length * exp(log_offset)
  for (int i = 0; i < m; ++i) {
    capacity[i] = static_cast<double>(g.arcs[arc_of[i]].capacity);
    length[i] = 1.0 / capacity[i];
  }
  auto logTotal = [&] {
    double sum = 0.0;
    for (int i = 0; i < m; ++i) sum += capacity[i] * length[i];
    return std::log(sum) + log_offset;
  };

  // A virtual super-root (AllGather) must hand each tree to exactly one GPU: an
  // arborescence from it using several of its arcs would be a forest. So price one
  // tree per GPU root (the super-root's arc plus the cheapest tree from that GPU
  // over the real arcs) and take the cheapest.
  const bool super_root = g.topo_vertex[root] == kVirtualVertex;
  std::vector<int> root_arcs;  // oracle arcs leaving the super-root
  std::vector<WeightedArc> real_arcs;
  std::vector<int> real_index;  // real_arcs[i] is oracle arc real_index[i]
  if (super_root) {
    for (int i = 0; i < m; ++i) {
      if (arcs[i].from == local[root]) {
        root_arcs.push_back(i);
      } else {
        real_index.push_back(i);
        real_arcs.push_back(arcs[i]);
      }
    }
  }
  auto cheapestTree = [&]() -> std::optional<std::vector<int>> {
    if (!super_root) return minCostArborescence(n, local[root], arcs);
    std::optional<std::vector<int>> best;
    double best_cost = 0.0;
    for (std::size_t i = 0; i < real_index.size(); ++i)
      real_arcs[i].cost = arcs[real_index[i]].cost;
    for (int ra : root_arcs) {
      // The super-root keeps no arcs in real_arcs, so it must be unreachable; the
      // oracle spans all n vertices, so give it a zero-cost stand-in arc from the GPU.
      std::vector<WeightedArc> with_root = real_arcs;
      with_root.push_back({arcs[ra].to, local[root], 0.0});
      auto tree = minCostArborescence(n, arcs[ra].to, with_root);
      if (!tree) continue;
      double cost = arcs[ra].cost;
      std::vector<int> mapped{ra};
      for (int i : *tree) {
        if (i == static_cast<int>(real_arcs.size())) continue;  // the stand-in
        cost += real_arcs[i].cost;
        mapped.push_back(real_index[i]);
      }
      if (!best || cost < best_cost) {
        best_cost = cost;
        std::sort(mapped.begin(), mapped.end());
        best = std::move(mapped);
      }
    }
    return best;
  };

  std::map<std::vector<int>, std::size_t> index_of_tree;
  std::vector<double> amount;  // capacity units routed on each distinct tree
  constexpr int kMaxIterations = 5'000'000;
  // Budget units per iteration: each oracle call costs about 8 units per arc
  // (measured against max-flows on the reference machines, see budget.hpp).
  const std::int64_t work_per_iteration =
      8 * static_cast<std::int64_t>(m) *
      (super_root ? static_cast<std::int64_t>(root_arcs.size()) : 1);
  while (logTotal() < 0.0) {
    // Out of budget: what was routed so far, scaled to fit below, is a packing.
    if (g.budget != nullptr && !g.budget->spend(work_per_iteration)) break;
    if (++result.iterations > kMaxIterations) {
      throw Error(blinkInternalError, "MWU did not converge; try a larger epsilon");
    }
    for (int i = 0; i < m; ++i) arcs[i].cost = length[i];
    auto chosen = cheapestTree();
    if (!chosen) return result;  // a span vertex is unreachable: nothing to pack
    double bottleneck = capacity[(*chosen)[0]];
    for (int i : *chosen) bottleneck = std::min(bottleneck, capacity[i]);
    auto [it, inserted] = index_of_tree.emplace(*chosen, amount.size());
    if (inserted) amount.push_back(0.0);
    amount[it->second] += bottleneck;
    double largest = 0.0;
    for (int i : *chosen) length[i] *= 1.0 + epsilon * bottleneck / capacity[i];
    for (int i = 0; i < m; ++i) largest = std::max(largest, length[i]);
    if (largest > 1e100) {
      for (auto& l : length) l /= largest;
      log_offset += std::log(largest);
    }
  }

  // Scale so the most loaded arc is exactly full (the theory's 1/log_{1+eps}(1/delta)
  // is a safe but looser factor).
  std::vector<double> load(static_cast<std::size_t>(m), 0.0);
  for (const auto& [arcs_of_tree, idx] : index_of_tree) {
    for (int i : arcs_of_tree) load[i] += amount[idx];
  }
  double worst = 0.0;
  for (int i = 0; i < m; ++i) worst = std::max(worst, load[i] / capacity[i]);
  if (worst <= 0.0) return result;
  result.scale = 1.0 / worst;

  std::vector<std::pair<std::size_t, std::vector<int>>> ordered;
  for (const auto& [arcs_of_tree, idx] : index_of_tree) ordered.emplace_back(idx, arcs_of_tree);
  std::sort(ordered.begin(), ordered.end());
  for (const auto& [idx, arcs_of_tree] : ordered) {
    PackedTree tree;
    // Parents before children: repeatedly take arcs whose tail is already reached.
    std::vector<bool> reached(static_cast<std::size_t>(n), false);
    reached[local[root]] = true;
    std::vector<int> pending = arcs_of_tree;
    while (!pending.empty()) {
      for (auto it2 = pending.begin(); it2 != pending.end();) {
        if (reached[arcs[*it2].from]) {
          reached[arcs[*it2].to] = true;
          tree.arcs.push_back(arc_of[*it2]);
          it2 = pending.erase(it2);
        } else {
          ++it2;
        }
      }
    }
    // Multiplicity holds the routed amount; `scale` turns it into capacity units.
    tree.multiplicity = static_cast<Capacity>(std::llround(amount[idx]));
    result.trees.push_back(std::move(tree));
  }
  return result;
}

}  // namespace blink::treegen
