#include "treegen/exact_packer.hpp"

#include <algorithm>
#include <numeric>

#include "common/error.hpp"

namespace blink::treegen {
namespace {

constexpr Capacity kInfinite = static_cast<Capacity>(1) << 60;

// Connectivity questions on the residual graph (capacities minus what trees took).
//
// Growing a tree, the question for each arc tried is whether taking one unit of
// u->w keeps connectivity >= level from the root to every span vertex. Asked
// vertex by vertex that is one max-flow per tight vertex and arc (n^5 work on a
// complete graph of n GPUs: over 30 s for 64). It is one max-flow: taking the unit
// lowers the in-capacity of exactly the vertex sets X that hold w but neither u
// nor the root, and every other set keeps its in-capacity >= level (connectivity
// is >= level before), so the answer is yes iff every such X has in-capacity >=
// level + 1, i.e. iff the max flow from {root, u} to w is (an arc root->u of
// infinite capacity makes {root, u} one source). Same answers, same trees.
//
// Whole-span checks (a tree's multiplicity) keep, per vertex, the last max flow
// computed (its witness): while the witness routes no more over any arc than the
// arc has left it is still feasible, so the vertex keeps at least its value, and
// only vertices whose witness a change breaks need a new max-flow. Capacities only
// grow back to where they were, which keeps the other witnesses feasible, so a
// witness' value is always a lower bound on the connectivity.
class Residual {
 public:
  Residual(const PackingGraph& g, int root, const std::vector<int>& span)
      : net_(g.network()), root_(root), witness_(static_cast<std::size_t>(g.numVertices())) {
    for (const auto& a : g.arcs) capacity_.push_back(a.capacity);
    shortcut_.assign(static_cast<std::size_t>(g.numVertices()), -1);
    for (int v : span) {
      if (v != root) shortcut_[v] = net_.addArc(root, v, 0);
    }
  }

  Capacity capacity(int arc) const { return capacity_[arc]; }

  void take(int arc, Capacity amount) {
    set(arc, capacity_[arc] - amount);
    for (auto& w : witness_) {
      if (w.known && w.flow[arc] > capacity_[arc]) w.known = false;
    }
  }
  void give(int arc, Capacity amount) { set(arc, capacity_[arc] + amount); }

  // Whether one unit of `arc` (u->w, u reached, w in the span) can be taken while
  // every span vertex keeps connectivity >= level.
  bool canTakeOne(int arc, Capacity level) {
    const int u = net_.from(arc), w = net_.to(arc);
    // A feasible flow of level + 1 from the root alone answers it already.
    const Witness& known = witness_[w];
    if (known.known && known.value >= level + 1) return true;
    const bool joined = u != root_ && shortcut_[u] >= 0;
    if (joined) net_.setCapacity(shortcut_[u], kInfinite);
    const Capacity flow = net_.maxFlow(root_, w);
    if (joined) net_.setCapacity(shortcut_[u], 0);
    return flow >= level + 1;
  }

  bool allAtLeast(Capacity level, const std::vector<int>& vertices) {
    for (int v : vertices) {
      if (v != root_ && !atLeast(v, level)) return false;
    }
    return true;
  }

 private:
  struct Witness {
    bool known = false;
    Capacity value = 0;
    std::vector<Capacity> flow;  // per arc
  };

  bool atLeast(int v, Capacity level) {
    Witness& w = witness_[v];
    if (w.known && w.value >= level) return true;
    w.value = net_.maxFlow(root_, v);
    w.flow = net_.flows();
    w.known = true;
    return w.value >= level;
  }

  void set(int arc, Capacity c) {
    capacity_[arc] = c;
    net_.setCapacity(arc, c);
  }

  FlowNetwork net_;
  int root_;
  std::vector<Capacity> capacity_;
  std::vector<int> shortcut_;  // per vertex: the arc root->v (capacity 0 unless asked)
  std::vector<Witness> witness_;
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
    // While a tree grows, capacities only fall, so an arc refused once stays
    // refused until the next tree: it is not asked again (on a complete graph, the
    // root's other arcs would otherwise be refused at every step).
    std::vector<bool> refused(g.arcs.size(), false);
    PackedTree tree;
    for (std::size_t grown = 1; grown < span.size(); ++grown) {
      // Out of budget: the trees so far are a packing; the one half grown is dropped.
      if (g.outOfBudget()) return trees;
      std::vector<int> candidates;
      for (int a = 0; a < static_cast<int>(g.arcs.size()); ++a) {
        const PackArc& arc = g.arcs[a];
        if (reached[arc.from] && !reached[arc.to] && in_span[arc.to] && !refused[a] &&
            residual.capacity(a) > 0) {
          candidates.push_back(a);
        }
      }
      // Roomy arcs first: they let the finished tree take a large multiplicity,
      // which keeps the number of distinct trees small. Ties: lowest index.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int x, int y) { return residual.capacity(x) > residual.capacity(y); });
      bool accepted = false;
      for (int a : candidates) {
        if (residual.canTakeOne(a, remaining - 1)) {
          residual.take(a, 1);
          tree.arcs.push_back(a);
          reached[g.arcs[a].to] = true;
          accepted = true;
          break;
        }
        refused[a] = true;
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
