#include "plan/node_layout.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>

namespace blink::plan {
namespace {

// Total capacity (GB/s) of the links from u to v.
double hopCapacity(const topo::Topology& t, topo::Vertex u, topo::Vertex v) {
  double cap = 0.0;
  for (topo::Edge e : t.linksBetween(u, v)) cap += t.link(e).capacity();
  return cap;
}

}  // namespace

std::vector<topo::Vertex> shortestWidestRoute(const topo::Topology& t, topo::Vertex from,
                                              topo::Vertex to,
                                              const std::function<bool(topo::Vertex)>& through) {
  const std::size_t n = t.numDevices();
  std::vector<int> dist(n, -1);
  std::vector<double> width(n, -1.0);
  std::vector<topo::Vertex> parent(n, from);
  std::vector<topo::Vertex> order{from};
  dist[from] = 0;
  width[from] = std::numeric_limits<double>::infinity();
  // Breadth first, layer by layer, so every predecessor of a vertex on a shortest
  // path is final before the vertex relays anything.
  for (std::size_t i = 0; i < order.size(); ++i) {
    const topo::Vertex v = order[i];
    if (v == to) continue;
    for (topo::Edge e : boost::make_iterator_range(boost::out_edges(v, t.graph()))) {
      const topo::Vertex u = t.target(e);
      if (u != to && !through(u)) continue;
      if (dist[u] < 0) {
        dist[u] = dist[v] + 1;
        order.push_back(u);
      }
      if (dist[u] != dist[v] + 1) continue;
      const double w = std::min(width[v], hopCapacity(t, v, u));
      if (w > width[u]) {
        width[u] = w;
        parent[u] = v;
      }
    }
  }
  if (dist[to] < 0) return {};
  std::vector<topo::Vertex> route{to};
  while (route.back() != from) route.push_back(parent[route.back()]);
  std::reverse(route.begin(), route.end());
  return route;
}

double bottleneckGbps(const topo::Topology& t, const std::vector<topo::Vertex>& route) {
  double w = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k + 1 < route.size(); ++k) {
    w = std::min(w, hopCapacity(t, route[k], route[k + 1]));
  }
  return w;
}

std::function<bool(topo::Vertex)> insideNode(const topo::Topology& t, int node) {
  return [&t, node](topo::Vertex v) {
    const auto& d = t.device(v);
    return d.node == node && d.kind != topo::DeviceKind::Gpu && d.kind != topo::DeviceKind::Nic;
  };
}

NodeTopology nodeTopology(const topo::Topology& t, int node, const HopSet& without) {
  NodeTopology out;
  out.sub = topo::Topology(t.name() + " node " + std::to_string(node));
  std::map<topo::Vertex, topo::Vertex> to_sub;
  for (topo::Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
    const auto& d = t.device(v);
    if (d.node != node || d.kind == topo::DeviceKind::Nic ||
        d.kind == topo::DeviceKind::NetSwitch) {
      continue;
    }
    to_sub[v] = out.sub.addDevice(d);
    out.to_full.push_back(v);
  }
  for (topo::Edge e : t.links()) {
    auto s = to_sub.find(t.source(e)), d = to_sub.find(t.target(e));
    if (s != to_sub.end() && d != to_sub.end() && !without.contains({t.source(e), t.target(e)})) {
      out.sub.addLink(s->second, d->second, t.link(e));
    }
  }
  return out;
}

bool gpusConnected(const topo::Topology& t) {
  const auto gpus = t.gpus();
  if (gpus.size() < 2) return true;
  for (bool forward : {true, false}) {
    std::vector<bool> seen(t.numDevices(), false);
    std::vector<topo::Vertex> stack{gpus.front()};
    seen[gpus.front()] = true;
    while (!stack.empty()) {
      const topo::Vertex v = stack.back();
      stack.pop_back();
      for (topo::Edge e : t.links()) {
        const topo::Vertex from = forward ? t.source(e) : t.target(e);
        const topo::Vertex to = forward ? t.target(e) : t.source(e);
        if (from == v && !seen[to]) {
          seen[to] = true;
          stack.push_back(to);
        }
      }
    }
    for (topo::Vertex g : gpus) {
      if (!seen[g]) return false;
    }
  }
  return true;
}

treegen::TreeSet toFull(treegen::TreeSet set, const std::vector<topo::Vertex>& to_full) {
  for (auto& tree : set.trees) {
    for (auto& edge : tree.edges) {
      edge.from = to_full[edge.from];
      edge.to = to_full[edge.to];
      for (auto& v : edge.route) v = to_full[v];
    }
  }
  return set;
}

NodeLayout nodeLayout(const topo::Topology& t) {
  NodeLayout out;
  const auto gpus = t.gpus();
  std::set<int> ids;
  for (topo::Vertex g : gpus) ids.insert(t.device(g).node);
  out.node_ids.assign(ids.begin(), ids.end());
  out.ranks.resize(out.node_ids.size());
  for (int r = 0; r < static_cast<int>(gpus.size()); ++r) {
    const int k = static_cast<int>(
        std::lower_bound(out.node_ids.begin(), out.node_ids.end(), t.device(gpus[r]).node) -
        out.node_ids.begin());
    out.node_of_rank.push_back(k);
    out.local_of_rank.push_back(static_cast<int>(out.ranks[k].size()));
    out.ranks[k].push_back(r);
  }
  // Ports: see NodeLayout.
  out.nic.assign(gpus.size(), std::nullopt);
  out.ports.resize(out.node_ids.size());
  for (std::size_t k = 0; k < out.node_ids.size(); ++k) {
    std::vector<topo::Vertex> nics;
    for (topo::Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
      if (t.device(v).kind == topo::DeviceKind::Nic && t.device(v).node == out.node_ids[k]) {
        nics.push_back(v);
      }
    }
    const auto& ranks = out.ranks[k];
    // hops[i][n]: route length from the i-th GPU to the n-th NIC (0: unreachable).
    std::vector<std::vector<std::size_t>> hops(ranks.size(), std::vector<std::size_t>(nics.size()));
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      for (std::size_t n = 0; n < nics.size(); ++n) {
        hops[i][n] =
            shortestWidestRoute(t, gpus[ranks[i]], nics[n], insideNode(t, out.node_ids[k])).size();
      }
    }
    const bool spare_nics = nics.size() > ranks.size();
    std::vector<int> load(nics.size(), 0);
    std::vector<std::vector<std::size_t>> mine(ranks.size());  // NIC indices per GPU
    if (spare_nics) {
      // A NIC of its own for every GPU: the closest (GPU, NIC) pairs first.
      std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> pairs;  // hops, GPU, NIC
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        for (std::size_t n = 0; n < nics.size(); ++n) {
          if (hops[i][n] > 0) pairs.emplace_back(hops[i][n], i, n);
        }
      }
      std::sort(pairs.begin(), pairs.end());
      for (auto [h, i, n] : pairs) {
        if (mine[i].empty() && load[n] == 0) {
          mine[i].push_back(n);
          ++load[n];
        }
      }
    } else {
      // Every GPU its nearest NIC, ties to the least loaded.
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        std::size_t best = nics.size();
        for (std::size_t n = 0; n < nics.size(); ++n) {
          if (hops[i][n] == 0) continue;
          if (best == nics.size() || hops[i][n] < hops[i][best] ||
              (hops[i][n] == hops[i][best] && load[n] < load[best])) {
            best = n;
          }
        }
        if (best < nics.size()) {
          mine[i].push_back(best);
          ++load[best];
        }
      }
    }
    // NICs nobody has yet: to the GPUs with the fewest ports, nearest first.
    for (std::size_t n = 0; n < nics.size(); ++n) {
      if (load[n] > 0) continue;
      std::size_t best = ranks.size();
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (hops[i][n] == 0) continue;
        if (best == ranks.size() || mine[i].size() < mine[best].size() ||
            (mine[i].size() == mine[best].size() && hops[i][n] < hops[best][n])) {
          best = i;
        }
      }
      if (best < ranks.size()) {
        mine[best].push_back(n);
        ++load[n];
      }
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (mine[i].empty()) out.ports[k].push_back({ranks[i], std::nullopt});
      for (std::size_t n : mine[i]) out.ports[k].push_back({ranks[i], nics[n]});
      if (!mine[i].empty()) out.nic[ranks[i]] = nics[mine[i].front()];
    }
  }
  return out;
}

bool isMultiNode(const topo::Topology& topology) {
  std::set<int> nodes;
  for (topo::Vertex g : topology.gpus()) nodes.insert(topology.device(g).node);
  return nodes.size() >= 2;
}

}  // namespace blink::plan
