#include "treegen/undirected_splitting.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

namespace blink::treegen {
namespace {

using Route = std::vector<topo::Vertex>;

Route reversed(Route r) {
  std::reverse(r.begin(), r.end());
  return r;
}

// The route of edge e read from vertex `from`.
Route routeFrom(const RouteEdge& e, int from) {
  return e.u == from ? e.route : reversed(e.route);
}

// Adds x of u-w along `route` (from u), onto an equal edge if there is one.
void addEdge(std::vector<RouteEdge>& edges, int u, int w, Capacity x, Route route) {
  for (auto& e : edges) {
    if ((e.u == u && e.v == w && e.route == route) ||
        (e.u == w && e.v == u && e.route == reversed(route))) {
      e.capacity += x;
      return;
    }
  }
  edges.push_back({u, w, x, std::move(route)});
}

// One more than the largest vertex the edges name (and s).
int parentCount(const std::vector<RouteEdge>& edges, int s) {
  int most = s;
  for (const auto& e : edges) most = std::max({most, e.u, e.v});
  return most + 1;
}

// Pairs edges at s until none may be paired; returns the capacity left at s.
Capacity splitVertex(std::vector<RouteEdge>& edges, int s, bool halve_joins, Budget* budget) {
  while (true) {
    if (budget != nullptr) budget->spend(static_cast<std::int64_t>(edges.size()));
    std::vector<int> incident;
    std::map<int, Capacity> load;
    Capacity total = 0;
    for (int i = 0; i < static_cast<int>(edges.size()); ++i) {
      const RouteEdge& e = edges[i];
      if (e.capacity <= 0 || (e.u != s && e.v != s) || e.u == e.v) continue;
      incident.push_back(i);
      load[e.u == s ? e.v : e.u] += e.capacity;
      total += e.capacity;
    }
    if (load.size() < 2 || (budget != nullptr && budget->exhausted())) return total;
    auto other = [&](int i) { return edges[i].u == s ? edges[i].v : edges[i].u; };
    // The most loaded neighbour (ties: the lowest vertex) pairs first.
    int u = load.begin()->first;
    for (auto [v, c] : load) {
      if (c > load[u]) u = v;
    }
    std::map<int, Capacity> direct;  // capacity u has to each vertex already
    std::vector<int> component(parentCount(edges, s));
    std::iota(component.begin(), component.end(), 0);
    auto find = [&](int x) {
      while (component[x] != x) x = component[x] = component[component[x]];
      return x;
    };
    for (const auto& e : edges) {
      if (e.u == u && e.v != s) direct[e.v] += e.capacity;
      if (e.v == u && e.u != s) direct[e.u] += e.capacity;
      if (e.u != s && e.v != s) component[find(e.u)] = find(e.v);
    }
    std::vector<int> exits;
    for (int i : incident) {
      if (other(i) != u) exits.push_back(i);
    }
    // Prefer exits that join what is not yet connected without s (the other node
    // behind a network switch), then those u has little direct capacity to: new
    // routes, not more of the same.
    auto preference = [&](int i) {
      return std::make_pair(find(other(i)) == find(u), direct[other(i)]);
    };
    std::stable_sort(exits.begin(), exits.end(),
                     [&](int x, int y) { return preference(x) < preference(y); });
    const int from_u =
        *std::find_if(incident.begin(), incident.end(), [&](int i) { return other(i) == u; });
    bool split = false;
    for (int ib : exits) {
      const int w = other(ib);
      Capacity x = std::min(edges[from_u].capacity, edges[ib].capacity);
      // Joining two components, take at most half of the smaller side while s has
      // other neighbours: all of it could leave the pair an island of its own (two
      // GPUs under one PCIe switch, paired only with each other).
      if (halve_joins && find(u) != find(w) && load.size() > 2) {
        x = std::min(x, (std::min(load[u], load[w]) + 1) / 2);
      }
      for (auto [v, c] : load) {
        if (v != u && v != w) x = std::min(x, (total - 2 * c) / 2);
      }
      if (x <= 0) continue;
      Route route = joinRoutes(routeFrom(edges[from_u], u), routeFrom(edges[ib], s));
      edges[from_u].capacity -= x;
      edges[ib].capacity -= x;
      addEdge(edges, u, w, x, std::move(route));
      split = true;
      break;
    }
    std::erase_if(edges, [](const RouteEdge& e) { return e.capacity <= 0; });
    if (!split) return total;
  }
}

}  // namespace

std::vector<RouteEdge> undirectedEdges(const PackingGraph& g) {
  std::map<std::tuple<int, int, Route>, std::pair<Capacity, Capacity>> pairs;
  for (const auto& a : g.arcs) {
    if (a.from == a.to || a.capacity <= 0) continue;
    if (a.from < a.to) {
      pairs[{a.from, a.to, a.route}].first += a.capacity;
    } else {
      pairs[{a.to, a.from, reversed(a.route)}].second += a.capacity;
    }
  }
  std::vector<RouteEdge> edges;
  for (const auto& [key, caps] : pairs) {
    const Capacity both = std::min(caps.first, caps.second);
    if (both > 0) edges.push_back({std::get<0>(key), std::get<1>(key), both, std::get<2>(key)});
  }
  return edges;
}

std::vector<RouteEdge> splitOffSwitchesUndirected(const PackingGraph& g,
                                                  std::vector<RouteEdge> edges,
                                                  const topo::Topology& topology,
                                                  std::vector<std::string>* unpaired,
                                                  Capacity* capacity_scale, bool halve_joins) {
  for (auto& e : edges) e.capacity *= 2;
  *capacity_scale = 2;
  // Leaves first, counted afresh after every split: the switch with the fewest
  // switch neighbours left, then the most GPU neighbours, then the lowest index.
  // So a PCIe tree is split from its leaves inwards and a network switch only once
  // its NICs are, when its edges lead to GPUs (whose components say which pairs
  // are new connections).
  std::vector<bool> done(static_cast<std::size_t>(g.numVertices()), false);
  for (int left = g.numVertices() - g.num_terminals; left > 0; --left) {
    std::vector<std::set<int>> gpus(static_cast<std::size_t>(g.numVertices()));
    std::vector<std::set<int>> switches(gpus.size());
    for (const auto& e : edges) {
      (g.isTerminal(e.v) ? gpus : switches)[e.u].insert(e.v);
      (g.isTerminal(e.u) ? gpus : switches)[e.v].insert(e.u);
    }
    int s = -1;
    auto key = [&](int v) {
      return std::make_pair(switches[v].size(), -static_cast<long>(gpus[v].size()));
    };
    for (int v = g.num_terminals; v < g.numVertices(); ++v) {
      if (!done[v] && (s < 0 || key(v) < key(s))) s = v;
    }
    done[s] = true;
    const Capacity left_over = splitVertex(edges, s, halve_joins, g.budget);
    if (left_over > 0 && unpaired != nullptr && g.topo_vertex[s] != kVirtualVertex) {
      unpaired->push_back(topology.device(g.topo_vertex[s]).id);
    }
    std::erase_if(edges, [&](const RouteEdge& e) { return e.u == s || e.v == s; });
  }
  std::erase_if(edges, [&](const RouteEdge& e) {
    return !g.isTerminal(e.u) || !g.isTerminal(e.v) || e.u == e.v;
  });
  return edges;
}

}  // namespace blink::treegen
