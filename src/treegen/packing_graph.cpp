#include "treegen/packing_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "common/error.hpp"
#include "common/log.hpp"

namespace blink::treegen {
namespace {

// The smallest q <= max_q with value*q within 1e-9 (relative) of an integer, or 0.
long long denominatorOf(double value, long long max_q) {
  for (long long q = 1; q <= max_q; ++q) {
    double scaled = value * static_cast<double>(q);
    if (std::abs(scaled - std::round(scaled)) <= 1e-9 * std::max(1.0, scaled)) return q;
  }
  return 0;
}

constexpr long long kMaxDenominator = 1'000'000;

}  // namespace

FlowNetwork PackingGraph::network(int extra_vertices) const {
  FlowNetwork net(numVertices() + extra_vertices);
  for (const auto& a : arcs) net.addArc(a.from, a.to, a.capacity);
  // Building the network costs about as much per arc as a max-flow over it.
  if (budget != nullptr) budget->spend(static_cast<std::int64_t>(2 * arcs.size()) + numVertices());
  net.chargeTo(budget);
  return net;
}

bool PackingGraph::outOfBudget() const {
  return budget != nullptr && budget->exhausted();
}

void PackingGraph::scale(Capacity factor) {
  for (auto& a : arcs) a.capacity *= factor;
  unit_gbps /= static_cast<double>(factor);
}

int PackingGraph::addVirtualVertex() {
  topo_vertex.push_back(kVirtualVertex);
  return numVertices() - 1;
}

PackingGraph buildPackingGraph(const topo::Topology& topology,
                               const std::set<topo::LinkKind>& kinds) {
  using topo::DeviceKind;
  PackingGraph g;
  const auto& tg = topology.graph();

  // Which vertices can relay: repeatedly drop non-GPU vertices with no way in or
  // no way out, and non-GPU leaves (a vertex whose only neighbour is one device
  // never helps a tree).
  std::vector<bool> alive(topology.numDevices(), true);
  auto usable = [&](topo::Edge e) {
    return (kinds.empty() || kinds.contains(topology.link(e).kind)) && alive[topology.source(e)] &&
           alive[topology.target(e)];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (topo::Vertex v : boost::make_iterator_range(boost::vertices(tg))) {
      if (!alive[v] || topology.device(v).kind == DeviceKind::Gpu) continue;
      std::set<topo::Vertex> in, out;
      for (auto e : boost::make_iterator_range(boost::in_edges(v, tg))) {
        if (usable(e)) in.insert(topology.source(e));
      }
      for (auto e : boost::make_iterator_range(boost::out_edges(v, tg))) {
        if (usable(e)) out.insert(topology.target(e));
      }
      std::set<topo::Vertex> neighbours = in;
      neighbours.insert(out.begin(), out.end());
      if (in.empty() || out.empty() || neighbours.size() < 2) {
        alive[v] = false;
        changed = true;
      }
    }
  }

  std::map<topo::Vertex, int> index;
  for (topo::Vertex v : topology.gpus()) {
    index[v] = g.numVertices();
    g.topo_vertex.push_back(v);
  }
  g.num_terminals = g.numVertices();
  for (topo::Vertex v : boost::make_iterator_range(boost::vertices(tg))) {
    if (alive[v] && topology.device(v).kind != DeviceKind::Gpu) {
      index[v] = g.numVertices();
      g.topo_vertex.push_back(v);
    }
  }

  // A common unit that makes every capacity an integer.
  long long unit_denominator = 1;
  for (topo::Edge e : topology.links()) {
    if (!usable(e)) continue;
    long long q = denominatorOf(topology.link(e).capacity(), 1000);
    if (q == 0) {
      unit_denominator = 0;
      break;
    }
    unit_denominator = std::lcm(unit_denominator, q);
    if (unit_denominator > kMaxDenominator) {
      unit_denominator = 0;
      break;
    }
  }
  if (unit_denominator == 0) {
    unit_denominator = kMaxDenominator;
    g.unit_note = "link speeds have no small common unit; capacities rounded to 1e-6 GB/s";
  }
  g.unit_gbps = 1.0 / static_cast<double>(unit_denominator);

  for (topo::Edge e : topology.links()) {
    if (!usable(e)) continue;
    PackArc arc;
    arc.from = index.at(topology.source(e));
    arc.to = index.at(topology.target(e));
    arc.capacity = static_cast<Capacity>(
        std::llround(topology.link(e).capacity() * static_cast<double>(unit_denominator)));
    arc.route = {topology.source(e), topology.target(e)};
    if (arc.capacity > 0) g.arcs.push_back(std::move(arc));
  }
  return g;
}

Capacity rootedConnectivity(const PackingGraph& g, int root) {
  FlowNetwork net = g.network();
  Capacity best = -1;
  for (int t = 0; t < g.num_terminals; ++t) {
    if (t == root) continue;
    Capacity f = net.maxFlow(root, t);
    best = best < 0 ? f : std::min(best, f);
  }
  return std::max<Capacity>(best, 0);
}

int weakestTerminal(const PackingGraph& g, int root) {
  FlowNetwork net = g.network();
  Capacity best = -1;
  int weakest = -1;
  for (int t = 0; t < g.num_terminals; ++t) {
    if (t == root) continue;
    Capacity f = net.maxFlow(root, t);
    if (best < 0 || f < best) {
      best = f;
      weakest = t;
    }
  }
  return weakest;
}

}  // namespace blink::treegen
