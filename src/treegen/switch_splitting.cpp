// Splitting off switch vertices (see packing_graph.hpp). Why a greedy order works:
// duplex topologies are Eulerian digraphs (in = out capacity at every vertex, and
// splitting keeps that), and in an Eulerian digraph a vertex can always be split
// off completely while every local arc-connectivity lambda(x, y) among the other
// vertices is kept (Mader's splitting theorem; Frank and Jackson for the local,
// Eulerian form) -- one admissible pair at a time, provided every earlier split
// kept the connectivities later ones rely on, not only those of the GPUs. The
// oracle guards connectivity from the root to every vertex, and, when asked,
// between every two switches, which with the Eulerian triangle inequality covers
// every pair. The cheaper root-only guard is tried first (it splits every
// reference machine and random test graph completely); the full guard is the
// fallback. Any remainder that still cannot be split is reported, never hidden.
#include <algorithm>
#include <map>

#include "common/log.hpp"
#include "treegen/packing_graph.hpp"

namespace blink::treegen {
namespace {

constexpr Capacity kInfinite = static_cast<Capacity>(1) << 60;

// Requirements lambda(from, to) >= need: from the root to every vertex (GPUs need
// `required`; a switch needs its own connectivity, capped at `required`) and,
// with guard_switch_pairs, between every two switches (capped likewise). Pairs
// with a GPU need no guard of their own: in an Eulerian digraph lambda(x, y) >=
// min(lambda(x, root), lambda(root, y)), and lambda(x, root) = lambda(root, x).
class SplitOracle {
 public:
  SplitOracle(const PackingGraph& g, int root, Capacity required, bool guard_switch_pairs)
      : root_(root) {
    FlowNetwork net = g.network();
    for (int v = 0; v < g.numVertices(); ++v) {
      if (v == root) continue;
      Capacity r = g.isTerminal(v) ? required : std::min(required, net.maxFlow(root, v));
      if (r > 0) reqs_.push_back({root, v, r});
    }
    if (!guard_switch_pairs) return;
    for (int x = g.num_terminals; x < g.numVertices(); ++x) {
      for (int y = g.num_terminals; y < g.numVertices(); ++y) {
        if (x == y || x == root || y == root) continue;
        Capacity r = std::min(required, net.maxFlow(x, y));
        if (r > 0) reqs_.push_back({x, y, r});
      }
    }
  }

  // Splitting u->s->w by x lowers by x the in-capacity of exactly two families of
  // vertex sets X: (A) X holds s but neither u nor w (it loses u->s); (B) X holds u
  // and w but not s (it loses s->w, while u->w stays inside). For a requirement
  // (a, b, need) the split may take at most the smallest such cut with b inside
  // and a outside, minus need: one max-flow per family and requirement. `cap`
  // bounds the answer, so the search stops early once nothing more can be gained.
  Capacity admissible(const PackingGraph& g, int u, int s, int w, Capacity cap) {
    HubNetwork hub(g);
    Capacity best = cap;
    for (const auto& q : reqs_) {
      if (q.from == s || q.to == s) continue;
      if (q.to != u && q.to != w)
        best = std::min(best, hub.cut({q.from, u, w}, {s, q.to}) - q.need);
      if (best <= 0) return 0;
      if (q.from != u && q.from != w) {
        best = std::min(best, hub.cut({q.from, s}, {u, w, q.to}) - q.need);
      }
      if (best <= 0) return 0;
    }
    return best;
  }

  // Whether every requirement that does not involve `ignore` holds in g.
  bool holds(const PackingGraph& g, int ignore) const {
    FlowNetwork net = g.network();
    for (const auto& q : reqs_) {
      if (q.from != ignore && q.to != ignore && net.maxFlow(q.from, q.to) < q.need) return false;
    }
    return true;
  }

  // s is gone (split off or kept as it is): stop guarding it.
  void release(int s) {
    std::erase_if(reqs_, [&](const Requirement& q) { return q.from == s || q.to == s; });
  }

  // After an unavoidable loss, require no more than `level` anywhere.
  void lowerTo(Capacity level) {
    for (auto& q : reqs_) q.need = std::min(q.need, level);
    std::erase_if(reqs_, [](const Requirement& q) { return q.need <= 0; });
  }

 private:
  struct Requirement {
    int from;
    int to;
    Capacity need;
  };

  // g's network plus a super-source and a super-sink wired to every vertex by
  // arcs of capacity 0, opened per question: one network serves every cut.
  class HubNetwork {
   public:
    explicit HubNetwork(const PackingGraph& g)
        : n_(g.numVertices()), net_(g.network(2)), from_hub_(n_), to_hub_(n_) {
      for (int v = 0; v < n_; ++v) {
        from_hub_[v] = net_.addArc(n_, v, 0);
        to_hub_[v] = net_.addArc(v, n_ + 1, 0);
      }
    }

    // The min cut separating `sources` from `sinks` (infinite if they overlap).
    Capacity cut(std::initializer_list<int> sources, std::initializer_list<int> sinks) {
      for (int y : sinks) {
        for (int x : sources) {
          if (x == y) return kInfinite;
        }
      }
      for (int x : sources) net_.setCapacity(from_hub_[x], kInfinite);
      for (int y : sinks) net_.setCapacity(to_hub_[y], kInfinite);
      Capacity value = net_.maxFlow(n_, n_ + 1);
      for (int x : sources) net_.setCapacity(from_hub_[x], 0);
      for (int y : sinks) net_.setCapacity(to_hub_[y], 0);
      return value;
    }

   private:
    int n_;
    FlowNetwork net_;
    std::vector<int> from_hub_, to_hub_;
  };

  int root_;
  std::vector<Requirement> reqs_;
};

// Moves x units of u->s (arc ia) and s->w (arc oa) onto a direct arc u->w.
void applySplit(PackingGraph& g, int ia, int oa, Capacity x) {
  const int u = g.arcs[ia].from, w = g.arcs[oa].to;
  std::vector<topo::Vertex> route = joinRoutes(g.arcs[ia].route, g.arcs[oa].route);
  g.arcs[ia].capacity -= x;
  g.arcs[oa].capacity -= x;
  auto same = std::find_if(g.arcs.begin(), g.arcs.end(), [&](const PackArc& a) {
    return a.from == u && a.to == w && a.route == route;
  });
  if (same != g.arcs.end()) {
    same->capacity += x;
  } else {
    g.arcs.push_back({u, w, x, std::move(route)});
  }
}

void dropEmptyArcs(PackingGraph& g) {
  std::erase_if(g.arcs, [](const PackArc& a) { return a.capacity <= 0; });
}

// Splits pairs at s until none is left or none may be split. With an oracle, each
// split takes the most that keeps every requirement; without one (a proposal, to
// be verified as a whole) it takes what the capacities allow.
void splitVertex(PackingGraph& g, int s, SplitOracle* oracle) {
  while (!g.outOfBudget()) {
    std::vector<int> in_arcs, out_arcs;
    std::map<int, Capacity> load;  // a_v + b_v: capacity between s and each neighbour
    Capacity total = 0;
    for (int i = 0; i < static_cast<int>(g.arcs.size()); ++i) {
      if (g.arcs[i].to == s) {
        in_arcs.push_back(i);
        load[g.arcs[i].from] += g.arcs[i].capacity;
        total += g.arcs[i].capacity;
      }
      if (g.arcs[i].from == s) {
        out_arcs.push_back(i);
        load[g.arcs[i].to] += g.arcs[i].capacity;
      }
    }
    if (in_arcs.empty() || out_arcs.empty()) return;
    // A complete splitting pairs every unit in with a unit out to ANOTHER neighbour,
    // which needs a_v + b_v <= total for every v; a split u->s->w by x keeps that
    // for the others only if x <= total - a_v - b_v. Without this guard a greedy
    // order strands u->s, s->u pairs that cannot be split.
    bool balanced = true;
    for (auto [v, c] : load) balanced &= c <= total;
    // Most constrained neighbour first; ties by index.
    std::stable_sort(in_arcs.begin(), in_arcs.end(),
                     [&](int x, int y) { return load[g.arcs[x].from] > load[g.arcs[y].from]; });
    std::stable_sort(out_arcs.begin(), out_arcs.end(),
                     [&](int x, int y) { return load[g.arcs[x].to] > load[g.arcs[y].to]; });
    // Prefer exits with little capacity straight from u already, so successive
    // switches produce different patterns rather than the same matching again.
    std::map<std::pair<int, int>, Capacity> direct;
    for (const auto& a : g.arcs) {
      if (a.from != s && a.to != s) direct[{a.from, a.to}] += a.capacity;
    }
    bool split = false;
    for (int ia : in_arcs) {
      const int u = g.arcs[ia].from;
      std::vector<int> exits = out_arcs;
      std::stable_sort(exits.begin(), exits.end(), [&](int x, int y) {
        return direct[{u, g.arcs[x].to}] < direct[{u, g.arcs[y].to}];
      });
      for (int oa : exits) {
        const int w = g.arcs[oa].to;
        if (u == w) continue;
        Capacity x = std::min(g.arcs[ia].capacity, g.arcs[oa].capacity);
        if (balanced) {
          for (auto [v, c] : load) {
            if (v != u && v != w) x = std::min(x, total - c);
          }
        }
        if (x > 0 && oracle != nullptr) x = oracle->admissible(g, u, s, w, x);
        if (x <= 0) continue;
        applySplit(g, ia, oa, x);
        split = true;
        break;
      }
      if (split) break;
    }
    dropEmptyArcs(g);
    if (!split) return;
  }
}

bool touches(const PackingGraph& g, int s) {
  return std::any_of(g.arcs.begin(), g.arcs.end(),
                     [&](const PackArc& a) { return a.from == s || a.to == s; });
}

}  // namespace

namespace {

// One pass over every switch; returns whether every switch was split off whole.
bool splitAll(PackingGraph& g, int root, Capacity required, std::vector<std::string>* unsplit,
              const topo::Topology& topology, bool guard_switch_pairs) {
  SplitOracle oracle(g, root, required, guard_switch_pairs);
  bool complete = true;
  // Switches next to many GPUs first (NVSwitches, then PCIe switches, then CPUs):
  // from the leaves of a PCIe tree inwards, each CPU is left with GPU routes to pair.
  std::vector<int> gpu_neighbours(static_cast<std::size_t>(g.numVertices()), 0);
  for (const auto& a : g.arcs) {
    if (g.isTerminal(a.to) && !g.isTerminal(a.from)) gpu_neighbours[a.from]++;
  }
  std::vector<int> order;
  for (int v = g.num_terminals; v < g.numVertices(); ++v) {
    if (v != root && g.topo_vertex[v] != kVirtualVertex) order.push_back(v);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return gpu_neighbours[x] > gpu_neighbours[y]; });

  for (int s : order) {
    // Out of budget: the switches left stay, as vertices the trees must span.
    if (g.outOfBudget()) {
      if (unsplit != nullptr)
        unsplit->push_back(topology.device(g.topo_vertex[s]).id + " (budget)");
      complete = false;
      continue;
    }
    // Fast path: propose a complete splitting from capacities alone and verify it
    // once; most switches (symmetric NVSwitch stars) pass, and a failed proposal
    // costs one check. Otherwise split pair by pair with the oracle.
    PackingGraph proposal = g;
    splitVertex(proposal, s, nullptr);
    if (!touches(proposal, s) && oracle.holds(proposal, s)) {
      g = std::move(proposal);
    } else {
      splitVertex(g, s, &oracle);
    }
    oracle.release(s);
    if (!touches(g, s)) continue;

    // What is left at s could not be split. Drop it if nothing needs it; else take
    // the lesser loss: drop it (lowering the rate to what remains), or keep s as a
    // vertex the trees must span.
    const std::string name = topology.device(g.topo_vertex[s]).id;
    std::vector<PackArc> saved, kept;
    for (auto& a : g.arcs) (a.from == s || a.to == s ? saved : kept).push_back(a);
    Capacity keep_rate = rootedConnectivity(g, root);
    {
      FlowNetwork net = g.network();
      keep_rate = std::min(keep_rate, net.maxFlow(root, s));
    }
    std::swap(g.arcs, kept);
    if (oracle.holds(g, s)) continue;
    complete = false;
    Capacity drop_rate = rootedConnectivity(g, root);
    if (drop_rate >= keep_rate) {
      oracle.lowerTo(drop_rate);
      if (unsplit != nullptr) unsplit->push_back(name + " (its unsplittable rest was dropped)");
      BLINK_LOG(Info, "treegen: dropped the unsplittable rest of " << name);
    } else {
      g.arcs.insert(g.arcs.end(), saved.begin(), saved.end());
      if (unsplit != nullptr) unsplit->push_back(name);
      BLINK_LOG(Info, "treegen: switch " << name << " could not be split off completely");
    }
  }
  return complete;
}

}  // namespace

std::vector<topo::Vertex> joinRoutes(const std::vector<topo::Vertex>& first,
                                     const std::vector<topo::Vertex>& second) {
  std::vector<topo::Vertex> route;
  auto append = [&](topo::Vertex v) {
    auto again = std::find(route.begin(), route.end(), v);
    if (again != route.end()) {
      route.erase(again + 1, route.end());
    } else {
      route.push_back(v);
    }
  };
  for (topo::Vertex v : first) append(v);
  for (std::size_t i = 1; i < second.size(); ++i) append(second[i]);
  return route;
}

void splitOffSwitches(PackingGraph& g, int root, Capacity required,
                      std::vector<std::string>* unsplit, const topo::Topology& topology) {
  // First guard only connectivity from the root (to GPUs and to switches): cheap,
  // and it splits every reference machine completely. Only if some switch is left
  // over, redo it guarding every pair of switches as well, which is what the
  // splitting theorems need, and keep the better outcome.
  PackingGraph original = g;
  std::vector<std::string> first_unsplit;
  if (splitAll(g, root, required, &first_unsplit, topology, false) || g.outOfBudget()) {
    if (unsplit != nullptr)
      unsplit->insert(unsplit->end(), first_unsplit.begin(), first_unsplit.end());
    return;
  }
  PackingGraph careful = std::move(original);
  std::vector<std::string> careful_unsplit;
  splitAll(careful, root, required, &careful_unsplit, topology, true);
  auto quality = [&](const PackingGraph& h, const std::vector<std::string>& left) {
    return std::make_pair(rootedConnectivity(h, root), -static_cast<long>(left.size()));
  };
  if (quality(careful, careful_unsplit) > quality(g, first_unsplit)) {
    g = std::move(careful);
    first_unsplit = std::move(careful_unsplit);
  }
  if (unsplit != nullptr)
    unsplit->insert(unsplit->end(), first_unsplit.begin(), first_unsplit.end());
}

}  // namespace blink::treegen
