// What one node contributes to a job's link graph: its discovered topology plus the
// way out of it, a net-switch "netsw0" (node -1) that each NIC reaches at its port
// speed. Node descriptions travel between ranks as topology JSON; identical nodes
// (same hardware in the same slots) have byte-identical descriptions, so a job sends
// each distinct one once and recognises the others by hash.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/discover.hpp"
#include "topology/host_nics.hpp"
#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

// The generation a NIC without a readable port speed is taken as.
inline constexpr const char* kDefaultNicGeneration = "eth-100g";

struct NodeDescribeOptions {
  DiscoverOptions discover;  // the machine (or hwloc XML) to describe, and link speeds
  // Where NIC port speeds are read (<root>/class/net/<if>/speed in Mb/s,
  // <root>/class/infiniband/<dev>/ports/1/rate); "" reads none (every NIC is then
  // kDefaultNicGeneration from the table). Tests describing an XML pass "".
  std::string sysfs_root = "/sys";
  // The machine's network devices (host_nics.hpp), when the description is of this
  // machine: they become the node's NICs, "nic<k>" for the k-th, with their speeds
  // (sysfs_root is then not read). An hwloc NIC whose OS name or PCI bus id matches
  // (an InfiniBand port's ib0 is mlx5_0's PCI function) keeps its place
  // in the PCI tree; a device hwloc does not show (a veth, a VM's virtio NIC inside a
  // network namespace) hangs off the CPU of its NUMA node (else cpu0) through a
  // pcie3x16 link from the table; hwloc NICs that are not listed are dropped (the
  // traffic between nodes cannot leave through them). Unset or empty: hwloc's NICs.
  std::optional<std::vector<HostNic>> nics;
};

// The port speed of a NIC from its OS name (what discovery puts in Device::model:
// "mlx5_0", "eth0"), GB/s per direction; 0 when unknown (a virtual NIC reports -1).
double nicPortGbps(const std::string& sysfs_root, const std::string& os_name);

// The Network link of a NIC's port: the generation of `table` nearest to port_gbps
// (ties to the earlier in the table: InfiniBand before Ethernet; the name is only
// shown), at port_gbps with source Sysfs unless that generation was overridden;
// kDefaultNicGeneration from the table when port_gbps <= 0.
Link nicUplink(double port_gbps, const LinkTable& table);

// Adds "netsw0" and one duplex uplink per NIC of a one-node topology; port_gbps_of
// gives a NIC's port speed from its device (0: unknown). A topology without NICs is
// left unchanged (mergeNodes gives such a node a virtual NIC when it has peers).
void addNetworkUplinks(Topology& node, const LinkTable& table,
                       const std::function<double(const Device&)>& port_gbps_of);

// discoverLocalTopology, the NICs of options.nics merged in, + addNetworkUplinks
// with speeds from options.nics or sysfs; each NIC's speed and its source are logged
// at INFO ("nic0 eth0 10 Gbit/s from sysfs"). The name is cleared: it would be the hostname, and
// identical nodes must describe identically.
Topology describeNode(const NodeDescribeOptions& options);

// The description as it travels (topology JSON) and its 64-bit FNV-1a hash.
// `node` (a description or a job's graph) with the uplink of every NIC whose device id
// ends in "nic<k>" at measured[k] GB/s (source Measured) where that is lower than
// its speed; entries <= 0 leave it.
Topology withMeasuredNicRates(const Topology& node, const std::vector<double>& measured);

// k for a NIC device "nic<k>" or "n<j>.nic<k>" (its place in host_nics order), else -1.
int hostNicIndex(const Device& nic);

std::string serializeNode(const Topology& node);
std::uint64_t descriptionHash(std::string_view serialized);

// The job's graph of several nodes, node k described by *nodes[k] (entries may
// repeat). With more than one node: node k's devices get the prefix "n<k>." and node
// k, GPU indices run over the whole cluster in node order (as the zoo's NAME:N), and
// every uplink goes to one "netsw0"; a node without NIC gets a virtual one, "vnic0" on
// its cpu0 (pcie3x16) with a kDefaultNicGeneration uplink, both from the table. One
// node: the description without its net-switch. keep_gpus = false drops every GPU
// (a job of host ranks). The name is left for the caller.
Topology mergeNodes(const std::vector<const Topology*>& nodes, const LinkTable& table,
                    bool keep_gpus);

}  // namespace blink::topo
