// The network devices of this machine that carry traffic between nodes, in one order
// that both the job's graph (node_description.hpp: NIC k is device "nic<k>") and the
// UCX transport (one worker per entry, transport/ucx/nic_list.hpp) use: the active
// InfiniBand/RoCE ports when there are any (UCX names them mlx5_0:1), else the IPv4
// interfaces that are up, loopback excluded, by name. BLINK_UCX_NICS names them
// instead (UCX_NET_DEVICES syntax), or `all` for none listed (UCX then picks its own
// devices, and the graph keeps what hwloc found).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace blink::topo {

struct HostNic {
  std::string device;        // as UCX_NET_DEVICES takes it: "eth0", "mlx5_0:1"
  std::string os_name;       // the device without its port: "eth0", "mlx5_0"
  double gbps = 0.0;         // per direction, 0 when unknown
  std::string speed_source;  // "sysfs" or "unknown"
  int numa = -1;             // the NUMA node of its PCI device, -1 when unknown
  std::string pci_bus_id;    // "0000:06:00.0", "" when it is no PCI device
  std::string ipv4;          // the interface's IPv4 address ("" when it has none)
};

// `sysfs_root` is /sys except in tests; `interfaces` are the IPv4 interfaces that are
// up (name, address), loopback excluded, as upIpv4Interfaces() lists them.
std::vector<HostNic> hostNicsFrom(
    const std::string& sysfs_root,
    const std::vector<std::pair<std::string, std::string>>& interfaces);

// hostNicsFrom("/sys", upIpv4Interfaces()), BLINK_UCX_NICS applied.
std::vector<HostNic> hostNics();

// An IPv4 address of an interface (host byte order).
struct Ipv4Interface {
  std::uint32_t address = 0;
  std::uint32_t netmask = 0;
  std::string name;  // "eth0"
};

// Every IPv4 address of the interfaces that are up and running, loopback excluded,
// by interface name (one interface's addresses in the order the system lists them).
std::vector<Ipv4Interface> upIpv4Addresses();

// The same interfaces, each once with its first address: (name, dotted address).
std::vector<std::pair<std::string, std::string>> upIpv4Interfaces();

// "10.1.0.7".
std::string dottedAddress(std::uint32_t address);

// "10 Gbit/s" (a NIC's speed as people write it).
std::string gbitText(double gbps);

}  // namespace blink::topo
