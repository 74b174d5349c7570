#include "topology/topology_text.hpp"

#include <iomanip>
#include <map>
#include <set>
#include <sstream>

namespace blink::topo {
namespace {

std::string plural(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string gbps(double value) {
  std::ostringstream out;
  out << std::setprecision(4) << value;
  return out.str();
}

}  // namespace

std::string describeTopology(const Topology& t) {
  std::ostringstream out;
  std::map<DeviceKind, std::size_t> devices;
  for (Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
    devices[t.device(v).kind]++;
  }
  out << "Topology " << t.name() << ": " << plural(static_cast<std::size_t>(t.numNodes()), "node");
  for (const auto& [kind, count] : devices) {
    out << ", " << count << " " << toString(kind);
  }
  out << "\n";

  std::map<LinkKind, std::pair<std::size_t, int>> links;  // directed links, lanes
  for (Edge e : t.links()) {
    auto& entry = links[t.link(e).kind];
    entry.first++;
    entry.second += t.link(e).multiplicity;
  }
  out << "Directed links: " << t.numLinks();
  for (const auto& [kind, entry] : links) {
    out << ", " << toString(kind) << " " << entry.first << " (" << entry.second << " lanes)";
  }
  out << "\n";

  auto gpus = t.gpus();
  if (gpus.empty()) {
    out << "CPU-only: no GPUs, so ranks on a node exchange data through shared memory.\n";
    return out.str();
  }
  // Each cell is padded to its column's width and always followed by two spaces,
  // so a value wider than its column pushes the rest along instead of running on.
  auto cell = [](const std::string& text, std::size_t width) {
    return text + std::string(text.size() < width ? width - text.size() + 2 : 2, ' ');
  };
  out << "\n  " << cell("GPU", 3) << cell("id", 10) << cell("node", 4) << cell("numa", 4)
      << cell("NVLink out", 11) << cell("PCIe out", 11) << "peers over NVLink (lanes)\n";
  for (Vertex g : gpus) {
    const Device& d = t.device(g);
    double nv = 0.0, pcie = 0.0;
    std::string peers;
    for (Edge e : boost::make_iterator_range(boost::out_edges(g, t.graph()))) {
      const Link& l = t.link(e);
      if (l.kind == LinkKind::NvLink) {
        nv += l.capacity();
        peers += (peers.empty() ? "" : " ") + t.device(t.target(e)).id + "(" +
                 std::to_string(l.multiplicity) + ")";
      } else if (l.kind == LinkKind::Pcie) {
        pcie += l.capacity();
      }
    }
    out << "  " << cell(std::to_string(d.gpu_index), 3) << cell(d.id, 10)
        << cell(std::to_string(d.node), 4) << cell(d.numa >= 0 ? std::to_string(d.numa) : "-", 4)
        << cell(gbps(nv) + " GB/s", 11) << cell(gbps(pcie) + " GB/s", 11) << peers << "\n";
  }

  bool any_direct = false;
  for (Edge e : t.links()) {
    any_direct |= t.link(e).kind == LinkKind::NvLink &&
                  t.device(t.source(e)).kind == DeviceKind::Gpu &&
                  t.device(t.target(e)).kind == DeviceKind::Gpu;
  }
  if (any_direct) {
    out << "\n  NVLink lanes GPU -> GPU\n       ";
    for (Vertex g : gpus) out << std::right << std::setw(4) << t.device(g).gpu_index;
    out << "\n";
    for (Vertex a : gpus) {
      out << "  " << std::right << std::setw(4) << t.device(a).gpu_index << " ";
      for (Vertex b : gpus) {
        int lanes = 0;
        for (Edge e : t.linksBetween(a, b)) {
          if (t.link(e).kind == LinkKind::NvLink) lanes += t.link(e).multiplicity;
        }
        out << std::setw(4) << (a == b ? std::string("-") : std::to_string(lanes));
      }
      out << "\n";
    }
  }
  return out.str();
}

std::string listDevicesAndLinks(const Topology& t) {
  std::ostringstream out;
  out << "Devices (" << t.numDevices() << "):\n";
  for (Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
    const Device& d = t.device(v);
    out << "  " << std::left << std::setw(14) << d.id << std::setw(11) << toString(d.kind)
        << "node " << std::setw(3) << d.node;
    if (d.kind == DeviceKind::Gpu) out << " gpu_index " << d.gpu_index;
    if (d.numa >= 0) out << " numa " << d.numa;
    if (!d.model.empty()) out << "  " << d.model;
    out << "\n";
  }
  out << "Links (" << t.numLinks() << " directed; GB/s per lane and direction, source):\n";
  std::set<Edge> written;
  for (Edge e : t.links()) {
    if (written.contains(e)) continue;
    written.insert(e);
    const Link& l = t.link(e);
    bool duplex = false;
    for (Edge back : t.linksBetween(t.target(e), t.source(e))) {
      if (!written.contains(back) && t.link(back) == l) {
        written.insert(back);
        duplex = true;
        break;
      }
    }
    out << "  " << std::left << std::setw(14) << t.device(t.source(e)).id
        << (duplex ? " <-> " : "  -> ") << std::setw(14) << t.device(t.target(e)).id << std::setw(8)
        << toString(l.kind) << std::setw(10) << (l.generation.empty() ? "-" : l.generation)
        << std::right << std::setw(7) << gbps(l.gbps) << " GB/s x" << l.multiplicity << "  "
        << toString(l.source) << "\n";
  }
  return out.str();
}

}  // namespace blink::topo
