#include "topology/topology.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "common/error.hpp"

namespace blink::topo {
namespace {

constexpr std::array<std::pair<DeviceKind, std::string_view>, 6> kDeviceNames{{
    {DeviceKind::Gpu, "gpu"},
    {DeviceKind::Cpu, "cpu"},
    {DeviceKind::PciSwitch, "pci-switch"},
    {DeviceKind::NvSwitch, "nvswitch"},
    {DeviceKind::Nic, "nic"},
    {DeviceKind::NetSwitch, "net-switch"},
}};

constexpr std::array<std::pair<LinkKind, std::string_view>, 5> kLinkNames{{
    {LinkKind::NvLink, "nvlink"},
    {LinkKind::Pcie, "pcie"},
    {LinkKind::Smp, "smp"},
    {LinkKind::Network, "network"},
    {LinkKind::SharedMemory, "shm"},
}};

constexpr std::array<std::pair<LinkSource, std::string_view>, 5> kSourceNames{{
    {LinkSource::Table, "table"},
    {LinkSource::Sysfs, "sysfs"},
    {LinkSource::Measured, "measured"},
    {LinkSource::Override, "BLINK_LINK_GBPS"},
    {LinkSource::File, "file"},
}};

template <typename Table>
std::string joinNames(const Table& table) {
  std::string out;
  for (const auto& [kind, name] : table) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

std::string_view toString(DeviceKind kind) {
  for (const auto& [k, name] : kDeviceNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::string_view toString(LinkKind kind) {
  for (const auto& [k, name] : kLinkNames) {
    if (k == kind) return name;
  }
  return "?";
}

std::string_view toString(LinkSource source) {
  for (const auto& [k, name] : kSourceNames) {
    if (k == source) return name;
  }
  return "?";
}

std::optional<LinkSource> parseLinkSource(std::string_view name) {
  for (const auto& [k, n] : kSourceNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::optional<DeviceKind> parseDeviceKind(std::string_view name) {
  for (const auto& [k, n] : kDeviceNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::optional<LinkKind> parseLinkKind(std::string_view name) {
  for (const auto& [k, n] : kLinkNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string allDeviceKindNames() {
  return joinNames(kDeviceNames);
}
std::string allLinkKindNames() {
  return joinNames(kLinkNames);
}

Vertex Topology::addDevice(Device device) {
  if (device.id.empty()) throw Error(blinkInvalidInput, "a device has an empty id");
  if (find(device.id)) throw Error(blinkInvalidInput, "duplicate device id '" + device.id + "'");
  if (device.node < -1 || (device.node == -1 && device.kind != DeviceKind::NetSwitch)) {
    throw Error(blinkInvalidInput, "device '" + device.id + "' has node " +
                                       std::to_string(device.node) +
                                       " (only a net-switch may sit outside every node, as -1)");
  }
  if (device.kind == DeviceKind::Gpu) {
    if (device.gpu_index < 0) {
      throw Error(blinkInvalidInput, "GPU '" + device.id + "' needs a gpu_index >= 0");
    }
    if (findGpu(device.gpu_index)) {
      throw Error(blinkInvalidInput,
                  "GPU '" + device.id + "' reuses gpu_index " + std::to_string(device.gpu_index));
    }
  } else {
    device.gpu_index = -1;
  }
  return boost::add_vertex(std::move(device), graph_);
}

Edge Topology::addLink(Vertex from, Vertex to, Link link) {
  if (from >= numDevices() || to >= numDevices()) {
    throw Error(blinkInvalidInput, "a link names a device that does not exist");
  }
  const std::string where = "link " + graph_[from].id + " -> " + graph_[to].id;
  if (from == to) throw Error(blinkInvalidInput, where + " is a self loop");
  if (!(link.gbps >= kMinLaneGbps && link.gbps <= kMaxLaneGbps)) {
    std::ostringstream got;
    got << link.gbps;
    throw Error(blinkInvalidInput, where + " has bandwidth " + got.str() +
                                       " GB/s per lane; expected 0.001..10000 (GB/s per lane "
                                       "and direction)");
  }
  if (link.multiplicity < 1 || link.multiplicity > kMaxLanes) {
    throw Error(blinkInvalidInput, where + " has multiplicity " +
                                       std::to_string(link.multiplicity) +
                                       "; expected 1..1024 lanes");
  }
  if (!(link.latency_us >= 0.0) || !std::isfinite(link.latency_us)) {
    throw Error(blinkInvalidInput, where + " has a negative or non-finite latency");
  }
  for (Edge e : linksBetween(from, to)) {
    if (graph_[e].kind == link.kind) {
      throw Error(blinkInvalidInput, where + " (" + std::string(toString(link.kind)) +
                                         ") appears twice; use its multiplicity instead");
    }
  }
  return boost::add_edge(from, to, std::move(link), graph_).first;
}

void Topology::addDuplexLink(Vertex a, Vertex b, const Link& link) {
  addLink(a, b, link);
  addLink(b, a, link);
}

std::optional<Vertex> Topology::find(std::string_view id) const {
  for (Vertex v : boost::make_iterator_range(boost::vertices(graph_))) {
    if (graph_[v].id == id) return v;
  }
  return std::nullopt;
}

std::optional<Vertex> Topology::findGpu(int gpu_index) const {
  for (Vertex v : boost::make_iterator_range(boost::vertices(graph_))) {
    if (graph_[v].kind == DeviceKind::Gpu && graph_[v].gpu_index == gpu_index) return v;
  }
  return std::nullopt;
}

std::vector<Vertex> Topology::gpus() const {
  std::vector<Vertex> out;
  for (Vertex v : boost::make_iterator_range(boost::vertices(graph_))) {
    if (graph_[v].kind == DeviceKind::Gpu) out.push_back(v);
  }
  std::sort(out.begin(), out.end(),
            [&](Vertex a, Vertex b) { return graph_[a].gpu_index < graph_[b].gpu_index; });
  return out;
}

std::vector<Edge> Topology::links() const {
  std::vector<Edge> out;
  for (Edge e : boost::make_iterator_range(boost::edges(graph_))) out.push_back(e);
  return out;
}

std::vector<Edge> Topology::linksBetween(Vertex from, Vertex to) const {
  std::vector<Edge> out;
  for (Edge e : boost::make_iterator_range(boost::out_edges(from, graph_))) {
    if (boost::target(e, graph_) == to) out.push_back(e);
  }
  return out;
}

int Topology::numNodes() const {
  int nodes = 0;
  for (Vertex v : boost::make_iterator_range(boost::vertices(graph_))) {
    nodes = std::max(nodes, graph_[v].node + 1);
  }
  return nodes;
}

int Topology::laneCount(Vertex v, LinkKind kind) const {
  int lanes = 0;
  for (Edge e : boost::make_iterator_range(boost::out_edges(v, graph_))) {
    if (graph_[e].kind == kind) lanes += graph_[e].multiplicity;
  }
  return lanes;
}

namespace {

// Copies the devices accepted by keep_device and the links accepted by keep_link.
template <typename KeepDevice, typename KeepLink>
Topology filtered(const Topology& in, KeepDevice keep_device, KeepLink keep_link) {
  Topology out(in.name());
  std::map<Vertex, Vertex> renumber;
  for (Vertex v : boost::make_iterator_range(boost::vertices(in.graph()))) {
    if (keep_device(in.device(v))) renumber[v] = out.addDevice(in.device(v));
  }
  for (Edge e : in.links()) {
    auto s = renumber.find(in.source(e));
    auto t = renumber.find(in.target(e));
    if (s != renumber.end() && t != renumber.end() && keep_link(in.link(e))) {
      out.addLink(s->second, t->second, in.link(e));
    }
  }
  return out;
}

}  // namespace

Topology Topology::restrictToGpus(const std::vector<int>& gpu_indices) const {
  std::set<int> wanted;
  for (int g : gpu_indices) {
    if (!findGpu(g)) {
      throw Error(blinkInvalidInput, "GPU " + std::to_string(g) + " is not in topology '" + name_ +
                                         "' (it has " + std::to_string(gpus().size()) + " GPUs)");
    }
    if (!wanted.insert(g).second) {
      throw Error(blinkInvalidInput, "GPU " + std::to_string(g) + " is listed twice");
    }
  }
  Topology out = filtered(
      *this,
      [&](const Device& d) { return d.kind != DeviceKind::Gpu || wanted.contains(d.gpu_index); },
      [](const Link&) { return true; });
  std::string list;
  for (int g : gpu_indices) list += (list.empty() ? "" : ",") + std::to_string(g);
  out.setName(name_ + "[" + list + "]");
  return out;
}

Topology Topology::restrictToLinkKinds(const std::set<LinkKind>& kinds) const {
  return filtered(
      *this, [](const Device&) { return true; },
      [&](const Link& l) { return kinds.contains(l.kind); });
}

bool Topology::sameAs(const Topology& other) const {
  if (numDevices() != other.numDevices() || numLinks() != other.numLinks()) return false;
  for (Vertex v : boost::make_iterator_range(boost::vertices(graph_))) {
    auto w = other.find(graph_[v].id);
    if (!w || !(other.device(*w) == graph_[v])) return false;
  }
  using Key = std::tuple<std::string, std::string, int>;
  auto keyed = [](const Topology& t) {
    std::map<Key, Link> out;
    for (Edge e : t.links()) {
      out[{t.device(t.source(e)).id, t.device(t.target(e)).id, static_cast<int>(t.link(e).kind)}] =
          t.link(e);
    }
    return out;
  };
  return keyed(*this) == keyed(other);
}

}  // namespace blink::topo
