// Graph strength by Newton's (Dinkelbach's) method on lambda, each step solving
// Cunningham's "optimal attack" problem with n-1 minimum cuts.
//
// ---- Newton on lambda --------------------------------------------------------------
// For a partition P let cut(P) = c(delta(P)) and let
//   h(lambda) = min over all partitions P (|P| = 1 included) of cut(P) - lambda(|P| - 1).
// The trivial partition gives 0, so h <= 0; and h(lambda) >= 0 iff
// cut(P) >= lambda(|P| - 1) for every P with |P| >= 2, i.e. iff lambda <= sigma.
// Start with lambda_0 = cut(singletons) / (n - 1) >= sigma. At lambda_i, take a
// minimiser P_i. If h(lambda_i) >= 0 (within tolerance), lambda_i <= sigma, and
// lambda_i is the ratio of a real partition, so lambda_i = sigma, certified by the
// partition that produced it. Otherwise |P_i| >= 2 and lambda_{i+1} =
// cut(P_i) / (|P_i| - 1) < lambda_i. h is concave and piecewise linear with slopes
// -(|P| - 1); each step lands on a line of strictly smaller |P| - 1, so at most n - 1
// steps are needed.
//
// ---- The attack problem as a Dilworth truncation ------------------------------------
// cut(P) = 1/2 sum_{S in P} d(S), with d(S) = c(delta(S)) the cut function of G, so
//   cut(P) - lambda |P| = sum_{S in P} f(S),   f(S) = d(S)/2 - lambda.
// f is intersecting submodular: f(A) + f(B) >= f(A u B) + f(A n B) when A n B != {}
// (d is submodular; the constant appears twice on each side). Let V_k = {0..k-1} and
// F(P) = sum_{S in P} f(S), with f always evaluated in the whole graph G. We build an
// F-minimal partition P_k of V_k for k = 1..n; P_1 = {{0}} and P_n is what we want.
//
// Lemma: some F-minimal partition of V_{k+1} consists of one class
// {v} u (union of some classes of P_k), v = k, and the remaining classes of P_k.
// Proof. Let Q be F-minimal on V_{k+1}. (a) If a class T of P_k meets several classes
// Q_1..Q_m of Q, uncross T with them one after another:
//   f(T) + sum f(Q_i) >= f(T u Q_1 u ... u Q_m) + sum f(T n Q_i)
// (each step intersects in T n Q_i != {}, since the Q_i are disjoint), and
// T u Q_1 u ... u Q_m = Q_1 u ... u Q_m. Splitting T into the pieces T n Q_i gives a
// partition of V_k, so by minimality of P_k, f(T) <= sum f(T n Q_i). Hence
// f(Q_1 u ... u Q_m) <= sum f(Q_i): merging Q_1..Q_m keeps Q minimal and reduces |Q|.
// Repeat until every class of P_k lies inside one class of Q. (b) A class of Q not
// containing v is then a union of classes T_1..T_j of P_k inside V_k; by minimality of
// P_k (which could have merged them), sum f(T_i) <= f(T_1 u ... u T_j), so splitting
// it back into T_1..T_j keeps Q minimal. Now Q has the claimed form.
//
// So it remains to choose the set U of classes of P_k to join v, minimising
//   f({v} u U) + sum_{T not in U} f(T) = f({v} u U) - sum_{T in U} f(T) + const,
// i.e. (times 2) d({v} u U) + sum_{T in U} (2 lambda - d(T)) + const. Contract every
// class of P_k to a node, v is the source s, and all vertices not yet added (V \ V_{k+1},
// always outside {v} u U) form the sink t; then d({v} u U) is the s-t cut of the
// source side {s} u U in this contracted graph. The linear term w_T = 2 lambda - d(T)
// is charged when T is on the source side: an arc T -> t of capacity w_T if w_T >= 0,
// otherwise the constant w_T plus an arc s -> T of capacity -w_T (paid when T is on
// the sink side). A minimum s-t cut (Boost.Graph's Boykov-Kolmogorov max-flow; the
// source side is what the residual graph reaches from s) gives an optimal U.
//
// Floating point: the Newton test re-evaluates cut(P_i) on the original edges and
// stops when cut(P_i) - lambda_i (|P_i| - 1) >= -1e-12 lambda_i (|P_i| - 1), i.e. when
// the next lambda would be smaller by a relative 1e-12 or less.
#include "treegen/strength.hpp"

#include <algorithm>
// GCC's -Wmaybe-uninitialized misfires inside Boost.Graph's edge iterator (a
// boost::optional member) once boykov_kolmogorov_max_flow is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace blink::treegen {
namespace {

constexpr double kRelativeTolerance = 1e-12;

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowEdge = Traits::edge_descriptor;

struct FlowEdgeProps {
  double capacity = 0.0;
  double residual = 0.0;
  FlowEdge reverse;
};

using FlowGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                        boost::no_property, FlowEdgeProps>;

struct Edge {
  int u;
  int v;
  double c;
};

// Adds arcs a->b of capacity cap_ab and b->a of capacity cap_ba as each other's reverse.
void addArcPair(FlowGraph& g, std::size_t a, std::size_t b, double cap_ab, double cap_ba) {
  const FlowEdge ab = boost::add_edge(a, b, g).first;
  const FlowEdge ba = boost::add_edge(b, a, g).first;
  g[ab].capacity = cap_ab;
  g[ab].reverse = ba;
  g[ba].capacity = cap_ba;
  g[ba].reverse = ab;
}

// Renumbers class ids (all >= 0) to 0, 1, ... in order of first appearance.
int canonicalize(std::vector<int>& cls) {
  std::vector<int> remap;
  int next = 0;
  for (int& c : cls) {
    const auto idx = static_cast<std::size_t>(c);
    if (idx >= remap.size()) remap.resize(idx + 1, -1);
    if (remap[idx] < 0) remap[idx] = next++;
    c = remap[idx];
  }
  return next;
}

double crossingCapacity(const std::vector<Edge>& edges, const std::vector<int>& cls) {
  double total = 0.0;
  for (const Edge& e : edges) {
    if (cls[static_cast<std::size_t>(e.u)] != cls[static_cast<std::size_t>(e.v)]) total += e.c;
  }
  return total;
}

// One incremental step: P_k (classes 0..m-1 on vertices < v) -> P_{k+1} on vertices <= v.
void addVertex(const std::vector<Edge>& edges, double lambda, int v, std::vector<int>& cls,
               int& num_classes) {
  const auto m = static_cast<std::size_t>(num_classes);
  const std::size_t s = m;
  const std::size_t t = m + 1;
  const std::size_t nodes = m + 2;
  auto nodeOf = [&](int x) -> std::size_t {
    if (x < v) return static_cast<std::size_t>(cls[static_cast<std::size_t>(x)]);
    return x == v ? s : t;
  };
  // Contracted capacities between nodes (symmetric).
  std::vector<double> w(nodes * nodes, 0.0);
  for (const Edge& e : edges) {
    const std::size_t a = nodeOf(e.u);
    const std::size_t b = nodeOf(e.v);
    if (a == b) continue;
    w[a * nodes + b] += e.c;
    w[b * nodes + a] += e.c;
  }

  FlowGraph g(nodes);
  for (std::size_t a = 0; a < nodes; ++a) {
    for (std::size_t b = a + 1; b < nodes; ++b) {
      const double c = w[a * nodes + b];
      if (c > 0.0) addArcPair(g, a, b, c, c);
    }
  }
  for (std::size_t T = 0; T < m; ++T) {
    double d = 0.0;  // d(T) in G: everything else is some other node
    for (std::size_t b = 0; b < nodes; ++b) d += w[T * nodes + b];
    const double linear = 2.0 * lambda - d;
    if (linear > 0.0) {
      addArcPair(g, T, t, linear, 0.0);
    } else if (linear < 0.0) {
      addArcPair(g, s, T, -linear, 0.0);
    }
  }

  std::vector<FlowEdge> pred(nodes);
  std::vector<boost::default_color_type> color(nodes);
  std::vector<long> dist(nodes);
  const auto index = boost::get(boost::vertex_index, g);
  boost::boykov_kolmogorov_max_flow(
      g, boost::get(&FlowEdgeProps::capacity, g), boost::get(&FlowEdgeProps::residual, g),
      boost::get(&FlowEdgeProps::reverse, g),
      boost::make_iterator_property_map(pred.begin(), index),
      boost::make_iterator_property_map(color.begin(), index),
      boost::make_iterator_property_map(dist.begin(), index), index, s, t);

  // Source side of a minimum cut: reachable from s along arcs with residual capacity.
  std::vector<char> source_side(nodes, 0);
  std::vector<std::size_t> stack{s};
  source_side[s] = 1;
  while (!stack.empty()) {
    const std::size_t a = stack.back();
    stack.pop_back();
    for (const FlowEdge e : boost::make_iterator_range(boost::out_edges(a, g))) {
      const std::size_t b = boost::target(e, g);
      if (!source_side[b] && g[e].residual > 0.0) {
        source_side[b] = 1;
        stack.push_back(b);
      }
    }
  }

  // v's class gets id m; classes on the source side merge into it.
  for (int x = 0; x < v; ++x) {
    int& c = cls[static_cast<std::size_t>(x)];
    if (source_side[static_cast<std::size_t>(c)]) c = num_classes;
  }
  cls[static_cast<std::size_t>(v)] = num_classes;
  std::vector<int> prefix(cls.begin(), cls.begin() + v + 1);
  num_classes = canonicalize(prefix);
  std::copy(prefix.begin(), prefix.end(), cls.begin());
}

// A partition minimising cut(P) - lambda |P| (Cunningham's optimal attack).
std::vector<int> optimalAttack(int n, const std::vector<Edge>& edges, double lambda) {
  std::vector<int> cls(static_cast<std::size_t>(n), -1);
  cls[0] = 0;
  int num_classes = 1;
  for (int v = 1; v < n; ++v) addVertex(edges, lambda, v, cls, num_classes);
  return cls;
}

std::vector<int> components(int n, const std::vector<Edge>& edges, int& count) {
  std::vector<int> parent(static_cast<std::size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[static_cast<std::size_t>(x)] != x) {
      int& p = parent[static_cast<std::size_t>(x)];
      p = parent[static_cast<std::size_t>(p)];
      x = p;
    }
    return x;
  };
  for (const Edge& e : edges) {
    const int a = find(e.u);
    const int b = find(e.v);
    if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }
  std::vector<int> cls(static_cast<std::size_t>(n));
  for (int x = 0; x < n; ++x) cls[static_cast<std::size_t>(x)] = find(x);
  count = canonicalize(cls);
  return cls;
}

std::vector<Edge> validated(int n, const std::vector<UndirectedEdge>& in) {
  if (n < 2) throw std::invalid_argument("graphStrength: need at least 2 vertices");
  std::vector<Edge> out;
  out.reserve(in.size());
  for (const UndirectedEdge& e : in) {
    if (e.u < 0 || e.u >= n || e.v < 0 || e.v >= n) {
      throw std::invalid_argument("graphStrength: edge {" + std::to_string(e.u) + "," +
                                  std::to_string(e.v) + "} names a vertex outside 0.." +
                                  std::to_string(n - 1));
    }
    if (!std::isfinite(e.capacity) || e.capacity < 0.0) {
      throw std::invalid_argument("graphStrength: capacity must be finite and non-negative");
    }
    if (e.u != e.v && e.capacity > 0.0) out.push_back({e.u, e.v, e.capacity});
  }
  return out;
}

}  // namespace

StrengthResult graphStrength(int num_vertices, const std::vector<UndirectedEdge>& edges_in) {
  const int n = num_vertices;
  const std::vector<Edge> edges = validated(n, edges_in);

  int num_components = 0;
  std::vector<int> comp = components(n, edges, num_components);
  if (num_components > 1) return {0.0, std::move(comp)};

  double total = 0.0;
  for (const Edge& e : edges) total += e.c;

  std::vector<int> best(static_cast<std::size_t>(n));
  std::iota(best.begin(), best.end(), 0);
  double lambda = total / static_cast<double>(n - 1);

  // Exact arithmetic needs at most n-1 steps; the cap only guards against rounding.
  for (int iter = 0; iter < 2 * n + 2; ++iter) {
    std::vector<int> cls = optimalAttack(n, edges, lambda);
    const int parts = canonicalize(cls);
    if (parts < 2) break;  // the trivial partition is optimal: h(lambda) = 0
    const double cut = crossingCapacity(edges, cls);
    const double slope = static_cast<double>(parts - 1);
    // h(lambda) >= -tolerance, the tolerance relative to the magnitude of the terms
    // (not to the total capacity, which may dwarf a weak cut).
    if (cut - lambda * slope >= -kRelativeTolerance * lambda * slope) break;
    const double next = cut / slope;
    if (!(next < lambda)) break;  // no progress (rounding): lambda is as good as it gets
    lambda = next;
    best = std::move(cls);
  }
  return {lambda, std::move(best)};
}

double partitionStrengthValue(int num_vertices, const std::vector<UndirectedEdge>& edges_in,
                              const std::vector<int>& partition_class) {
  const std::vector<Edge> edges = validated(num_vertices, edges_in);
  if (partition_class.size() != static_cast<std::size_t>(num_vertices)) {
    throw std::invalid_argument("partitionStrengthValue: one class id per vertex expected");
  }
  for (int c : partition_class) {
    if (c < 0) throw std::invalid_argument("partitionStrengthValue: class ids must be >= 0");
  }
  std::vector<int> ids = partition_class;
  std::sort(ids.begin(), ids.end());
  const auto parts = std::unique(ids.begin(), ids.end()) - ids.begin();
  if (parts < 2) return std::numeric_limits<double>::infinity();
  return crossingCapacity(edges, partition_class) / static_cast<double>(parts - 1);
}

}  // namespace blink::treegen
