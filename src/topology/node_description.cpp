#include "topology/node_description.hpp"

#include <cmath>
#include <fstream>
#include <map>

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

}  // namespace

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
  addNetworkUplinks(node, options.discover.table, [&](const Device& nic) {
    const double gbps = nicPortGbps(options.sysfs_root, nic.model);
    BLINK_LOG(Info, "discover: " << nic.id << " (" << nic.model << ") port speed "
                                 << (gbps > 0.0 ? std::to_string(gbps) + " GB/s from sysfs"
                                                : std::string("unknown: ") + kDefaultNicGeneration +
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
