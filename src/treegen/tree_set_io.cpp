#include "treegen/tree_set_io.hpp"

#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace blink::treegen {
namespace {

using nlohmann::json;

json deviceRef(const topo::Topology& t, topo::Vertex v) {
  const auto& d = t.device(v);
  if (d.kind == topo::DeviceKind::Gpu) return d.gpu_index;
  return d.id;
}

std::string deviceLabel(const topo::Topology& t, topo::Vertex v) {
  const auto& d = t.device(v);
  return d.kind == topo::DeviceKind::Gpu ? std::to_string(d.gpu_index) : d.id;
}

double ratio(const TreeSet& s) {
  return s.bound_gbps > 0 ? s.rate_gbps / s.bound_gbps : 0.0;
}

}  // namespace

std::string toJson(const TreeSet& set, const topo::Topology& topology) {
  json doc;
  doc["collective"] = set.collective;
  doc["topology"] = set.topology;
  doc["method"] = set.method;
  doc["root"] = set.root_gpu >= 0 ? json(set.root_gpu) : json(nullptr);
  doc["rate_gbps"] = set.rate_gbps;
  doc["bound_gbps"] = set.bound_gbps;
  doc["rate_over_bound"] = ratio(set);
  doc["millis"] = set.millis;
  doc["work"] = set.work;
  doc["budget_exhausted"] = set.budget_exhausted;
  doc["notes"] = set.notes;
  json trees = json::array();
  for (const auto& tree : set.trees) {
    json j;
    j["root"] = tree.root_gpu;
    j["weight_gbps"] = tree.weight_gbps;
    json arcs = json::array(), routes = json::array();
    std::set<std::pair<topo::Vertex, topo::Vertex>> hops;
    for (const auto& edge : tree.edges) {
      json route = json::array();
      for (std::size_t i = 0; i < edge.route.size(); ++i) {
        route.push_back(deviceRef(topology, edge.route[i]));
        if (i + 1 < edge.route.size() && hops.insert({edge.route[i], edge.route[i + 1]}).second) {
          arcs.push_back(
              {deviceRef(topology, edge.route[i]), deviceRef(topology, edge.route[i + 1])});
        }
      }
      routes.push_back(std::move(route));
    }
    j["arcs"] = std::move(arcs);
    j["routes"] = std::move(routes);
    trees.push_back(std::move(j));
  }
  doc["trees"] = std::move(trees);
  return doc.dump(2) + "\n";
}

std::string toText(const TreeSet& set, const topo::Topology& topology) {
  std::ostringstream out;
  out << set.collective;
  if (set.root_gpu >= 0) out << " from GPU " << set.root_gpu;
  out << " on " << set.topology << " (" << set.method << ")\n";
  for (std::size_t i = 0; i < set.trees.size(); ++i) {
    const Tree& tree = set.trees[i];
    out << "  tree " << i + 1 << ": root " << tree.root_gpu << ", " << std::setprecision(6)
        << tree.weight_gbps << " GB/s:";
    for (const auto& edge : tree.edges) {
      out << " ";
      for (std::size_t k = 0; k < edge.route.size(); ++k) {
        out << (k ? "->" : "") << deviceLabel(topology, edge.route[k]);
      }
    }
    out << "\n";
  }
  out << std::setprecision(6) << "rate " << set.rate_gbps << " GB/s, bound " << set.bound_gbps
      << " GB/s, rate/bound " << std::fixed << std::setprecision(6) << ratio(set)
      << std::defaultfloat << ", " << set.trees.size() << " trees, " << std::setprecision(3)
      << set.millis << " ms, " << set.work << " work units"
      << (set.budget_exhausted ? " (budget exhausted)" : "") << "\n";
  for (const auto& note : set.notes) out << "note: " << note << "\n";
  return out.str();
}

std::string toDot(const TreeSet& set, const topo::Topology& topology) {
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                   "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  std::ostringstream out;
  out << "digraph \"" << set.collective << " on " << set.topology << "\" {\n";
  out << "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontsize=8];\n";
  std::set<topo::Vertex> used;
  for (const auto& tree : set.trees) {
    for (const auto& e : tree.edges) used.insert(e.route.begin(), e.route.end());
  }
  for (topo::Vertex v : used) {
    const auto& d = topology.device(v);
    out << "  \"" << d.id << "\" [shape=" << (d.kind == topo::DeviceKind::Gpu ? "box" : "ellipse")
        << ", label=\"" << deviceLabel(topology, v) << "\"];\n";
  }
  for (std::size_t i = 0; i < set.trees.size(); ++i) {
    const Tree& tree = set.trees[i];
    const char* colour = kColours[i % (sizeof kColours / sizeof *kColours)];
    for (const auto& e : tree.edges) {
      for (std::size_t k = 0; k + 1 < e.route.size(); ++k) {
        out << "  \"" << topology.device(e.route[k]).id << "\" -> \""
            << topology.device(e.route[k + 1]).id << "\" [color=\"" << colour << "\", label=\"t"
            << i + 1 << " " << std::setprecision(4) << tree.weight_gbps << "\"];\n";
      }
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace blink::treegen
