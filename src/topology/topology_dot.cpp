#include "topology/topology_dot.hpp"

#include <map>
#include <set>
#include <sstream>

namespace blink::topo {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

const char* shapeOf(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu:
      return "box, style=filled, fillcolor=\"#c6f1c6\"";
    case DeviceKind::Cpu:
      return "box3d, style=filled, fillcolor=\"#c6dcf1\"";
    case DeviceKind::PciSwitch:
      return "ellipse, style=filled, fillcolor=\"#eeeeee\"";
    case DeviceKind::NvSwitch:
      return "hexagon, style=filled, fillcolor=\"#b8e0b8\"";
    case DeviceKind::Nic:
      return "cds, style=filled, fillcolor=\"#f1e2c6\"";
    case DeviceKind::NetSwitch:
      return "doubleoctagon, style=filled, fillcolor=\"#f1c6c6\"";
  }
  return "box";
}

const char* colourOf(LinkKind kind) {
  switch (kind) {
    case LinkKind::NvLink:
      return "#2e8b2e";
    case LinkKind::Pcie:
      return "#555555";
    case LinkKind::Smp:
      return "#1f5fa8";
    case LinkKind::Network:
      return "#b03030";
    case LinkKind::SharedMemory:
      return "#8a6d1f";
  }
  return "black";
}

std::string label(const Link& link) {
  std::ostringstream out;
  if (link.multiplicity > 1) out << link.multiplicity << "x";
  out << link.gbps;
  return out.str();
}

}  // namespace

std::string toDot(const Topology& topology) {
  std::ostringstream out;
  out << "// " << topology.name() << ": edge labels are lanes x GB/s per direction\n";
  out << "digraph " << quoted(topology.name()) << " {\n";
  out << "  graph [overlap=false, splines=true, fontname=\"Helvetica\", label="
      << quoted(topology.name()) << "];\n";
  out << "  node [fontname=\"Helvetica\", fontsize=10];\n";
  out << "  edge [fontname=\"Helvetica\", fontsize=8];\n";

  std::map<int, std::vector<Vertex>> by_node;
  for (Vertex v : boost::make_iterator_range(boost::vertices(topology.graph()))) {
    by_node[topology.device(v).node].push_back(v);
  }
  bool clustered = topology.numNodes() > 1;
  for (const auto& [node, vertices] : by_node) {
    std::string indent = "  ";
    if (clustered && node >= 0) {
      out << "  subgraph cluster_node" << node << " {\n    label=\"node " << node << "\";\n";
      indent = "    ";
    }
    for (Vertex v : vertices) {
      const Device& d = topology.device(v);
      std::string text = d.id;
      if (d.kind == DeviceKind::Gpu) text += "\\nGPU " + std::to_string(d.gpu_index);
      out << indent << quoted(d.id) << " [shape=" << shapeOf(d.kind) << ", label=\"" << text
          << "\"];\n";
    }
    if (clustered && node >= 0) out << "  }\n";
  }

  std::set<Edge> drawn;
  for (Edge e : topology.links()) {
    if (drawn.contains(e)) continue;
    drawn.insert(e);
    const Link& link = topology.link(e);
    Vertex u = topology.source(e), v = topology.target(e);
    bool both = false;
    for (Edge back : topology.linksBetween(v, u)) {
      if (!drawn.contains(back) && topology.link(back) == link) {
        drawn.insert(back);
        both = true;
        break;
      }
    }
    out << "  " << quoted(topology.device(u).id) << " -> " << quoted(topology.device(v).id)
        << " [color=\"" << colourOf(link.kind) << "\", label=\"" << label(link) << "\""
        << (both ? ", dir=both" : "")
        << (link.kind == LinkKind::NvLink ? ", penwidth=" + std::to_string(link.multiplicity + 1)
                                          : std::string())
        << "];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace blink::topo
