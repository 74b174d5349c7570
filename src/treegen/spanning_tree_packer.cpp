#include "treegen/spanning_tree_packer.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "common/error.hpp"
#include "treegen/exact_packer.hpp"
#include "treegen/packing_graph.hpp"
#include "treegen/strength.hpp"

namespace blink::treegen {
namespace {

// Thrown inside the recursion when the budget is spent; caught at the top.
struct OutOfBudget {};

struct LocalEdge {
  int u = 0;
  int v = 0;
  Capacity capacity = 0;
  int id = 0;  // index into the caller's edges
};

struct Packing {
  double total = 0.0;  // sum of the weights
  std::vector<WeightedSpanningTree> trees;
};

void charge(Budget* budget, std::int64_t work) {
  if (budget != nullptr && !budget->spend(work)) throw OutOfBudget{};
}

// Identical edge sets become one tree.
std::vector<WeightedSpanningTree> mergeEqual(std::vector<WeightedSpanningTree> trees) {
  std::map<std::vector<int>, std::size_t> seen;
  std::vector<WeightedSpanningTree> out;
  for (auto& t : trees) {
    std::sort(t.edges.begin(), t.edges.end());
    if (auto it = seen.find(t.edges); it != seen.end()) {
      out[it->second].weight += t.weight;
    } else {
      seen.emplace(t.edges, out.size());
      out.push_back(std::move(t));
    }
  }
  return out;
}

// The base case (see the header): a uniformly dense graph, oriented so that every
// vertex but 0 has in-degree p, then packed into p arborescences from vertex 0.
Packing packUniformlyDense(int n, const std::vector<LocalEdge>& edges, Budget* budget) {
  Capacity total = 0;
  for (const auto& e : edges) total += e.capacity;
  const Capacity g = std::gcd(total, static_cast<Capacity>(n - 1));
  const Capacity q = (n - 1) / g;  // capacities scaled by q make the strength
  const Capacity p = total / g;    // the integer p
  const int m = static_cast<int>(edges.size());
  // Source 0, sink 1, a node per edge, a node per vertex.
  FlowNetwork net(2 + m + n);
  net.chargeTo(budget);
  std::vector<int> into(static_cast<std::size_t>(m) * 2);
  for (int i = 0; i < m; ++i) {
    const Capacity c = edges[i].capacity * q;
    net.addArc(0, 2 + i, c);
    into[2 * i] = net.addArc(2 + i, 2 + m + edges[i].v, c);      // oriented u -> v
    into[2 * i + 1] = net.addArc(2 + i, 2 + m + edges[i].u, c);  // oriented v -> u
  }
  for (int v = 1; v < n; ++v) net.addArc(2 + m + v, 1, p);
  charge(budget, 3 * m + n);
  if (net.maxFlow(0, 1) != total * q) {
    throw Error(blinkInternalError,
                "packSpanningTrees: no orientation with in-degree p (not uniformly dense)");
  }
  PackingGraph oriented;
  oriented.topo_vertex.assign(static_cast<std::size_t>(n), 0);
  oriented.num_terminals = n;
  oriented.budget = budget;
  std::vector<int> edge_of_arc;
  for (int i = 0; i < m; ++i) {
    const Capacity forward = net.flow(into[2 * i]), backward = net.flow(into[2 * i + 1]);
    if (forward > 0) {
      oriented.arcs.push_back({edges[i].u, edges[i].v, forward, {}});
      edge_of_arc.push_back(edges[i].id);
    }
    if (backward > 0) {
      oriented.arcs.push_back({edges[i].v, edges[i].u, backward, {}});
      edge_of_arc.push_back(edges[i].id);
    }
  }
  std::vector<int> span(static_cast<std::size_t>(n));
  std::iota(span.begin(), span.end(), 0);
  const std::vector<PackedTree> packed = packArborescences(oriented, 0, span, p);
  Packing out;
  Capacity packed_total = 0;
  for (const auto& t : packed) {
    WeightedSpanningTree tree;
    for (int a : t.arcs) tree.edges.push_back(edge_of_arc[a]);
    tree.weight = static_cast<double>(t.multiplicity) / static_cast<double>(q);
    packed_total += t.multiplicity;
    out.trees.push_back(std::move(tree));
  }
  if (packed_total < p) throw OutOfBudget{};  // the exact packer stopped at the budget
  out.total = static_cast<double>(total) / static_cast<double>(n - 1);
  out.trees = mergeEqual(std::move(out.trees));
  return out;
}

// Lays every packing out on [0, 1) by cumulative weight over its total and cuts at
// every boundary: each piece takes one tree from every packing, weight `sigma`
// times its length.
Packing zip(const std::vector<Packing>& parts, double sigma) {
  std::vector<double> cuts{0.0, 1.0};
  std::vector<std::vector<double>> ends(parts.size());
  for (std::size_t k = 0; k < parts.size(); ++k) {
    double at = 0.0;
    for (const auto& t : parts[k].trees) {
      at += t.weight / parts[k].total;
      ends[k].push_back(at);
      cuts.push_back(std::min(at, 1.0));
    }
    ends[k].back() = 1.0;  // rounding: the last tree runs to the end
  }
  std::sort(cuts.begin(), cuts.end());
  constexpr double kGap = 1e-12;
  Packing out;
  out.total = sigma;
  double start = 0.0;
  for (double cut : cuts) {
    if (cut - start <= kGap) continue;
    const double middle = (start + cut) / 2.0;
    WeightedSpanningTree tree;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const auto i = static_cast<std::size_t>(
          std::lower_bound(ends[k].begin(), ends[k].end(), middle) - ends[k].begin());
      const auto& edges = parts[k].trees[std::min(i, parts[k].trees.size() - 1)].edges;
      tree.edges.insert(tree.edges.end(), edges.begin(), edges.end());
    }
    tree.weight = (cut - start) * sigma;
    out.trees.push_back(std::move(tree));
    start = cut;
  }
  out.trees = mergeEqual(std::move(out.trees));
  return out;
}

Packing pack(int n, const std::vector<LocalEdge>& edges, Budget* budget) {
  // A strength computation: at most n Newton steps of n - 1 minimum cuts, each on
  // at most n + 1 nodes; charged by size, so that every rank stops at one point.
  charge(budget, static_cast<std::int64_t>(edges.size() + static_cast<std::size_t>(n)) * n);
  std::vector<UndirectedEdge> weighted;
  for (const auto& e : edges) weighted.push_back({e.u, e.v, static_cast<double>(e.capacity)});
  const StrengthResult strength = graphStrength(n, weighted);
  if (strength.strength <= 0.0) return {};
  const std::vector<int>& cls = strength.partition_class;
  const int classes = *std::max_element(cls.begin(), cls.end()) + 1;
  if (classes == n) return packUniformlyDense(n, edges, budget);

  // The quotient over the optimal partition, and every class on its own.
  std::vector<LocalEdge> crossing;
  std::vector<std::vector<LocalEdge>> inside(static_cast<std::size_t>(classes));
  std::vector<int> local(static_cast<std::size_t>(n));
  std::vector<int> size(static_cast<std::size_t>(classes), 0);
  for (int v = 0; v < n; ++v) local[v] = size[cls[v]]++;
  Capacity crossing_capacity = 0;
  for (const auto& e : edges) {
    if (cls[e.u] != cls[e.v]) {
      crossing.push_back({cls[e.u], cls[e.v], e.capacity, e.id});
      crossing_capacity += e.capacity;
    } else {
      inside[cls[e.u]].push_back({local[e.u], local[e.v], e.capacity, e.id});
    }
  }
  const double sigma = static_cast<double>(crossing_capacity) / static_cast<double>(classes - 1);
  std::vector<Packing> parts;
  parts.push_back(pack(classes, crossing, budget));
  for (int c = 0; c < classes; ++c) {
    if (size[c] < 2) continue;
    parts.push_back(pack(size[c], inside[c], budget));
  }
  for (const auto& part : parts) {
    if (part.trees.empty() || part.total <= 0.0) {
      throw Error(blinkInternalError,
                  "packSpanningTrees: a part of a connected graph packs nothing");
    }
  }
  return zip(parts, sigma);
}

}  // namespace

SpanningTreePacking packSpanningTrees(int num_vertices, const std::vector<CapacitatedEdge>& edges,
                                      Budget* budget) {
  if (num_vertices < 2) {
    throw Error(blinkInvalidArgument, "packSpanningTrees: needs at least two vertices");
  }
  std::vector<LocalEdge> local;
  for (int i = 0; i < static_cast<int>(edges.size()); ++i) {
    const auto& e = edges[i];
    if (e.u < 0 || e.u >= num_vertices || e.v < 0 || e.v >= num_vertices) {
      throw Error(blinkInvalidArgument, "packSpanningTrees: an edge names a vertex out of range");
    }
    if (e.u != e.v && e.capacity > 0) local.push_back({e.u, e.v, e.capacity, i});
  }
  SpanningTreePacking out;
  try {
    Packing packed = pack(num_vertices, local, budget);
    out.strength = packed.total;
    out.trees = std::move(packed.trees);
  } catch (const OutOfBudget&) {
    out.cut_short = true;
    out.trees.clear();
  }
  return out;
}

}  // namespace blink::treegen
