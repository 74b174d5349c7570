// The hwloc side of local discovery (discover.cpp): the machine's or an XML
// file's hwloc topology, and the objects in it that become devices (packages,
// GPUs, NICs and the PCIe switches between them), before any vertex exists.
#pragma once

#include <hwloc.h>

#include <memory>
#include <string>
#include <vector>

namespace blink::topo::hwloc_scan {

// hwloc declares its attribute structs inside a union: in C++ they need the union's scope.
using PciAttributes = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

struct HwlocDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using HwlocHandle = std::unique_ptr<hwloc_topology, HwlocDeleter>;

// Throws blink::Error: blinkInvalidInput naming the file when `xml_path` cannot be
// read, blinkSystemError when hwloc cannot read the live machine ("" reads it).
HwlocHandle loadHwloc(const std::string& xml_path);

std::string busIdOf(const PciAttributes& pci);
// Only PCI devices and bridges whose upstream side is PCI carry PCI attributes.
const PciAttributes* pciAttributesOf(hwloc_obj_t obj);
// The value of hwloc info `name` of `obj`, "" when it has none.
std::string infoOf(hwloc_obj_t obj, const char* name);
// The OS name of a NIC: its openfabrics device (mlx5_0, what UCX and NCCL name) before
// its network interface (ib0, eth0); "" when it has neither.
std::string nicOsName(hwloc_obj_t pci);
// The inter-socket link of a package, from what the CPU says it is.
std::string smpGenerationOf(hwloc_obj_t package);
// The NUMA node of a non-I/O object when it has exactly one, else -1.
int singleNumaOf(hwloc_obj_t obj);

enum class EndpointRole { Gpu, Nic };

struct Endpoint {
  hwloc_obj_t obj = nullptr;
  EndpointRole role = EndpointRole::Gpu;
  std::string bus_id;
};

// The hwloc side of discovery: the objects that become devices, before any vertex exists.
struct HwlocScan {
  std::vector<hwloc_obj_t> packages;  // by logical index
  std::vector<Endpoint> endpoints;    // GPUs and NICs, PCI bus order
  std::vector<hwloc_obj_t> switches;  // bridges where paths to >= 2 endpoints part, bus order
  int pci_devices = 0;
};

HwlocScan scanHwloc(hwloc_topology_t topology);

// The host name the topology is named after: for an XML file, the machine it was
// exported on when it says so.
std::string topologyName(hwloc_topology_t hwloc, bool from_xml);

}  // namespace blink::topo::hwloc_scan
