#include "topology/node_description.hpp"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include "common/error.hpp"
#include "common/log.hpp"
#include "topology/topology_json.hpp"

namespace blink::topo {
namespace {

constexpr const char* kNetSwitchId = "netsw0";
constexpr const char* kVirtualNicId = "vnic0";
constexpr const char* kVirtualNicPcie = "pcie3x16";

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The devices of `t` that `keep` accepts, with the links among them (each through
// `edit`); old vertex -> new vertex in `renumber`.
Topology copyOf(const Topology& t, const std::function<bool(const Device&)>& keep,
                std::map<Vertex, Vertex>& renumber,
                const std::function<Link(const Device&, const Device&, Link)>& edit = nullptr) {
  Topology out(t.name());
  for (Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
    if (keep(t.device(v))) renumber[v] = out.addDevice(t.device(v));
  }
  for (Edge e : t.links()) {
    auto s = renumber.find(t.source(e)), d = renumber.find(t.target(e));
    if (s == renumber.end() || d == renumber.end()) continue;
    out.addLink(s->second, d->second,
                edit ? edit(t.device(t.source(e)), t.device(t.target(e)), t.link(e)) : t.link(e));
  }
  return out;
}

// Whether hwloc's NIC `d` is the network device `nic`: by OS name, or by PCI function
// (hwloc may name an InfiniBand port's NIC ib0 where the list has mlx5_0:1).
bool isHostNic(const Device& d, const HostNic& nic) {
  return (!d.model.empty() && (d.model == nic.os_name || d.model == nic.device)) ||
         (!d.pci_bus_id.empty() && d.pci_bus_id == nic.pci_bus_id);
}

// The hwloc topology with options.nics as its NICs (NodeDescribeOptions::nics).
Topology withHostNics(const Topology& hw, const std::vector<HostNic>& nics,
                      const LinkTable& table) {
  std::map<Vertex, Vertex> renumber;
  Topology out = copyOf(
      hw, [](const Device& d) { return d.kind != DeviceKind::Nic; }, renumber);
  for (std::size_t k = 0; k < nics.size(); ++k) {
    const HostNic& nic = nics[k];
    std::optional<Vertex> found;
    for (Vertex v : boost::make_iterator_range(boost::vertices(hw.graph()))) {
      const Device& d = hw.device(v);
      if (d.kind == DeviceKind::Nic && isHostNic(d, nic)) {
        found = v;
      }
    }
    Device d = found ? hw.device(*found) : makeDevice("", DeviceKind::Nic, 0);
    d.id = "nic" + std::to_string(k);
    d.model = nic.device;
    if (!found) d.numa = nic.numa;
    const Vertex v = out.addDevice(d);
    if (found) {
      for (Edge e : hw.links()) {
        if (hw.source(e) == *found && renumber.count(hw.target(e))) {
          out.addLink(v, renumber.at(hw.target(e)), hw.link(e));
        } else if (hw.target(e) == *found && renumber.count(hw.source(e))) {
          out.addLink(renumber.at(hw.source(e)), v, hw.link(e));
        }
      }
      continue;
    }
    // Not a PCI device hwloc shows: on the CPU of its NUMA node, else the first CPU.
    std::optional<Vertex> cpu;
    for (Vertex c : boost::make_iterator_range(boost::vertices(out.graph()))) {
      const Device& dc = out.device(c);
      if (dc.kind != DeviceKind::Cpu) continue;
      if (!cpu || (dc.numa == nic.numa && nic.numa >= 0 && out.device(*cpu).numa != nic.numa)) {
        cpu = c;
      }
    }
    if (cpu) out.addDuplexLink(v, *cpu, table.makeLink(kVirtualNicPcie));
  }
  for (Vertex v : boost::make_iterator_range(boost::vertices(hw.graph()))) {
    const Device& d = hw.device(v);
    bool listed = false;
    for (const HostNic& nic : nics) listed = listed || isHostNic(d, nic);
    if (d.kind == DeviceKind::Nic && !listed) {
      BLINK_LOG(Info, "discover: hwloc's " << d.id << " ("
                                           << (d.model.empty() ? "no OS device" : d.model)
                                           << ") left out: not a network device that is up here");
    }
  }
  return out;
}

}  // namespace

int hostNicIndex(const Device& nic) {
  if (nic.kind != DeviceKind::Nic) return -1;
  const auto dot = nic.id.rfind('.');
  const std::string local = dot == std::string::npos ? nic.id : nic.id.substr(dot + 1);
  if (local.size() < 4 || local.compare(0, 3, "nic") != 0) return -1;
  int k = 0;
  for (std::size_t i = 3; i < local.size(); ++i) {
    if (local[i] < '0' || local[i] > '9' || k > 100000) return -1;
    k = k * 10 + (local[i] - '0');
  }
  return k;
}

Topology withMeasuredNicRates(const Topology& node, const std::vector<double>& measured) {
  std::map<Vertex, Vertex> renumber;
  auto rate = [&](const Device& d) {
    const int k = hostNicIndex(d);
    return k >= 0 && k < static_cast<int>(measured.size()) ? measured[static_cast<std::size_t>(k)]
                                                           : 0.0;
  };
  return copyOf(
      node, [](const Device&) { return true; }, renumber,
      [&](const Device& from, const Device& to, Link link) {
        const bool uplink = (from.kind == DeviceKind::Nic && to.kind == DeviceKind::NetSwitch) ||
                            (to.kind == DeviceKind::Nic && from.kind == DeviceKind::NetSwitch);
        const double gbps = rate(from.kind == DeviceKind::Nic ? from : to);
        if (uplink && gbps > 0.0 && gbps < link.gbps * link.multiplicity) {
          link.gbps = gbps / link.multiplicity;
          link.source = LinkSource::Measured;
        }
        return link;
      });
}

double nicPortGbps(const std::string& sysfs_root, const std::string& os_name) {
  if (sysfs_root.empty() || os_name.empty() || os_name.find('/') != std::string::npos) return 0.0;
  // Ethernet: Mb/s, -1 when the driver does not know (virtio).
  const std::string megabits = firstLine(sysfs_root + "/class/net/" + os_name + "/speed");
  if (!megabits.empty()) {
    const double mbps = std::atof(megabits.c_str());
    return mbps > 0.0 ? mbps / 8000.0 : 0.0;
  }
  // InfiniBand: "100 Gb/sec (4X EDR)".
  const std::string rate = firstLine(sysfs_root + "/class/infiniband/" + os_name + "/ports/1/rate");
  const double gbits = std::atof(rate.c_str());
  return gbits > 0.0 ? gbits / 8.0 : 0.0;
}

Link nicUplink(double port_gbps, const LinkTable& table) {
  if (!(port_gbps > 0.0)) return table.makeLink(kDefaultNicGeneration);
  const LinkGeneration* nearest = nullptr;
  for (const LinkGeneration& g : table.all()) {
    if (g.kind != LinkKind::Network) continue;
    if (nearest == nullptr ||
        std::fabs(g.gbps - port_gbps) < std::fabs(nearest->gbps - port_gbps)) {
      nearest = &g;
    }
  }
  if (nearest == nullptr) return table.makeLink(kDefaultNicGeneration);
  Link link = table.makeLink(nearest->name);
  if (link.source != LinkSource::Override) {
    link.gbps = port_gbps;
    link.source = LinkSource::Sysfs;
  }
  return link;
}

void addNetworkUplinks(Topology& node, const LinkTable& table,
                       const std::function<double(const Device&)>& port_gbps_of) {
  std::vector<Vertex> nics;
  for (Vertex v : boost::make_iterator_range(boost::vertices(node.graph()))) {
    if (node.device(v).kind == DeviceKind::Nic) nics.push_back(v);
  }
  if (nics.empty()) return;
  Device net = makeDevice(kNetSwitchId, DeviceKind::NetSwitch, -1);
  net.model = "network";
  const Vertex sw = node.addDevice(net);
  for (Vertex nic : nics)
    node.addDuplexLink(nic, sw, nicUplink(port_gbps_of(node.device(nic)), table));
}

Topology describeNode(const NodeDescribeOptions& options) {
  Topology node = discoverLocalTopology(options.discover);
  node.setName("");
  const bool listed = options.nics && !options.nics->empty();
  if (listed) node = withHostNics(node, *options.nics, options.discover.table);
  addNetworkUplinks(node, options.discover.table, [&](const Device& nic) {
    const int k = hostNicIndex(nic);
    const double gbps = listed && k >= 0 && k < static_cast<int>(options.nics->size())
                            ? (*options.nics)[static_cast<std::size_t>(k)].gbps
                            : nicPortGbps(options.sysfs_root, nic.model);
    BLINK_LOG(Info,
              "discover: " << nic.id << " " << nic.model << " "
                           << (gbps > 0.0 ? gbitText(gbps) + " from sysfs"
                                          : std::string("speed unknown: ") + kDefaultNicGeneration +
                                                " from the link table"));
    return gbps;
  });
  return node;
}

std::string serializeNode(const Topology& node) {
  return toJson(node);
}

std::uint64_t descriptionHash(std::string_view serialized) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : serialized) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

Topology mergeNodes(const std::vector<const Topology*>& nodes, const LinkTable& table,
                    bool keep_gpus) {
  if (nodes.empty()) throw Error(blinkInternalError, "mergeNodes of no node");
  const bool multi = nodes.size() > 1;
  Topology out;
  std::optional<Vertex> cluster_switch;
  if (multi) {
    Device net = makeDevice(kNetSwitchId, DeviceKind::NetSwitch, -1);
    net.model = "network";
    cluster_switch = out.addDevice(net);
  }
  int gpu_offset = 0;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const Topology& node = *nodes[k];
    const std::string prefix = multi ? "n" + std::to_string(k) + "." : "";
    std::map<Vertex, Vertex> renumber;
    int gpus = 0;
    bool has_uplink = false;
    for (Vertex v : boost::make_iterator_range(boost::vertices(node.graph()))) {
      Device d = node.device(v);
      if (d.kind == DeviceKind::NetSwitch) {
        if (multi) renumber[v] = *cluster_switch;
        continue;
      }
      if (d.kind == DeviceKind::Gpu) {
        if (!keep_gpus) continue;
        ++gpus;
        d.gpu_index += gpu_offset;
      }
      d.id = prefix + d.id;
      d.node = static_cast<int>(k);
      renumber[v] = out.addDevice(std::move(d));
    }
    for (Edge e : node.links()) {
      auto s = renumber.find(node.source(e)), t = renumber.find(node.target(e));
      if (s == renumber.end() || t == renumber.end()) continue;
      has_uplink = has_uplink || t->second == cluster_switch;
      out.addLink(s->second, t->second, node.link(e));
    }
    if (multi && !has_uplink) {
      // No NIC found (a VM without one hwloc recognises, or emulated nodes): the node
      // still reaches the others, through a NIC modelled from the link table.
      auto cpu = out.find(prefix + "cpu0");
      if (!cpu) {
        throw Error(blinkInvalidInput,
                    "node " + std::to_string(k) + " has neither a NIC nor a cpu0");
      }
      Device nic = makeDevice(prefix + kVirtualNicId, DeviceKind::Nic, static_cast<int>(k));
      nic.model = std::string("virtual NIC (no NIC discovered; ") + kDefaultNicGeneration + ")";
      const Vertex vnic = out.addDevice(nic);
      out.addDuplexLink(vnic, *cpu, table.makeLink(kVirtualNicPcie));
      out.addDuplexLink(vnic, *cluster_switch, table.makeLink(kDefaultNicGeneration));
    }
    gpu_offset += gpus;
  }
  return out;
}

}  // namespace blink::topo
