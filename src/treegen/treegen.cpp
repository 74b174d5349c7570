#include "treegen/treegen.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"
#include "treegen/bounds.hpp"
#include "treegen/exact_packer.hpp"
#include "treegen/minimize.hpp"
#include "treegen/mwu_packer.hpp"
#include "treegen/packing_graph.hpp"
#include "treegen/spanning_tree_packer.hpp"
#include "treegen/strength.hpp"
#include "treegen/undirected_splitting.hpp"

namespace blink::treegen {
namespace {

using Clock = std::chrono::steady_clock;

double millisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int packingIndexOfGpu(const topo::Topology& topology, const PackingGraph& g, int gpu_index) {
  for (int v = 0; v < g.num_terminals; ++v) {
    if (topology.device(g.topo_vertex[v]).gpu_index == gpu_index) return v;
  }
  throw Error(blinkInvalidArgument,
              "GPU " + std::to_string(gpu_index) + " is not in topology '" + topology.name() + "'");
}

std::string gpuName(const topo::Topology& topology, topo::Vertex v) {
  const auto& d = topology.device(v);
  return d.kind == topo::DeviceKind::Gpu ? "GPU " + std::to_string(d.gpu_index) : d.id;
}

// The vertices a packing must span: every GPU, the root, and the switches that
// splitting could not remove.
std::vector<int> spanOf(const PackingGraph& g, int root) {
  std::vector<bool> used(static_cast<std::size_t>(g.numVertices()), false);
  for (int v = 0; v < g.num_terminals; ++v) used[v] = true;
  used[root] = true;
  for (const auto& a : g.arcs) used[a.from] = used[a.to] = true;
  std::vector<int> span;
  for (int v = 0; v < g.numVertices(); ++v) {
    if (used[v]) span.push_back(v);
  }
  return span;
}

Capacity minConnectivity(const PackingGraph& g, int root, const std::vector<int>& span) {
  FlowNetwork net = g.network();
  Capacity best = -1;
  for (int v : span) {
    if (v == root) continue;
    Capacity f = net.maxFlow(root, v);
    best = best < 0 ? f : std::min(best, f);
  }
  return std::max<Capacity>(best, 0);
}

// Turns packed arc sets into Trees over topology vertices. Arcs out of a virtual
// super-root are dropped; their heads become the roots. Identical trees merge.
std::vector<Tree> toTrees(const topo::Topology& topology, const PackingGraph& g,
                          const std::vector<PackedTree>& packed, int root) {
  std::map<std::pair<int, std::vector<int>>, std::size_t> seen;
  std::vector<Tree> trees;
  for (const auto& p : packed) {
    Tree tree;
    std::vector<int> arcs;
    for (int a : p.arcs) {
      const PackArc& arc = g.arcs[a];
      if (g.topo_vertex[arc.from] == kVirtualVertex) {
        tree.root_gpu = topology.device(g.topo_vertex[arc.to]).gpu_index;
        continue;
      }
      arcs.push_back(a);
      tree.edges.push_back({arc.route.front(), arc.route.back(), arc.route});
    }
    if (tree.root_gpu < 0) tree.root_gpu = topology.device(g.topo_vertex[root]).gpu_index;
    tree.weight_gbps = static_cast<double>(p.multiplicity) * g.unit_gbps;
    auto key = std::make_pair(tree.root_gpu, arcs);
    std::sort(key.second.begin(), key.second.end());
    if (auto it = seen.find(key); it != seen.end()) {
      trees[it->second].weight_gbps += tree.weight_gbps;
    } else {
      seen[key] = trees.size();
      trees.push_back(std::move(tree));
    }
  }
  return trees;
}

SharedBudget budgetFor(const PackOptions& options) {
  if (options.budget) return options.budget;
  return makeBudget(options.budget_ms > 0.0 ? options.budget_ms : defaultBudgetMillis());
}

// Records what the packing spent and, when the budget ran out, says so with the
// rate reached against the bound.
void settleBudget(TreeSet& set, const Budget& budget, std::int64_t spent_before,
                  const std::string& what) {
  set.work = budget.spent() - spent_before;
  set.budget_exhausted = budget.exhausted();
  if (!set.budget_exhausted) return;
  std::ostringstream note;
  note << "planning budget exhausted (" << budget.limit()
       << " work units, BLINK_PLAN_BUDGET_MS or --budget-ms): " << set.rate_gbps << " of "
       << set.bound_gbps << " GB/s";
  if (set.rate_gbps <= 0.0) note << ", no usable trees";
  set.notes.push_back(note.str());
  // Once per process and message: a runtime plans every size of every collective.
  static std::mutex mutex;
  static std::set<std::string> said;
  const std::string line = "treegen: " + what + ": " + note.str();
  const std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(line).second) BLINK_LOG(Warn, line);
}

// Capacities in lanes: divided by their greatest common divisor (the unit grows by
// it). A packing of k = min cut in lanes then holds at most k trees, each at least
// one lane (Edmonds: with integer lanes, min-cut-many lane-disjoint trees exist),
// where the finer unit let the exact packer cut the rate into more, thinner trees.
// Returns the divisor.
Capacity toLanes(PackingGraph& g) {
  Capacity divisor = 0;
  for (const auto& a : g.arcs) divisor = std::gcd(divisor, a.capacity);
  if (divisor <= 1) return 1;
  for (auto& a : g.arcs) a.capacity /= divisor;
  g.unit_gbps *= static_cast<double>(divisor);
  return divisor;
}

Capacity totalMultiplicity(const std::vector<PackedTree>& packed) {
  Capacity total = 0;
  for (const auto& p : packed) total += p.multiplicity;
  return total;
}

// The rate of an AllGather packing: each GPU's trees carry its share, and the
// collective runs at the slowest GPU (0 when one roots no tree).
double slowestRoot(const std::vector<Tree>& trees, int gpus) {
  std::map<int, double> per_gpu;
  for (const auto& t : trees) per_gpu[t.root_gpu] += t.weight_gbps;
  if (per_gpu.size() < static_cast<std::size_t>(gpus)) return 0.0;
  double rate = per_gpu.begin()->second;
  for (const auto& [gpu, r] : per_gpu) rate = std::min(rate, r);
  return rate;
}

void explainShortfall(TreeSet& set, const std::vector<std::string>& unsplit) {
  for (const auto& id : unsplit) {
    set.notes.push_back("switch " + id + " could not be split off; trees must span it");
  }
}

// An undirected tree (edges among terminals) rooted where it is shallowest (ties:
// the lowest GPU), its edges listed parents first with routes read downwards.
Tree rootedAtCentre(const topo::Topology& topology, const PackingGraph& g,
                    const std::vector<RouteEdge>& edges, const WeightedSpanningTree& packed) {
  const int n = g.num_terminals;
  std::vector<std::vector<int>> adjacent(static_cast<std::size_t>(n));
  for (int e : packed.edges) {
    adjacent[edges[e].u].push_back(e);
    adjacent[edges[e].v].push_back(e);
  }
  // Breadth-first order from `root`: (edge, parent) pairs and the depth reached.
  auto walk = [&](int root, std::vector<std::pair<int, int>>* order) {
    std::vector<int> depth(static_cast<std::size_t>(n), -1);
    std::vector<int> queue{root};
    depth[root] = 0;
    int deepest = 0;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      const int x = queue[i];
      for (int e : adjacent[x]) {
        const int y = edges[e].u == x ? edges[e].v : edges[e].u;
        if (depth[y] >= 0) continue;
        depth[y] = depth[x] + 1;
        deepest = std::max(deepest, depth[y]);
        queue.push_back(y);
        if (order != nullptr) order->emplace_back(e, x);
      }
    }
    return deepest;
  };
  int root = 0, best = n;
  for (int v = 0; v < n; ++v) {
    const int depth = walk(v, nullptr);
    if (depth < best) {
      best = depth;
      root = v;
    }
  }
  std::vector<std::pair<int, int>> order;
  walk(root, &order);
  Tree tree;
  tree.root_gpu = topology.device(g.topo_vertex[root]).gpu_index;
  tree.weight_gbps = packed.weight * g.unit_gbps;
  for (auto [e, parent] : order) {
    std::vector<topo::Vertex> route = edges[e].route;
    if (edges[e].u != parent) std::reverse(route.begin(), route.end());
    tree.edges.push_back({route.front(), route.back(), std::move(route)});
  }
  return tree;
}

}  // namespace

std::optional<Method> parseMethod(const std::string& name) {
  if (name == "exact") return Method::Exact;
  if (name == "mwu") return Method::Mwu;
  return std::nullopt;
}

std::string toString(Method method) {
  return method == Method::Exact ? "exact" : "mwu";
}

TreeSet packBroadcast(const topo::Topology& topology, int root_gpu, const PackOptions& options) {
  auto start = Clock::now();
  TreeSet set;
  set.collective = "broadcast";
  set.method = toString(options.method);
  set.topology = topology.name();
  set.root_gpu = root_gpu;
  PackingGraph g = buildPackingGraph(topology, options.links);
  const int root = packingIndexOfGpu(topology, g, root_gpu);
  const SharedBudget budget = budgetFor(options);
  const std::int64_t spent_before = budget->spent();
  g.budget = budget.get();
  if (!g.unit_note.empty()) set.notes.push_back(g.unit_note);
  if (g.num_terminals < 2) {
    set.notes.push_back("a single GPU: there is nothing to move");
    set.millis = millisSince(start);
    return set;
  }
  const Capacity bound = broadcastBound(g, root);
  set.bound_gbps = static_cast<double>(bound) * g.unit_gbps;
  if (bound == 0) {
    int t = weakestTerminal(g, root);
    set.notes.push_back(gpuName(topology, g.topo_vertex[t]) + " cannot be reached from GPU " +
                        std::to_string(root_gpu) + " over the allowed links: rate 0");
    set.millis = millisSince(start);
    return set;
  }
  std::vector<std::string> unsplit;
  splitOffSwitches(g, root, bound, &unsplit, topology);
  explainShortfall(set, unsplit);
  std::vector<int> span = spanOf(g, root);
  if (options.method == Method::Exact) toLanes(g);
  const Capacity reachable = minConnectivity(g, root, span);
  set.rate_gbps = 0.0;
  if (options.method == Method::Exact) {
    const std::vector<PackedTree> packed = packArborescences(g, root, span, reachable);
    set.trees = toTrees(topology, g, packed, root);
    set.rate_gbps = static_cast<double>(totalMultiplicity(packed)) * g.unit_gbps;
  } else {
    MwuResult mwu = packMwu(g, root, span, options.epsilon);
    set.trees = toTrees(topology, g, mwu.trees, root);
    for (auto& t : set.trees) {
      t.weight_gbps *= mwu.scale;
      set.rate_gbps += t.weight_gbps;
    }
  }
  if (options.minimize) minimizeTrees(set, options.tolerance, budget.get());
  set.millis = millisSince(start);
  settleBudget(set, *budget, spent_before,
               "broadcast from GPU " + std::to_string(root_gpu) + " on " + topology.name());
  BLINK_LOG(Info, "treegen: broadcast from GPU " << root_gpu << " on " << topology.name() << ": "
                                                 << set.trees.size() << " trees, " << set.rate_gbps
                                                 << " of " << set.bound_gbps << " GB/s ("
                                                 << set.method << ", " << set.millis << " ms)");
  return set;
}

TreeSet packAllGather(const topo::Topology& topology, const PackOptions& options) {
  auto start = Clock::now();
  TreeSet set;
  set.collective = "allgather";
  set.method = toString(options.method);
  set.topology = topology.name();
  PackingGraph g = buildPackingGraph(topology, options.links);
  if (!g.unit_note.empty()) set.notes.push_back(g.unit_note);
  if (g.num_terminals < 2) {
    set.notes.push_back("a single GPU: there is nothing to move");
    set.millis = millisSince(start);
    return set;
  }
  const SharedBudget budget = budgetFor(options);
  const std::int64_t spent_before = budget->spent();
  g.budget = budget.get();
  std::vector<int> weakest;
  RationalRate lambda = allGatherBound(g, &weakest);
  set.bound_gbps = lambda.gbps(g.unit_gbps);
  if (lambda.numerator == 0) {
    set.notes.push_back("some GPU cannot reach the others over the allowed links: rate 0");
    set.millis = millisSince(start);
    return set;
  }
  // Every GPU roots lambda of trees: a super-root feeding lambda into each GPU turns
  // this into one rooted packing of lambda * GPUs (Edmonds, multi-root form).
  g.scale(lambda.denominator);
  const int sigma = g.addVirtualVertex();
  for (int t = 0; t < g.num_terminals; ++t) {
    g.arcs.push_back({sigma, t, lambda.numerator, {kVirtualVertex, g.topo_vertex[t]}});
  }
  const Capacity required = lambda.numerator * g.num_terminals;
  std::vector<std::string> unsplit;
  splitOffSwitches(g, sigma, required, &unsplit, topology);
  explainShortfall(set, unsplit);
  std::vector<int> span = spanOf(g, sigma);
  // Every GPU must root the same amount. When splitting lost capacity, find the
  // largest common amount that still fits: with l fed into every GPU, packing
  // needs connectivity l * GPUs to every spanned vertex, which only gets easier as
  // l shrinks, so a binary search finds it.
  auto feedAll = [&](Capacity per_gpu) {
    for (auto& a : g.arcs) {
      if (a.from == sigma) a.capacity = per_gpu;
    }
  };
  auto fits = [&](Capacity per_gpu) {
    feedAll(per_gpu);
    return minConnectivity(g, sigma, span) >= per_gpu * g.num_terminals;
  };
  Capacity per_root = lambda.numerator;
  if (!fits(per_root)) {
    set.notes.push_back("the switches that could not be split off limit the rate");
    Capacity lo = 0, hi = per_root;
    while (hi - lo > 1 && !g.outOfBudget()) {
      Capacity mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    per_root = lo;
  }
  feedAll(per_root);
  if (options.method == Method::Exact && per_root > 0) per_root /= toLanes(g);
  if (options.method == Method::Exact) {
    const Capacity required_total = per_root * g.num_terminals;
    const std::vector<PackedTree> packed = packArborescences(g, sigma, span, required_total);
    set.trees = toTrees(topology, g, packed, sigma);
    // A packing the budget cut short need not give every root the same rate.
    set.rate_gbps = totalMultiplicity(packed) == required_total
                        ? static_cast<double>(per_root) * g.unit_gbps
                        : slowestRoot(set.trees, g.num_terminals);
  } else {
    MwuResult mwu = packMwu(g, sigma, span, options.epsilon);
    set.trees = toTrees(topology, g, mwu.trees, sigma);
    for (auto& t : set.trees) t.weight_gbps *= mwu.scale;
    // MWU need not give every root the same rate: the collective runs at the slowest.
    set.rate_gbps = slowestRoot(set.trees, g.num_terminals);
  }
  if (options.minimize) minimizeTrees(set, options.tolerance, budget.get());
  set.millis = millisSince(start);
  settleBudget(set, *budget, spent_before, "allgather on " + topology.name());
  BLINK_LOG(Info, "treegen: allgather on "
                      << topology.name() << ": " << set.trees.size() << " trees, " << set.rate_gbps
                      << " of " << set.bound_gbps << " GB/s per GPU (" << set.method << ", "
                      << set.millis << " ms)");
  return set;
}

TreeSet packReduceBroadcast(const topo::Topology& topology, const PackOptions& options) {
  auto start = Clock::now();
  TreeSet set;
  set.collective = "allreduce";
  set.method = "exact";
  set.topology = topology.name();
  set.undirected = true;
  PackingGraph g = buildPackingGraph(topology, options.links);
  if (!g.unit_note.empty()) set.notes.push_back(g.unit_note);
  if (g.num_terminals < 2) {
    set.notes.push_back("a single GPU: there is nothing to move");
    set.millis = millisSince(start);
    return set;
  }
  set.root_gpu = topology.device(g.topo_vertex[0]).gpu_index;
  const SharedBudget budget = budgetFor(options);
  const std::int64_t spent_before = budget->spent();
  g.budget = budget.get();
  std::vector<RouteEdge> edges = undirectedEdges(g);
  const bool switches = g.numVertices() > g.num_terminals;
  if (switches) {
    // Both pairing rules (undirected_splitting.hpp); the stronger GPU graph wins,
    // greedy pairing on ties.
    std::vector<std::string> unpaired, unpaired_halved;
    Capacity scale = 1;
    std::vector<RouteEdge> greedy =
        splitOffSwitchesUndirected(g, edges, topology, &unpaired, &scale, false);
    std::vector<RouteEdge> halved =
        splitOffSwitchesUndirected(g, edges, topology, &unpaired_halved, &scale, true);
    auto strength = [&](const std::vector<RouteEdge>& split) {
      std::vector<UndirectedEdge> weighted;
      weighted.reserve(split.size());
      for (const auto& e : split) {
        weighted.push_back({e.u, e.v, static_cast<double>(e.capacity)});
      }
      g.budget->spend(static_cast<std::int64_t>(split.size() + 1) * g.num_terminals);
      return graphStrength(g.num_terminals, weighted).strength;
    };
    if (strength(halved) > strength(greedy)) {
      edges = std::move(halved);
      unpaired = std::move(unpaired_halved);
    } else {
      edges = std::move(greedy);
    }
    g.unit_gbps /= static_cast<double>(scale);
    set.notes.push_back(
        "switches split off: the bound is the strength of the GPU graph left, which trees "
        "through switches (Steiner trees) might exceed");
    for (const auto& id : unpaired) {
      set.notes.push_back("capacity through " + id + " that could not be paired is unused");
    }
  }
  std::vector<CapacitatedEdge> capacities;
  capacities.reserve(edges.size());
  for (const auto& e : edges) capacities.push_back({e.u, e.v, e.capacity});
  const SpanningTreePacking packed = packSpanningTrees(g.num_terminals, capacities, g.budget);
  if (!packed.cut_short) {
    set.bound_gbps = packed.strength * g.unit_gbps;
    for (const auto& t : packed.trees) set.trees.push_back(rootedAtCentre(topology, g, edges, t));
    for (const auto& t : set.trees) set.rate_gbps += t.weight_gbps;
    if (set.trees.empty()) {
      set.notes.push_back("the GPUs are not connected over the allowed links: rate 0");
    }
  }
  if (options.minimize && !set.trees.empty()) minimizeTrees(set, options.tolerance, budget.get());
  set.millis = millisSince(start);
  settleBudget(set, *budget, spent_before, "reduce+broadcast on " + topology.name());
  BLINK_LOG(Info, "treegen: reduce+broadcast on "
                      << topology.name() << ": " << set.trees.size() << " trees, " << set.rate_gbps
                      << " of " << set.bound_gbps << " GB/s (" << set.millis << " ms)");
  return set;
}

double laneGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links) {
  PackingGraph g = buildPackingGraph(topology, links);
  toLanes(g);
  return g.unit_gbps;
}

double broadcastBoundGbps(const topo::Topology& topology, int root_gpu,
                          const std::set<topo::LinkKind>& links) {
  PackingGraph g = buildPackingGraph(topology, links);
  if (g.num_terminals < 2) return 0.0;
  return static_cast<double>(broadcastBound(g, packingIndexOfGpu(topology, g, root_gpu))) *
         g.unit_gbps;
}

double allReduceBoundGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links) {
  PackingGraph g = buildPackingGraph(topology, links);
  const int n = g.num_terminals;
  if (n < 2) return 0.0;
  const Capacity cut = broadcastBound(g, 0);
  if (cut == 0) return 0.0;
  // The packing graph keeps exactly the links data between GPUs can use (allowed
  // kinds; relays that lead nowhere dropped), so its arcs are what every delivery
  // has to pass. Parties: each GPU alone, and each node's GPUs together.
  auto nodeOf = [&](int v) { return topology.device(g.topo_vertex[v]).node; };
  std::set<int> gpu_nodes;
  for (int v = 0; v < n; ++v) gpu_nodes.insert(nodeOf(v));
  Capacity into_gpus = 0, out_of_gpus = 0, into_nodes = 0, out_of_nodes = 0;
  for (const auto& a : g.arcs) {
    if (g.isTerminal(a.to)) into_gpus += a.capacity;
    if (g.isTerminal(a.from)) out_of_gpus += a.capacity;
    const int from = nodeOf(a.from), to = nodeOf(a.to);
    if (from == to) continue;
    if (gpu_nodes.contains(to)) into_nodes += a.capacity;
    if (gpu_nodes.contains(from)) out_of_nodes += a.capacity;
  }
  auto traffic = [](Capacity into, Capacity out, std::size_t parties) {
    return static_cast<double>(std::min(into, out)) / (2.0 * static_cast<double>(parties - 1));
  };
  double best = std::min(static_cast<double>(cut),
                         traffic(into_gpus, out_of_gpus, static_cast<std::size_t>(n)));
  if (gpu_nodes.size() > 1) {
    best = std::min(best, traffic(into_nodes, out_of_nodes, gpu_nodes.size()));
  }
  return best * g.unit_gbps;
}

double allGatherBoundGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links) {
  PackingGraph g = buildPackingGraph(topology, links);
  return allGatherBound(g).gbps(g.unit_gbps);
}

AllReduceBounds allReduceBounds(const topo::Topology& topology,
                                const std::set<topo::LinkKind>& links) {
  AllReduceBounds b;
  PackingGraph g = buildPackingGraph(topology, links);
  b.gpus = g.num_terminals;
  if (g.num_terminals < 2) return b;
  b.allgather_gbps = allGatherBound(g).gbps(g.unit_gbps);
  const Capacity bound = broadcastBound(g, 0);
  if (bound == 0) return b;
  if (g.numVertices() > g.num_terminals) {
    // Trees through switches are Steiner trees, whose undirected packing has no
    // exact min-cut formula; a reduce+broadcast never beats a broadcast, so that
    // bound stands in (loose, but never optimistic about the other shape).
    b.reduce_broadcast_gbps = static_cast<double>(bound) * g.unit_gbps;
    b.reduce_broadcast_exact = false;
    return b;
  }
  // A tree edge is used both ways at once, so a GPU pair offers its weaker direction.
  std::map<std::pair<int, int>, std::pair<Capacity, Capacity>> pairs;
  for (const auto& a : g.arcs) {
    auto key = std::minmax(a.from, a.to);
    (a.from < a.to ? pairs[key].first : pairs[key].second) += a.capacity;
  }
  std::vector<UndirectedEdge> edges;
  for (const auto& [key, caps] : pairs) {
    Capacity both = std::min(caps.first, caps.second);
    if (both > 0) {
      edges.push_back({key.first, key.second, static_cast<double>(both) * g.unit_gbps});
    }
  }
  b.reduce_broadcast_gbps = graphStrength(g.numVertices(), edges).strength;
  b.reduce_broadcast_exact = true;
  return b;
}

double AllReduceBounds::reduceBroadcastSeconds(double bytes) const {
  return reduce_broadcast_gbps > 0 ? bytes / (reduce_broadcast_gbps * 1e9) : 0.0;
}

double AllReduceBounds::reduceScatterAllGatherSeconds(double bytes) const {
  return allgather_gbps > 0 ? 2.0 * (bytes / gpus) / (allgather_gbps * 1e9) : 0.0;
}

double AllReduceBounds::bestSeconds(double bytes) const {
  double a = reduceBroadcastSeconds(bytes), b = reduceScatterAllGatherSeconds(bytes);
  if (a == 0.0) return b;
  if (b == 0.0) return a;
  return std::min(a, b);
}

}  // namespace blink::treegen
