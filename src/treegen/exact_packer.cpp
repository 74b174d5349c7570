#include "treegen/exact_packer.hpp"

#include <algorithm>
#include <numeric>

#include "common/error.hpp"

namespace blink::treegen {
namespace {

// Connectivity questions on the residual graph (capacities minus what trees took).
class Residual {
 public:
  Residual(const PackingGraph& g, int root, const std::vector<int>& span)
      : net_(g.network()), root_(root), span_(span) {
    for (const auto& a : g.arcs) capacity_.push_back(a.capacity);
  }

  Capacity capacity(int arc) const { return capacity_[arc]; }
  void take(int arc, Capacity amount) { set(arc, capacity_[arc] - amount); }
  void give(int arc, Capacity amount) { set(arc, capacity_[arc] + amount); }

  Capacity flowTo(int v) { return net_.maxFlow(root_, v); }

  // The span vertices whose connectivity from the root is exactly `level`.
  std::vector<int> tight(Capacity level) {
    std::vector<int> out;
    for (int v : span_) {
      if (v != root_ && flowTo(v) <= level) out.push_back(v);
    }
    return out;
  }

  bool allAtLeast(Capacity level, const std::vector<int>& vertices) {
    for (int v : vertices) {
      if (v != root_ && flowTo(v) < level) return false;
    }
    return true;
  }

 private:
  void set(int arc, Capacity c) {
    capacity_[arc] = c;
    net_.setCapacity(arc, c);
  }

  FlowNetwork net_;
  int root_;
  const std::vector<int>& span_;
  std::vector<Capacity> capacity_;
};

}  // namespace

std::vector<PackedTree> packArborescences(const PackingGraph& g, int root,
                                          const std::vector<int>& span, Capacity k) {
  std::vector<PackedTree> trees;
  if (k <= 0 || span.size() <= 1) return trees;
  Residual residual(g, root, span);
  if (!residual.allAtLeast(k, span)) {
    throw Error(blinkInternalError, "packArborescences: connectivity below the requested rate");
  }
  std::vector<bool> in_span(static_cast<std::size_t>(g.numVertices()), false);
  for (int v : span) in_span[v] = true;

  Capacity remaining = k;
  while (remaining > 0) {
    // Grow one tree; every accepted arc leaves connectivity >= remaining - 1.
    std::vector<bool> reached(in_span.size(), false);
    reached[root] = true;
    PackedTree tree;
    for (std::size_t grown = 1; grown < span.size(); ++grown) {
      std::vector<int> tight = residual.tight(remaining - 1);
      std::vector<int> candidates;
      for (int a = 0; a < static_cast<int>(g.arcs.size()); ++a) {
        const PackArc& arc = g.arcs[a];
        if (reached[arc.from] && !reached[arc.to] && in_span[arc.to] && residual.capacity(a) > 0) {
          candidates.push_back(a);
        }
      }
      // Roomy arcs first: they let the finished tree take a large multiplicity,
      // which keeps the number of distinct trees small. Ties: lowest index.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int x, int y) { return residual.capacity(x) > residual.capacity(y); });
      bool accepted = false;
      for (int a : candidates) {
        residual.take(a, 1);
        if (residual.allAtLeast(remaining - 1, tight)) {
          tree.arcs.push_back(a);
          reached[g.arcs[a].to] = true;
          accepted = true;
          break;
        }
        residual.give(a, 1);
      }
      if (!accepted) {
        throw Error(blinkInternalError,
                    "packArborescences: no arc extends the tree (Lovász's lemma violated)");
      }
    }
    // The tree holds one unit; find the largest multiplicity mu with
    // connectivity >= remaining - mu once mu units of every tree arc are taken.
    Capacity most = remaining;
    for (int a : tree.arcs) most = std::min(most, residual.capacity(a) + 1);
    auto feasible = [&](Capacity mu) {
      for (int a : tree.arcs) residual.take(a, mu - 1);
      bool ok = residual.allAtLeast(remaining - mu, span);
      for (int a : tree.arcs) residual.give(a, mu - 1);
      return ok;
    };
    Capacity lo = 1, hi = most;
    if (!feasible(hi)) {
      while (hi - lo > 1) {
        Capacity mid = lo + (hi - lo) / 2;
        (feasible(mid) ? lo : hi) = mid;
      }
    } else {
      lo = hi;
    }
    for (int a : tree.arcs) residual.take(a, lo - 1);
    tree.multiplicity = lo;
    remaining -= lo;
    trees.push_back(std::move(tree));
  }
  return trees;
}

}  // namespace blink::treegen
