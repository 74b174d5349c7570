// The link graph Blink plans on: devices (GPUs, CPU sockets, PCIe switches,
// NVSwitches, NICs, network switches) and DIRECTED links between them. A
// full-duplex cable is two links, one per direction, each with its own bandwidth.
//
// The graph is a Boost.Graph adjacency_list with bundled properties, so the
// max-flow and tree algorithms use it directly. Vertex and edge order is the order
// of insertion, which keeps everything built from a Topology deterministic.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace blink::topo {

enum class DeviceKind { Gpu, Cpu, PciSwitch, NvSwitch, Nic, NetSwitch };
enum class LinkKind { NvLink, Pcie, Smp, Network, SharedMemory };
// Where a link's speed came from: the generation table, the generation hwloc read from
// sysfs (PCIe link speed, a NIC's port rate) at that generation's table rate, a
// measurement, a BLINK_LINK_GBPS (or --link-gbps) override, or a topology file.
enum class LinkSource { Table, Sysfs, Measured, Override, File };

// Names as used in files, tools and messages ("gpu", "pci-switch", "nvlink", ...).
std::string_view toString(DeviceKind kind);
std::string_view toString(LinkKind kind);
std::optional<DeviceKind> parseDeviceKind(std::string_view name);
std::optional<LinkKind> parseLinkKind(std::string_view name);
// "table", "sysfs", "measured", "BLINK_LINK_GBPS", "file".
std::string_view toString(LinkSource source);
std::optional<LinkSource> parseLinkSource(std::string_view name);
// "gpu, cpu, ..." for error messages.
std::string allDeviceKindNames();
std::string allLinkKindNames();

struct Device {
  std::string id;  // unique within the topology: "gpu3", "cpu0", "n1.gpu3", "nvswitch2"
  DeviceKind kind = DeviceKind::Gpu;
  int node = 0;        // the server this device sits in, 0-based; -1: a net-switch between servers
  int gpu_index = -1;  // GPUs only: 0..G-1 over the whole topology; kept by allocation views
  std::string model;   // "Tesla V100-SXM2-16GB", "ConnectX-5", ... ("" if unknown)
  std::string pci_bus_id;  // "0000:06:00.0" when known
  int numa = -1;           // NUMA node when known

  bool operator==(const Device&) const = default;
};

// A device with only its identity set; fill the optional fields afterwards.
inline Device makeDevice(std::string id, DeviceKind kind, int node = 0) {
  Device d;
  d.id = std::move(id);
  d.kind = kind;
  d.node = node;
  return d;
}

struct Link {
  LinkKind kind = LinkKind::Pcie;
  double gbps = 0.0;        // bandwidth of ONE lane in this direction, GB/s (1e9 bytes/s)
  int multiplicity = 1;     // lanes bundled in parallel (e.g. 2 NVLinks between a V100 pair)
  double latency_us = 0.0;  // one-way latency of a message
  std::string generation;   // "nvlink2", "pcie3x16", "ib-edr", ... ("" if unknown)
  // Provenance only: it is part of equality (a graph that says where its speeds came
  // from differently is described differently) but nothing that plans reads it, so two
  // graphs differing only in sources give the same trees and plans.
  LinkSource source = LinkSource::Table;

  // The total bandwidth of this directed link.
  double capacity() const { return gbps * multiplicity; }
  bool operator==(const Link&) const = default;
};

// What a link may claim: a lane between 1 MB/s and 10 TB/s, at most 1024 lanes.
// Values outside are typing mistakes (a unit off by 1e9) that would make the
// integer capacity units of tree packing explode.
inline constexpr double kMinLaneGbps = 1e-3;
inline constexpr double kMaxLaneGbps = 1e4;
inline constexpr int kMaxLanes = 1024;

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Device, Link>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

class Topology {
 public:
  Topology() = default;
  explicit Topology(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  const Graph& graph() const { return graph_; }

  // Adds a device; throws blink::Error(blinkInvalidInput) on an empty or duplicate id,
  // or a GPU whose gpu_index is negative or already used.
  Vertex addDevice(Device device);
  // Adds the directed link from -> to; throws blinkInvalidInput on a self loop, a
  // bandwidth outside kMinLaneGbps..kMaxLaneGbps (NaN included), a multiplicity
  // outside 1..kMaxLanes, a negative latency, or a second link of the same kind
  // between the same ordered pair (raise multiplicity instead).
  Edge addLink(Vertex from, Vertex to, Link link);
  // A full-duplex cable: the same Link in both directions.
  void addDuplexLink(Vertex a, Vertex b, const Link& link);

  std::size_t numDevices() const { return boost::num_vertices(graph_); }
  std::size_t numLinks() const { return boost::num_edges(graph_); }
  const Device& device(Vertex v) const { return graph_[v]; }
  const Link& link(Edge e) const { return graph_[e]; }
  Vertex source(Edge e) const { return boost::source(e, graph_); }
  Vertex target(Edge e) const { return boost::target(e, graph_); }

  std::optional<Vertex> find(std::string_view id) const;
  // The vertex of the GPU with this gpu_index, if it is in the topology.
  std::optional<Vertex> findGpu(int gpu_index) const;
  // All GPU vertices, in increasing gpu_index.
  std::vector<Vertex> gpus() const;
  // Every link, in insertion order.
  std::vector<Edge> links() const;
  // The links from `from` to `to` (one per kind at most).
  std::vector<Edge> linksBetween(Vertex from, Vertex to) const;
  // Number of servers: 1 + the largest node index (0 for an empty topology).
  int numNodes() const;

  // Sum of multiplicities of `kind` links leaving v (e.g. NVLink lanes of a GPU).
  int laneCount(Vertex v, LinkKind kind) const;

  // The allocation view a job owns: only the listed GPUs (by gpu_index) remain, with
  // every link touching another GPU removed; CPUs, switches and NICs stay. Throws
  // blinkInvalidInput naming an index that is not a GPU of this topology.
  Topology restrictToGpus(const std::vector<int>& gpu_indices) const;
  // Only links of the given kinds remain (devices all stay).
  Topology restrictToLinkKinds(const std::set<LinkKind>& kinds) const;

  // Same devices (by id, all fields) and the same set of links, whatever the order.
  bool sameAs(const Topology& other) const;

 private:
  std::string name_;
  Graph graph_;
};

}  // namespace blink::topo
