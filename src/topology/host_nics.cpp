#include "topology/host_nics.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/env.hpp"

namespace blink::topo {
namespace {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

double numberOr(const std::string& text, double fallback) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    return used > 0 ? value : fallback;
  } catch (...) {
    return fallback;
  }
}

// Speed and NUMA node from sysfs: "100 Gb/sec (4X EDR)" for an InfiniBand port, Mb/s
// (or -1: a virtual interface) for Ethernet.
HostNic described(const std::string& device, const std::string& sysfs_root) {
  HostNic nic;
  nic.device = device;
  const auto colon = device.find(':');
  nic.os_name = device.substr(0, colon);
  double gbits = 0.0;
  std::string pci;
  if (colon != std::string::npos) {
    const std::string dev = sysfs_root + "/class/infiniband/" + nic.os_name;
    gbits = numberOr(firstLine(dev + "/ports/" + device.substr(colon + 1) + "/rate"), 0.0);
    pci = dev + "/device";
  } else {
    const std::string dev = sysfs_root + "/class/net/" + nic.os_name;
    gbits = numberOr(firstLine(dev + "/speed"), -1.0) / 1000.0;
    pci = dev + "/device";
  }
  if (gbits > 0.0) {
    nic.gbps = gbits / 8.0;
    nic.speed_source = "sysfs";
  } else {
    nic.speed_source = "unknown";
  }
  const double numa = numberOr(firstLine(pci + "/numa_node"), -1.0);
  nic.numa = numa >= 0.0 ? static_cast<int>(numa) : -1;
  // The device link points at the PCI device's directory, named by its bus id.
  std::error_code ec;
  const std::string target = std::filesystem::canonical(pci, ec).filename().string();
  if (!ec && target.size() == 12 && target[4] == ':' && target[7] == ':' && target[10] == '.') {
    nic.pci_bus_id = target;
  }
  return nic;
}

std::vector<std::string> activeIbPorts(const std::string& sysfs_root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& dev :
       std::filesystem::directory_iterator(sysfs_root + "/class/infiniband", ec)) {
    std::error_code port_ec;
    for (const auto& port : std::filesystem::directory_iterator(dev.path() / "ports", port_ec)) {
      if (firstLine((port.path() / "state").string()).find("ACTIVE") != std::string::npos) {
        out.push_back(dev.path().filename().string() + ":" + port.path().filename().string());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<Ipv4Interface> upIpv4Addresses() {
  std::vector<Ipv4Interface> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_RUNNING) == 0 ||
        (a->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    Ipv4Interface entry;
    entry.address = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    if (a->ifa_netmask != nullptr) {
      entry.netmask = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr);
    }
    entry.name = a->ifa_name;
    found.push_back(std::move(entry));
  }
  freeifaddrs(list);
  std::stable_sort(found.begin(), found.end(),
                   [](const Ipv4Interface& x, const Ipv4Interface& y) { return x.name < y.name; });
  return found;
}

std::vector<std::pair<std::string, std::string>> upIpv4Interfaces() {
  std::vector<std::pair<std::string, std::string>> first_of_each;
  for (const Ipv4Interface& entry : upIpv4Addresses()) {
    if (first_of_each.empty() || first_of_each.back().first != entry.name) {
      first_of_each.emplace_back(entry.name, dottedAddress(entry.address));
    }
  }
  return first_of_each;
}

std::string dottedAddress(std::uint32_t address) {
  return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 255) + "." +
         std::to_string((address >> 8) & 255) + "." + std::to_string(address & 255);
}

std::vector<HostNic> hostNicsFrom(
    const std::string& sysfs_root,
    const std::vector<std::pair<std::string, std::string>>& interfaces) {
  std::vector<std::string> devices;
  const std::string chosen = env::get("BLINK_UCX_NICS").value_or("");
  if (chosen == "all") return {};
  if (!chosen.empty()) {
    for (const std::string_view item : env::splitItems(chosen)) devices.emplace_back(item);
  } else {
    devices = activeIbPorts(sysfs_root);
    if (devices.empty()) {
      for (const auto& [name, address] : interfaces) devices.push_back(name);
    }
  }
  std::vector<HostNic> nics;
  for (const std::string& d : devices) {
    HostNic nic = described(d, sysfs_root);
    for (const auto& [name, address] : interfaces) {
      if (name == nic.os_name) nic.ipv4 = address;
    }
    nics.push_back(std::move(nic));
  }
  return nics;
}

std::vector<HostNic> hostNics() {
  return hostNicsFrom("/sys", upIpv4Interfaces());
}

std::string gbitText(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g Gbit/s", gbps * 8.0);
  return text;
}

}  // namespace blink::topo
