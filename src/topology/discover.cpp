#include "topology/discover.hpp"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "common/log.hpp"
#include "topology/hwloc_scan.hpp"
#include "topology/nvml_loader.hpp"

namespace blink::topo {

namespace {

using hwloc_scan::busIdOf;
using hwloc_scan::Endpoint;
using hwloc_scan::EndpointRole;
using hwloc_scan::HwlocHandle;
using hwloc_scan::HwlocScan;
using hwloc_scan::infoOf;
using hwloc_scan::loadHwloc;
using hwloc_scan::nicOsName;
using hwloc_scan::PciAttributes;
using hwloc_scan::pciAttributesOf;
using hwloc_scan::scanHwloc;
using hwloc_scan::singleNumaOf;
using hwloc_scan::smpGenerationOf;
using hwloc_scan::topologyName;

constexpr const char* kDefaultPcieGeneration = "pcie3x16";
// NVLink of an unknown version is taken as the slowest generation: a plan built on
// it is never slower than promised.
constexpr const char* kFallbackNvLinkGeneration = "nvlink1";

std::set<std::string> busIdSet(const std::vector<std::string>& ids) {
  return std::set<std::string>(ids.begin(), ids.end());
}

// Every GPU known to any source, by bus id, in the order gpu_index follows: the CUDA
// runtime's when it sees exactly these GPUs (that is the order cudaSetDevice uses),
// else NVML's, else PCI bus order.
std::vector<std::string> orderGpus(const std::vector<std::string>& hwloc_gpus, const NvmlView& nvml,
                                   const CudaProbe& cuda) {
  std::vector<std::string> nvml_order, cuda_order;
  for (const NvmlGpu& gpu : nvml.gpus) {
    if (!gpu.pci_bus_id.empty()) nvml_order.push_back(gpu.pci_bus_id);
  }
  for (const CudaDeviceInfo& device : cuda.devices) {
    std::string id = normalizePciBusId(device.pci_bus_id);
    if (!id.empty()) cuda_order.push_back(id);
  }
  std::set<std::string> all = busIdSet(hwloc_gpus);
  all.insert(nvml_order.begin(), nvml_order.end());
  all.insert(cuda_order.begin(), cuda_order.end());
  if (all.empty()) return {};

  if (!cuda_order.empty() && busIdSet(cuda_order) == all && cuda_order.size() == all.size()) {
    BLINK_LOG(Info, "discover: gpu_index follows the CUDA device order");
    return cuda_order;
  }
  if (!nvml_order.empty() && busIdSet(nvml_order) == all && nvml_order.size() == all.size()) {
    BLINK_LOG(Info, "discover: gpu_index follows the NVML device order"
                        << (cuda.devices.empty() ? "" : " (CUDA sees a different set of GPUs)"));
    return nvml_order;
  }
  BLINK_LOG(Info, "discover: gpu_index follows PCI bus order"
                      << (nvml_order.empty() && cuda_order.empty()
                              ? " (neither NVML nor CUDA reports GPUs)"
                              : " (NVML, CUDA and hwloc disagree on the set of GPUs)"));
  return std::vector<std::string>(all.begin(), all.end());  // fixed-width hex: bus order
}

class TopologyBuilder {
 public:
  TopologyBuilder(hwloc_topology_t hwloc, const DiscoverOptions& opts, const NvmlView& nvml,
                  const CudaProbe& cuda)
      : hwloc_(hwloc), table_(opts.table), nvml_(nvml), cuda_(cuda) {}

  Topology build(std::string name) {
    topology_.setName(std::move(name));
    HwlocScan scan = scanHwloc(hwloc_);
    logScan(scan);
    addCpus(scan);
    addSwitches(scan);
    addGpus(scan);
    addNics(scan);
    addPcieLinks(scan);
    addNvLinks();
    logPeerAccess();
    if (default_pcie_links_ > 0) {
      BLINK_LOG(Info, "discover: " << default_pcie_links_
                                   << " PCIe link(s) without a speed in hwloc"
                                   << " taken as " << kDefaultPcieGeneration);
    }
    BLINK_LOG(Info, "discover: topology '" << topology_.name() << "': " << topology_.numDevices()
                                           << " devices, " << topology_.numLinks() << " links, "
                                           << topology_.gpus().size() << " GPUs");
    return std::move(topology_);
  }

 private:
  void logScan(const HwlocScan& scan) const {
    int gpus = 0, nics = 0;
    for (const Endpoint& endpoint : scan.endpoints) {
      (endpoint.role == EndpointRole::Gpu ? gpus : nics)++;
    }
    BLINK_LOG(Info, "discover: hwloc sees " << scan.packages.size() << " package(s), "
                                            << hwloc_get_nbobjs_by_type(hwloc_, HWLOC_OBJ_NUMANODE)
                                            << " NUMA node(s), " << scan.pci_devices
                                            << " PCI device(s): " << gpus << " NVIDIA GPU(s), "
                                            << nics << " NIC(s), " << scan.switches.size()
                                            << " PCIe switch(es) on their paths");
  }

  void addCpus(const HwlocScan& scan) {
    if (scan.packages.empty()) {
      // Some virtual machines and trimmed XML files have no package level: the
      // machine is then one CPU.
      Device cpu;
      cpu.id = "cpu0";
      cpu.kind = DeviceKind::Cpu;
      hwloc_obj_t root = hwloc_get_root_obj(hwloc_);
      cpu.numa = root->nodeset != nullptr ? hwloc_bitmap_first(root->nodeset) : -1;
      cpus_.push_back(topology_.addDevice(cpu));
      BLINK_LOG(Info, "discover: hwloc shows no packages; the machine is one CPU");
      return;
    }
    for (std::size_t k = 0; k < scan.packages.size(); ++k) {
      hwloc_obj_t package = scan.packages[k];
      Device cpu;
      cpu.id = "cpu" + std::to_string(k);
      cpu.kind = DeviceKind::Cpu;
      cpu.model = infoOf(package, "CPUModel");
      cpu.numa = package->nodeset != nullptr ? hwloc_bitmap_first(package->nodeset) : -1;
      cpus_.push_back(topology_.addDevice(cpu));
      cpu_of_package_[package] = cpus_.back();
      packages_.push_back(package);
    }
    if (scan.packages.size() > 1) {
      // Every pair of sockets is taken as directly connected (true of 2-socket
      // machines and of most 4-socket ones).
      const std::string generation = smpGenerationOf(scan.packages.front());
      for (std::size_t a = 0; a < cpus_.size(); ++a) {
        for (std::size_t b = a + 1; b < cpus_.size(); ++b) {
          topology_.addDuplexLink(cpus_[a], cpus_[b], table_.makeLink(generation));
        }
      }
      BLINK_LOG(Info, "discover: sockets joined by " << generation << " ("
                                                     << infoOf(scan.packages.front(), "CPUVendor")
                                                     << ")");
    }
  }

  void addSwitches(const HwlocScan& scan) {
    for (std::size_t k = 0; k < scan.switches.size(); ++k) {
      hwloc_obj_t bridge = scan.switches[k];
      Device sw;
      sw.id = "pcisw" + std::to_string(k);
      sw.kind = DeviceKind::PciSwitch;
      sw.pci_bus_id = busIdOf(bridge->attr->bridge.upstream.pci);
      sw.numa = singleNumaOf(hwloc_get_non_io_ancestor_obj(hwloc_, bridge));
      vertex_of_obj_[bridge] = topology_.addDevice(sw);
    }
  }

  void addGpus(const HwlocScan& scan) {
    std::vector<std::string> hwloc_gpus;
    std::map<std::string, hwloc_obj_t> hwloc_obj_of;
    for (const Endpoint& endpoint : scan.endpoints) {
      if (endpoint.role != EndpointRole::Gpu) continue;
      hwloc_gpus.push_back(endpoint.bus_id);
      hwloc_obj_of[endpoint.bus_id] = endpoint.obj;
    }
    std::map<std::string, std::string> nvml_name, cuda_name;
    for (const NvmlGpu& gpu : nvml_.gpus) nvml_name[gpu.pci_bus_id] = gpu.name;
    for (const CudaDeviceInfo& device : cuda_.devices) {
      cuda_name[normalizePciBusId(device.pci_bus_id)] = device.name;
    }

    const std::vector<std::string> order = orderGpus(hwloc_gpus, nvml_, cuda_);
    for (std::size_t index = 0; index < order.size(); ++index) {
      const std::string& bus_id = order[index];
      Device gpu;
      gpu.id = "gpu" + std::to_string(index);
      gpu.kind = DeviceKind::Gpu;
      gpu.gpu_index = static_cast<int>(index);
      gpu.pci_bus_id = bus_id;
      if (auto it = nvml_name.find(bus_id); it != nvml_name.end() && !it->second.empty()) {
        gpu.model = it->second;
      } else if (auto cit = cuda_name.find(bus_id); cit != cuda_name.end()) {
        gpu.model = cit->second;
      }
      auto obj = hwloc_obj_of.find(bus_id);
      if (obj != hwloc_obj_of.end()) {
        if (gpu.model.empty()) gpu.model = infoOf(obj->second, "PCIDevice");
        gpu.numa = singleNumaOf(hwloc_get_non_io_ancestor_obj(hwloc_, obj->second));
      }
      const Vertex v = topology_.addDevice(gpu);
      gpu_of_bus_[bus_id] = v;
      if (obj != hwloc_obj_of.end()) {
        vertex_of_obj_[obj->second] = v;
      } else {
        // hwloc may not see PCI at all (a container without /sys/bus/pci): the GPU is
        // real, its place in the PCIe tree unknown.
        gpus_outside_hwloc_.push_back(v);
        BLINK_LOG(Info, "discover: " << gpu.id << " (" << bus_id << ") is not in hwloc's PCI tree;"
                                     << " attached to cpu0 by " << kDefaultPcieGeneration);
      }
    }
  }

  void addNics(const HwlocScan& scan) {
    int k = 0;
    for (const Endpoint& endpoint : scan.endpoints) {
      if (endpoint.role != EndpointRole::Nic) continue;
      Device nic;
      nic.id = "nic" + std::to_string(k++);
      nic.kind = DeviceKind::Nic;
      nic.model = nicOsName(endpoint.obj);
      if (nic.model.empty()) nic.model = infoOf(endpoint.obj, "PCIDevice");
      nic.pci_bus_id = endpoint.bus_id;
      nic.numa = singleNumaOf(hwloc_get_non_io_ancestor_obj(hwloc_, endpoint.obj));
      vertex_of_obj_[endpoint.obj] = topology_.addDevice(nic);
    }
  }

  // The CPU an I/O subtree hangs from: its package, or for I/O attached above the
  // packages (the machine object of a one-socket VM) the first package it covers.
  Vertex cpuOf(hwloc_obj_t io_obj) const {
    hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(hwloc_, io_obj);
    hwloc_obj_t package = anchor;
    while (package != nullptr && package->type != HWLOC_OBJ_PACKAGE) package = package->parent;
    if (package != nullptr) {
      if (auto it = cpu_of_package_.find(package); it != cpu_of_package_.end()) return it->second;
    }
    // In package order, so that the choice is the same on every rank.
    for (std::size_t k = 0; k < packages_.size(); ++k) {
      if (anchor != nullptr && anchor->cpuset != nullptr &&
          hwloc_bitmap_isincluded(packages_[k]->cpuset, anchor->cpuset)) {
        return cpus_[k];
      }
    }
    return cpus_.front();
  }

  // Links a device (or switch) to the next modelled thing above it in the PCIe tree,
  // at the speed of its own link, or of the first bridge on the way that reports one.
  void linkUpward(hwloc_obj_t obj) {
    double gbps = 0.0;
    if (const PciAttributes* pci = pciAttributesOf(obj)) gbps = pci->linkspeed;
    hwloc_obj_t parent = obj->parent;
    std::optional<Vertex> above;
    for (; parent != nullptr && parent->type == HWLOC_OBJ_BRIDGE; parent = parent->parent) {
      if (auto it = vertex_of_obj_.find(parent); it != vertex_of_obj_.end()) {
        above = it->second;
        break;
      }
      if (const PciAttributes* pci = pciAttributesOf(parent); pci != nullptr && gbps <= 0.0) {
        gbps = pci->linkspeed;
      }
    }
    if (!above) above = cpuOf(obj);
    if (gbps <= 0.0) ++default_pcie_links_;
    Link link = table_.makeLink(nearestPcieGeneration(gbps, table_));
    // hwloc read the generation and width from sysfs; the speed is that generation's
    // payload rate unless BLINK_LINK_GBPS says otherwise.
    if (gbps > 0.0 && link.source == LinkSource::Table) link.source = LinkSource::Sysfs;
    topology_.addDuplexLink(vertex_of_obj_.at(obj), *above, link);
  }

  void addPcieLinks(const HwlocScan& scan) {
    for (hwloc_obj_t bridge : scan.switches) linkUpward(bridge);
    for (const Endpoint& endpoint : scan.endpoints) linkUpward(endpoint.obj);
    for (Vertex gpu : gpus_outside_hwloc_) {
      ++default_pcie_links_;
      topology_.addDuplexLink(gpu, cpus_.front(), table_.makeLink(kDefaultPcieGeneration));
    }
  }

  static std::string generationOfLinks(const std::vector<const NvmlNvLink*>& links,
                                       const std::string& what) {
    // The slowest generation among bundled lanes; they agree on real hardware.
    std::string slowest;
    for (const NvmlNvLink* link : links) {
      std::string generation = nvlinkGenerationOf(link->version);
      if (generation.empty()) {
        BLINK_LOG(Info, "discover: NVLink version " << link->version << " of " << what
                                                    << " is unknown; taken as "
                                                    << kFallbackNvLinkGeneration);
        generation = kFallbackNvLinkGeneration;
      }
      if (slowest.empty() || generation < slowest) slowest = generation;
    }
    return slowest;
  }

  void addNvLinks() {
    if (nvml_.gpus.empty()) {
      BLINK_LOG(Info, "discover: no NVLinks: " << nvml_.why_none);
      return;
    }
    int lanes_total = 0, switch_lanes = 0;
    std::set<Vertex> done;
    for (const NvmlGpu& gpu : nvml_.gpus) {
      auto self = gpu_of_bus_.find(gpu.pci_bus_id);
      if (self == gpu_of_bus_.end() || !done.insert(self->second).second) continue;
      // Lanes to the same far end form one link of that multiplicity.
      std::map<std::string, std::vector<const NvmlNvLink*>> by_remote;
      for (const NvmlNvLink& link : gpu.nvlink) by_remote[link.remote_pci_bus_id].push_back(&link);
      std::vector<const NvmlNvLink*> to_switches;
      for (const auto& [remote, links] : by_remote) {
        auto peer = gpu_of_bus_.find(remote);
        if (peer == gpu_of_bus_.end()) {
          // Not a GPU: an NVSwitch (or an NVLink bridge); all of them form one fabric.
          to_switches.insert(to_switches.end(), links.begin(), links.end());
          continue;
        }
        if (peer->second == self->second) continue;
        const std::string what =
            topology_.device(self->second).id + " -> " + topology_.device(peer->second).id;
        // One direction per GPU: the peer reports the other one itself.
        topology_.addLink(
            self->second, peer->second,
            table_.makeLink(generationOfLinks(links, what), static_cast<int>(links.size())));
        lanes_total += static_cast<int>(links.size());
      }
      if (!to_switches.empty()) {
        if (!nvswitch_) {
          Device nvswitch;
          nvswitch.id = "nvswitch0";
          nvswitch.kind = DeviceKind::NvSwitch;
          nvswitch_ = topology_.addDevice(nvswitch);
        }
        const std::string what = topology_.device(self->second).id + " -> nvswitch0";
        topology_.addDuplexLink(self->second, *nvswitch_,
                                table_.makeLink(generationOfLinks(to_switches, what),
                                                static_cast<int>(to_switches.size())));
        lanes_total += static_cast<int>(to_switches.size());
        switch_lanes += static_cast<int>(to_switches.size());
      }
    }
    BLINK_LOG(Info, "discover: NVML reports " << nvml_.gpus.size() << " GPU(s) with " << lanes_total
                                              << " active NVLink lane(s), " << switch_lanes
                                              << " of them to NVSwitches");
  }

  // CUDA peer access without NVLink rides PCIe, which the graph already has; the
  // count is logged so that a missing NVLink is noticed.
  void logPeerAccess() const {
    if (cuda_.devices.empty()) {
      if (!cuda_.why_none.empty()) BLINK_LOG(Info, "discover: " << cuda_.why_none);
      return;
    }
    int peer_pairs = 0, over_pcie = 0;
    for (std::size_t i = 0; i < cuda_.can_access_peer.size(); ++i) {
      for (std::size_t j = 0; j < cuda_.can_access_peer[i].size(); ++j) {
        if (!cuda_.can_access_peer[i][j]) continue;
        ++peer_pairs;
        auto a = gpu_of_bus_.find(normalizePciBusId(cuda_.devices[i].pci_bus_id));
        auto b = gpu_of_bus_.find(normalizePciBusId(cuda_.devices[j].pci_bus_id));
        if (a == gpu_of_bus_.end() || b == gpu_of_bus_.end()) continue;
        bool nvlink = false;
        for (Edge e : topology_.linksBetween(a->second, b->second)) {
          nvlink = nvlink || topology_.link(e).kind == LinkKind::NvLink;
        }
        if (!nvlink) ++over_pcie;
      }
    }
    BLINK_LOG(Info, "discover: CUDA sees " << cuda_.devices.size() << " device(s), " << peer_pairs
                                           << " ordered peer-access pair(s), " << over_pcie
                                           << " of them without NVLink (over PCIe)");
  }

  hwloc_topology_t hwloc_;
  const LinkTable& table_;
  const NvmlView& nvml_;
  const CudaProbe& cuda_;
  Topology topology_;
  std::vector<Vertex> cpus_;
  std::vector<hwloc_obj_t> packages_;  // packages_[k] is cpus_[k]
  std::map<hwloc_obj_t, Vertex> cpu_of_package_;
  std::map<hwloc_obj_t, Vertex> vertex_of_obj_;  // switches, GPUs and NICs seen by hwloc
  std::map<std::string, Vertex> gpu_of_bus_;
  std::vector<Vertex> gpus_outside_hwloc_;
  std::optional<Vertex> nvswitch_;
  int default_pcie_links_ = 0;
};

}  // namespace

std::string nearestPcieGeneration(double link_gbps, const LinkTable& table) {
  if (!(link_gbps > 0.0)) return kDefaultPcieGeneration;
  // Nominal per-lane rates as hwloc computes them: GT/s x 128/130 / 8 bits.
  const double giga_transfers[] = {0.0, 0.0, 0.0, 8.0, 16.0, 32.0};
  std::string best;
  double best_distance = 0.0;
  int best_width = 0;
  for (int gen = 3; gen <= 5; ++gen) {
    for (int width : {16, 8, 4, 2, 1}) {  // widest first: wins ties
      const std::string name = LinkTable::pcieName(gen, width);
      if (!table.contains(name)) continue;
      const double nominal = giga_transfers[gen] * 128.0 / 130.0 / 8.0 * width;
      const double distance = std::fabs(nominal - link_gbps);
      // Within 1% counts as the same rate: then the wider link wins.
      const bool same_rate =
          !best.empty() && std::fabs(distance - best_distance) <= 0.01 * link_gbps;
      if (best.empty() || (same_rate ? width > best_width : distance < best_distance)) {
        best = name;
        best_distance = distance;
        best_width = width;
      }
    }
  }
  return best.empty() ? kDefaultPcieGeneration : best;
}

Topology discoverLocalTopology(const DiscoverOptions& opts) {
  HwlocHandle hwloc = loadHwloc(opts.hwloc_xml_path);
  BLINK_LOG(Info, "discover: hwloc reads "
                      << (opts.hwloc_xml_path.empty() ? std::string("this machine")
                                                      : "'" + opts.hwloc_xml_path + "'"));

  const NvmlView nvml = queryNvml(opts.nvml_library);  // its absence is logged with the NVLinks

  CudaProbe cuda;
  if (!opts.use_cuda) {
    cuda.why_none = "CUDA not asked (use_cuda = false)";
  } else if (opts.cuda_probe) {
    cuda = *opts.cuda_probe;
  } else {
    cuda = probeCuda();
  }

  TopologyBuilder builder(hwloc.get(), opts, nvml, cuda);
  return builder.build(topologyName(hwloc.get(), !opts.hwloc_xml_path.empty()));
}

}  // namespace blink::topo
