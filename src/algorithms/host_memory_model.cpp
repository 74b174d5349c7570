#include "algorithms/host_memory_model.hpp"

#include <algorithm>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <functional>
#include <limits>
#include <map>

#include "common/error.hpp"

namespace blink::algorithms {
namespace {

constexpr double kBytesPerGB = 1e9;
// The software cost of one synchronisation step, as the simulator charges a step.
constexpr double kStepOverheadSeconds = 1e-6;

struct WidestPaths {
  std::vector<topo::Vertex> parent;
  std::vector<double> width;  // GB/s of the narrowest link on the widest path
};

// Widest (maximum-bottleneck) paths from `from` over `graph`: Dijkstra with min as
// the path combination and larger-is-better as the order.
template <typename G>
WidestPaths widestFrom(const G& graph, topo::Vertex from) {
  const std::size_t n = boost::num_vertices(graph);
  WidestPaths out{std::vector<topo::Vertex>(n), std::vector<double>(n, 0.0)};
  auto capacity = [&graph](const auto& e) { return graph[e].capacity(); };
  boost::dijkstra_shortest_paths(
      graph, from,
      boost::predecessor_map(out.parent.data())
          .distance_map(out.width.data())
          .weight_map(
              boost::make_function_property_map<typename boost::graph_traits<G>::edge_descriptor,
                                                double>(capacity))
          .distance_compare(std::greater<double>())
          .distance_combine([](double a, double b) { return std::min(a, b); })
          .distance_inf(0.0)
          .distance_zero(std::numeric_limits<double>::infinity()));
  return out;
}

// The edges of the path to `to` (in the direction the data moves), or empty.
std::vector<topo::Edge> pathEdges(const topo::Topology& t, const WidestPaths& w, topo::Vertex from,
                                  topo::Vertex to, bool reversed) {
  std::vector<topo::Edge> edges;
  for (topo::Vertex v = to; v != from;) {
    const topo::Vertex p = w.parent[v];
    if (p == v) return {};
    const auto links = reversed ? t.linksBetween(v, p) : t.linksBetween(p, v);
    if (links.empty()) return {};
    // The widest link of the pair carries the data.
    edges.push_back(*std::max_element(links.begin(), links.end(), [&](auto a, auto b) {
      return t.link(a).capacity() < t.link(b).capacity();
    }));
    v = p;
  }
  return edges;
}

// A rank's bytes reach memory through switches and CPUs, never through another
// rank: the graph without the other GPU vertices.
struct NotAnotherRank {
  const topo::Graph* graph = nullptr;
  topo::Vertex rank = 0;
  bool operator()(topo::Vertex v) const {
    return v == rank || (*graph)[v].kind != topo::DeviceKind::Gpu;
  }
};

// The lowest-latency route from `from`: Dijkstra on the links' one-way latencies.
struct LatencyRoutes {
  std::vector<topo::Vertex> parent;
  std::vector<double> latency_us;
};

LatencyRoutes latencyFrom(const topo::Topology& t, topo::Vertex from) {
  const std::size_t n = t.numDevices();
  LatencyRoutes out{std::vector<topo::Vertex>(n), std::vector<double>(n, 0.0)};
  auto latency = [&t](const topo::Edge& e) { return t.link(e).latency_us; };
  boost::dijkstra_shortest_paths(
      t.graph(), from,
      boost::predecessor_map(out.parent.data())
          .distance_map(out.latency_us.data())
          .weight_map(boost::make_function_property_map<topo::Edge, double>(latency)));
  return out;
}

HostMemoryPaths pathsOf(const topo::Topology& t, const std::vector<topo::Vertex>& gpus);

}  // namespace

HostMemoryPaths hostMemoryPaths(const topo::Topology& t) {
  HostMemoryPaths out;
  const std::vector<topo::Vertex> gpus = t.gpus();
  if (gpus.empty()) {
    out.why_not = "the topology has no ranks";
    return out;
  }
  const int node = t.device(gpus.front()).node;
  for (topo::Vertex g : gpus) {
    if (t.device(g).node != node) {
      out.why_not = "the ranks span nodes";
      return out;
    }
  }
  return pathsOf(t, gpus);
}

HostMemoryPaths hostMemoryPathsOfNode(const topo::Topology& t, int node) {
  std::vector<topo::Vertex> gpus;
  for (topo::Vertex g : t.gpus()) {
    if (t.device(g).node == node) gpus.push_back(g);
  }
  if (gpus.empty()) {
    HostMemoryPaths out;
    out.why_not = "node " + std::to_string(node) + " has no ranks";
    return out;
  }
  return pathsOf(t, gpus);
}

BetweenNodes betweenNodes(const topo::Topology& t) {
  BetweenNodes out;
  std::map<int, topo::Vertex> first_of;  // node -> its lowest-gpu_index rank
  for (topo::Vertex g : t.gpus()) first_of.emplace(t.device(g).node, g);
  if (first_of.size() < 2) {
    out.why_not = "the ranks share one node";
    return out;
  }
  double slowest_us = 0.0;
  out.bytes_per_s = std::numeric_limits<double>::infinity();
  for (const auto& [node, from] : first_of) {
    out.nodes.push_back(node);
    const LatencyRoutes routes = latencyFrom(t, from);
    for (const auto& [other, to] : first_of) {
      if (other == node) continue;
      double narrowest = std::numeric_limits<double>::infinity();
      for (topo::Vertex v = to; v != from;) {
        const topo::Vertex p = routes.parent[v];
        const auto links = t.linksBetween(p, v);
        if (p == v || links.empty()) {
          out.why_not =
              "no route from node " + std::to_string(node) + " to node " + std::to_string(other);
          return out;
        }
        double widest = 0.0;
        for (const auto& e : links) widest = std::max(widest, t.link(e).capacity());
        narrowest = std::min(narrowest, widest);
        v = p;
      }
      slowest_us = std::max(slowest_us, routes.latency_us[to]);
      out.bytes_per_s = std::min(out.bytes_per_s, narrowest * kBytesPerGB);
    }
  }
  out.round_seconds = slowest_us * 1e-6 + kStepOverheadSeconds;
  return out;
}

namespace {

HostMemoryPaths pathsOf(const topo::Topology& t, const std::vector<topo::Vertex>& gpus) {
  HostMemoryPaths out;
  const int node = t.device(gpus.front()).node;
  std::vector<topo::Vertex> cpus;
  for (topo::Vertex v = 0; v < t.numDevices(); ++v) {
    if (t.device(v).kind == topo::DeviceKind::Cpu && t.device(v).node == node) cpus.push_back(v);
  }
  if (cpus.empty()) {
    out.why_not = "the node has no host memory (CPU) in the topology";
    return out;
  }
  std::vector<std::vector<topo::Edge>> writes, reads;
  std::map<topo::Edge, int> users;  // ranks whose path crosses each link
  double latency = 0.0;
  for (topo::Vertex g : gpus) {
    const boost::filtered_graph<topo::Graph, boost::keep_all, NotAnotherRank> own(
        t.graph(), boost::keep_all(), NotAnotherRank{&t.graph(), g});
    const WidestPaths out_paths = widestFrom(own, g);
    const WidestPaths in_paths = widestFrom(boost::make_reverse_graph(own), g);
    // The CPU reached widest both ways; on ties the nearest (its own socket rather
    // than one behind the inter-socket link), then the first in id order.
    topo::Vertex best = cpus.front();
    double best_width = -1.0;
    std::size_t best_hops = 0;
    for (topo::Vertex c : cpus) {
      const double width = std::min(out_paths.width[c], in_paths.width[c]);
      if (width <= 0.0) continue;
      const std::size_t hops = pathEdges(t, out_paths, g, c, false).size();
      if (width > best_width * (1 + 1e-12) ||
          (width >= best_width * (1 - 1e-12) && hops < best_hops)) {
        best = c;
        best_width = width;
        best_hops = hops;
      }
    }
    if (best_width <= 0.0) {
      out.why_not = t.device(g).id + " has no path to its node's memory";
      return out;
    }
    writes.push_back(pathEdges(t, out_paths, g, best, false));
    reads.push_back(pathEdges(t, in_paths, g, best, true));
    double path_latency = 0.0;
    for (const auto& e : writes.back()) path_latency += t.link(e).latency_us * 1e-6;
    latency = std::max(latency, path_latency);
    for (const auto& e : writes.back()) ++users[e];
    for (const auto& e : reads.back()) ++users[e];
  }
  auto share = [&](const std::vector<topo::Edge>& path) {
    double rate = std::numeric_limits<double>::infinity();
    for (const auto& e : path) rate = std::min(rate, t.link(e).capacity() * kBytesPerGB / users[e]);
    return rate;
  };
  for (std::size_t r = 0; r < gpus.size(); ++r) {
    out.write_bytes_per_s.push_back(share(writes[r]));
    out.read_bytes_per_s.push_back(share(reads[r]));
    out.half_duplex.push_back(!writes[r].empty() &&
                              t.link(writes[r].front()).kind == topo::LinkKind::SharedMemory);
  }
  out.sync_seconds = kStepOverheadSeconds + 2.0 * latency;
  return out;
}

}  // namespace

double predictSeconds(const HostMemoryPaths& paths, const Traffic& traffic) {
  if (!paths.why_not.empty())
    throw Error(blinkInternalError, "host-memory model: " + paths.why_not);
  double slowest = 0.0;
  for (std::size_t r = 0; r < traffic.ranks.size() && r < paths.half_duplex.size(); ++r) {
    const double write_s = traffic.ranks[r].written / paths.write_bytes_per_s[r];
    const double read_s = traffic.ranks[r].read / paths.read_bytes_per_s[r];
    slowest =
        std::max(slowest, paths.half_duplex[r] ? write_s + read_s : std::max(write_s, read_s));
  }
  return slowest + traffic.syncs * paths.sync_seconds;
}

}  // namespace blink::algorithms
