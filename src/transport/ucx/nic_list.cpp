#include "transport/ucx/nic_list.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/env.hpp"

namespace blink::transport {
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

// "100 Gb/sec (4X EDR)" for an InfiniBand port; Mb/s (or -1) for Ethernet.
Nic withSpeed(const std::string& device, const std::string& sysfs_root) {
  Nic nic{device, 0.0, "unknown"};
  const auto colon = device.find(':');
  double gbits = 0.0;
  if (colon != std::string::npos) {
    gbits = numberOr(firstLine(sysfs_root + "/class/infiniband/" + device.substr(0, colon) +
                               "/ports/" + device.substr(colon + 1) + "/rate"),
                     0.0);
  } else {
    gbits = numberOr(firstLine(sysfs_root + "/class/net/" + device + "/speed"), -1.0) / 1000.0;
  }
  if (gbits > 0.0) {
    nic.gbps = gbits / 8.0;
    nic.speed_source = "sysfs";
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

std::vector<std::string> ipv4Interfaces() {
  std::set<std::string> names;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_RUNNING) == 0 ||
        (a->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    names.insert(a->ifa_name);
  }
  freeifaddrs(list);
  return {names.begin(), names.end()};
}

}  // namespace

std::vector<Nic> discoverNics(const std::string& sysfs_root) {
  std::vector<std::string> devices;
  const std::string chosen = env::get("BLINK_UCX_NICS").value_or("");
  if (chosen == "all") return {Nic{"", 0.0, "unknown"}};
  if (!chosen.empty()) {
    for (const std::string_view item : env::splitItems(chosen)) devices.emplace_back(item);
  } else {
    devices = activeIbPorts(sysfs_root);
    if (devices.empty()) devices = ipv4Interfaces();
  }
  std::vector<Nic> nics;
  for (const std::string& d : devices) nics.push_back(withSpeed(d, sysfs_root));
  if (nics.empty()) nics.push_back(Nic{"", 0.0, "unknown"});
  return nics;
}

}  // namespace blink::transport
