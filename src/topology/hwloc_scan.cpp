#include "topology/hwloc_scan.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "common/error.hpp"

namespace blink::topo::hwloc_scan {
namespace {

constexpr unsigned kNvidiaVendorId = 0x10de;
constexpr unsigned kDisplayClass = 0x03;  // PCI base class: display controller
constexpr unsigned kNetworkClass = 0x02;  // PCI base class: network controller

bool isNvidiaGpu(hwloc_obj_t pci) {
  return pci->attr->pcidev.vendor_id == kNvidiaVendorId &&
         (pci->attr->pcidev.class_id >> 8) == kDisplayClass;
}

bool isNic(hwloc_obj_t pci) {
  return (pci->attr->pcidev.class_id >> 8) == kNetworkClass || !nicOsName(pci).empty();
}

std::tuple<unsigned, unsigned, unsigned, unsigned> busOrderKey(const PciAttributes& pci) {
  return {pci.domain, pci.bus, pci.dev, pci.func};
}

}  // namespace

HwlocHandle loadHwloc(const std::string& xml_path) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    throw Error(blinkSystemError,
                std::string("hwloc_topology_init failed: ") + std::strerror(errno));
  }
  HwlocHandle topology(raw);
  // Without this hwloc drops every PCI and OS device, and with them GPUs and NICs.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (!xml_path.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(xml_path, ec)) {
      throw Error(blinkInvalidInput,
                  "hwloc XML topology '" + xml_path + "' is not a readable file");
    }
    if (hwloc_topology_set_xml(raw, xml_path.c_str()) != 0) {
      throw Error(blinkInvalidInput, "hwloc could not parse the XML topology '" + xml_path + "' (" +
                                         std::strerror(errno) +
                                         "); expected an hwloc 2.x export (lstopo --of xml)");
    }
  }
  if (hwloc_topology_load(raw) != 0) {
    if (!xml_path.empty()) {
      throw Error(blinkInvalidInput, "hwloc could not load the XML topology '" + xml_path +
                                         "': " + std::strerror(errno));
    }
    throw Error(blinkSystemError,
                std::string("hwloc could not discover this machine: ") + std::strerror(errno));
  }
  return topology;
}

std::string busIdOf(const PciAttributes& pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", static_cast<unsigned>(pci.domain),
                static_cast<unsigned>(pci.bus), static_cast<unsigned>(pci.dev),
                static_cast<unsigned>(pci.func));
  return text;
}

// Only PCI devices and bridges whose upstream side is PCI carry PCI attributes.
const PciAttributes* pciAttributesOf(hwloc_obj_t obj) {
  if (obj->type == HWLOC_OBJ_PCI_DEVICE) return &obj->attr->pcidev;
  if (obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
    return &obj->attr->bridge.upstream.pci;
  }
  return nullptr;
}

std::string infoOf(hwloc_obj_t obj, const char* name) {
  const char* value = hwloc_obj_get_info_by_name(obj, name);
  return value != nullptr ? value : "";
}

// The OS name of a NIC: its openfabrics device (mlx5_0, what UCX and NCCL name) before
// its network interface (ib0, eth0); "" when it has neither.
std::string nicOsName(hwloc_obj_t pci) {
  std::string network;
  for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE || child->name == nullptr) continue;
    if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) return child->name;
    if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && network.empty()) {
      network = child->name;
    }
  }
  return network;
}

// The inter-socket link of a package, from what the CPU says it is.
std::string smpGenerationOf(hwloc_obj_t package) {
  const std::string vendor = infoOf(package, "CPUVendor");
  if (vendor == "AuthenticAMD" || vendor == "HygonGenuine") return "xgmi";
  if (vendor == "GenuineIntel") {
    // UPI replaced QPI with Skylake-SP (family 6, model 0x55) and is in every later Xeon.
    const int family = std::atoi(infoOf(package, "CPUFamilyNumber").c_str());
    const int model = std::atoi(infoOf(package, "CPUModelNumber").c_str());
    if (family > 6 || (family == 6 && model >= 0x55)) return "upi";
  }
  return "qpi";
}

// The NUMA node of a non-I/O object when it has exactly one, else -1.
int singleNumaOf(hwloc_obj_t obj) {
  if (obj == nullptr || obj->nodeset == nullptr || hwloc_bitmap_weight(obj->nodeset) != 1) {
    return -1;
  }
  return hwloc_bitmap_first(obj->nodeset);
}

HwlocScan scanHwloc(hwloc_topology_t topology) {
  HwlocScan scan;
  const int packages = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PACKAGE);
  for (int k = 0; k < packages; ++k) {
    scan.packages.push_back(
        hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(k)));
  }
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topology, pci)) {
    ++scan.pci_devices;
    if (isNvidiaGpu(pci)) {
      scan.endpoints.push_back({pci, EndpointRole::Gpu, busIdOf(pci->attr->pcidev)});
    } else if (isNic(pci)) {
      scan.endpoints.push_back({pci, EndpointRole::Nic, busIdOf(pci->attr->pcidev)});
    }
  }
  // hwloc lists PCI devices in discovery order; Blink numbers them in bus order.
  std::sort(scan.endpoints.begin(), scan.endpoints.end(), [](const Endpoint& a, const Endpoint& b) {
    return busOrderKey(a.obj->attr->pcidev) < busOrderKey(b.obj->attr->pcidev);
  });

  // A bridge is a switch worth modelling when paths to two or more endpoints part
  // there (a PLX upstream port); chains of bridges on a single path (root ports,
  // downstream ports) are wires. Host bridges are the CPU's root complex: the CPU.
  std::map<hwloc_obj_t, std::set<hwloc_obj_t>> branches;
  for (const Endpoint& endpoint : scan.endpoints) {
    hwloc_obj_t child = endpoint.obj;
    for (hwloc_obj_t parent = child->parent; parent != nullptr && parent->type == HWLOC_OBJ_BRIDGE;
         child = parent, parent = parent->parent) {
      branches[parent].insert(child);
    }
  }
  for (const auto& [bridge, below] : branches) {
    if (below.size() >= 2 && bridge->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
      scan.switches.push_back(bridge);
    }
  }
  std::sort(scan.switches.begin(), scan.switches.end(), [](hwloc_obj_t a, hwloc_obj_t b) {
    return busOrderKey(a->attr->bridge.upstream.pci) < busOrderKey(b->attr->bridge.upstream.pci);
  });
  return scan;
}

std::string topologyName(hwloc_topology_t hwloc, bool from_xml) {
  // A file describes the machine it was exported on, not this one.
  if (from_xml) {
    std::string host = infoOf(hwloc_get_root_obj(hwloc), "HostName");
    if (!host.empty()) return host;
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace blink::topo::hwloc_scan
