#include "topology/zoo.hpp"

#include <charconv>
#include <functional>

#include "common/error.hpp"

namespace blink::topo {
namespace {

// How a server's hosts side is laid out: sockets, PCIe switches under each socket,
// and GPUs and NICs under each switch (the DGX pattern), or NICs on the socket.
struct HostLayout {
  int sockets = 2;
  std::string smp = "qpi";
  int switches_per_socket = 2;
  int gpus_per_switch = 2;
  int nics_per_switch = 1;
  int nics_per_socket = 0;
  std::string pcie = "pcie3x16";
  std::string nic = "ib-edr";
};

struct Machine {
  std::string name;
  std::string description;
  std::string gpu_model;
  int gpus = 8;
  HostLayout host;
  // Adds the GPU fabric (NVLinks, NVSwitches) given the GPU vertices of one node.
  std::function<void(Topology&, const std::vector<Vertex>&, const LinkTable&,
                     const std::string& prefix, int node)>
      fabric;
};

// DGX-1's hybrid cube-mesh: quads {0,1,2,3} and {4,5,6,7} fully connected, plus i <-> i+4.
std::vector<std::pair<int, int>> cubeMeshPairs() {
  std::vector<std::pair<int, int>> pairs;
  for (int base : {0, 4}) {
    for (int a = 0; a < 4; ++a) {
      for (int b = a + 1; b < 4; ++b) pairs.emplace_back(base + a, base + b);
    }
  }
  for (int i = 0; i < 4; ++i) pairs.emplace_back(i, i + 4);
  return pairs;
}

void cubeMesh(Topology& t, const std::vector<Vertex>& gpu, const LinkTable& table,
              const std::string& generation, const std::set<std::pair<int, int>>& doubled) {
  for (auto [a, b] : cubeMeshPairs()) {
    int lanes = doubled.contains({a, b}) ? 2 : 1;
    t.addDuplexLink(gpu[a], gpu[b], table.makeLink(generation, lanes));
  }
}

// GPUs attached to NVSwitch chips: lanes[k] NVLinks from every GPU to switch k.
void nvswitchStar(Topology& t, const std::vector<Vertex>& gpu, const LinkTable& table,
                  const std::string& generation, const std::vector<int>& lanes,
                  const std::string& prefix, int node) {
  for (std::size_t k = 0; k < lanes.size(); ++k) {
    Device sw = makeDevice(prefix + "nvswitch" + std::to_string(k), DeviceKind::NvSwitch, node);
    sw.model = "NVSwitch";
    Vertex s = t.addDevice(sw);
    for (Vertex g : gpu) t.addDuplexLink(g, s, table.makeLink(generation, lanes[k]));
  }
}

const std::vector<Machine>& machines() {
  static const std::vector<Machine> all = [] {
    std::vector<Machine> m;
    m.push_back({"dgx1-p100",
                 "DGX-1 with 8 P100: hybrid cube-mesh, one NVLink 1.0 per pair (4 per GPU)",
                 "Tesla P100-SXM2-16GB", 8, HostLayout{},
                 [](Topology& t, const std::vector<Vertex>& g, const LinkTable& table,
                    const std::string&, int) { cubeMesh(t, g, table, "nvlink1", {}); }});
    m.push_back({"dgx1-v100",
                 "DGX-1 with 8 V100: hybrid cube-mesh, NVLink 2.0, eight doubled pairs (6 per GPU)",
                 "Tesla V100-SXM2-16GB", 8, HostLayout{},
                 [](Topology& t, const std::vector<Vertex>& g, const LinkTable& table,
                    const std::string&, int) {
                   cubeMesh(t, g, table, "nvlink2",
                            {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}});
                 }});
    HostLayout dgx2_host;
    dgx2_host.switches_per_socket = 4;
    m.push_back({"dgx2",
                 "DGX-2 with 16 V100: two baseboards of 6 NVSwitches each, one NVLink 2.0 from "
                 "every GPU to each switch of its board (150 GB/s per GPU), boards joined by 8 "
                 "NVLinks per switch pair",
                 "Tesla V100-SXM3-32GB", 16, dgx2_host,
                 [](Topology& t, const std::vector<Vertex>& g, const LinkTable& table,
                    const std::string& prefix, int node) {
                   for (int board = 0; board < 2; ++board) {
                     for (int k = 0; k < 6; ++k) {
                       Device sw = makeDevice(prefix + "nvswitch" + std::to_string(board * 6 + k),
                                              DeviceKind::NvSwitch, node);
                       sw.model = "NVSwitch";
                       Vertex s = t.addDevice(sw);
                       for (int i = 0; i < 8; ++i) {
                         t.addDuplexLink(g[board * 8 + i], s, table.makeLink("nvlink2", 1));
                       }
                     }
                   }
                   for (int k = 0; k < 6; ++k) {
                     Vertex a = *t.find(prefix + "nvswitch" + std::to_string(k));
                     Vertex b = *t.find(prefix + "nvswitch" + std::to_string(6 + k));
                     t.addDuplexLink(a, b, table.makeLink("nvlink2", 8));
                   }
                 }});
    HostLayout a100_host;
    a100_host.smp = "xgmi";
    a100_host.nics_per_switch = 2;
    a100_host.pcie = "pcie4x16";
    a100_host.nic = "ib-hdr";
    m.push_back({"dgx-a100",
                 "DGX A100 with 8 A100: 6 NVSwitches, 12 NVLink 3.0 per GPU (2 to each switch)",
                 "A100-SXM4-80GB", 8, a100_host,
                 [](Topology& t, const std::vector<Vertex>& g, const LinkTable& table,
                    const std::string& prefix, int node) {
                   nvswitchStar(t, g, table, "nvlink3", {2, 2, 2, 2, 2, 2}, prefix, node);
                 }});
    HostLayout h100_host;
    h100_host.smp = "upi";
    h100_host.nics_per_switch = 2;
    h100_host.pcie = "pcie5x16";
    h100_host.nic = "ib-ndr";
    m.push_back({"hgx-h100", "HGX H100 with 8 H100: 4 NVSwitches, 18 NVLink 4.0 per GPU (5+4+4+5)",
                 "H100-SXM5-80GB", 8, h100_host,
                 [](Topology& t, const std::vector<Vertex>& g, const LinkTable& table,
                    const std::string& prefix, int node) {
                   nvswitchStar(t, g, table, "nvlink4", {5, 4, 4, 5}, prefix, node);
                 }});
    HostLayout pcie_host;
    pcie_host.smp = "upi";
    pcie_host.nics_per_switch = 0;
    pcie_host.nics_per_socket = 1;
    pcie_host.pcie = "pcie4x16";
    pcie_host.nic = "eth-100g";
    m.push_back(
        {"pcie-8gpu",
         "8 PCIe GPUs, no NVLink: two sockets, two PCIe gen4 switches per socket with two "
         "GPUs each, one 100 GbE NIC per socket",
         "PCIe GPU", 8, pcie_host,
         [](Topology&, const std::vector<Vertex>&, const LinkTable&, const std::string&, int) {}});
    return m;
  }();
  return all;
}

const Machine* findMachine(std::string_view name) {
  for (const auto& m : machines()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// Adds one server; returns its NIC vertices.
std::vector<Vertex> addServer(Topology& t, const Machine& m, const LinkTable& table, int node,
                              const std::string& prefix) {
  const HostLayout& h = m.host;
  std::vector<Vertex> gpus, nics, cpus;
  int gpu_local = 0, switch_count = 0, nic_count = 0;
  auto addNic = [&](Vertex parent) {
    Device nic = makeDevice(prefix + "nic" + std::to_string(nic_count++), DeviceKind::Nic, node);
    nic.model = table.get(h.nic).what;
    Vertex v = t.addDevice(nic);
    t.addDuplexLink(v, parent, table.makeLink(h.pcie));
    nics.push_back(v);
  };
  for (int s = 0; s < h.sockets; ++s) {
    Device cpu = makeDevice(prefix + "cpu" + std::to_string(s), DeviceKind::Cpu, node);
    cpu.numa = s;
    cpus.push_back(t.addDevice(cpu));
  }
  for (int s = 0; s + 1 < h.sockets; ++s) {
    t.addDuplexLink(cpus[s], cpus[s + 1], table.makeLink(h.smp));
  }
  for (int s = 0; s < h.sockets; ++s) {
    for (int k = 0; k < h.switches_per_socket; ++k) {
      Device sw = makeDevice(prefix + "pcisw" + std::to_string(switch_count++),
                             DeviceKind::PciSwitch, node);
      sw.numa = s;
      Vertex swv = t.addDevice(sw);
      t.addDuplexLink(swv, cpus[s], table.makeLink(h.pcie));
      for (int i = 0; i < h.gpus_per_switch && gpu_local < m.gpus; ++i) {
        Device gpu = makeDevice(prefix + "gpu" + std::to_string(gpu_local), DeviceKind::Gpu, node);
        gpu.gpu_index = node * m.gpus + gpu_local;
        gpu.model = m.gpu_model;
        gpu.numa = s;
        Vertex g = t.addDevice(gpu);
        t.addDuplexLink(g, swv, table.makeLink(h.pcie));
        gpus.push_back(g);
        ++gpu_local;
      }
      for (int i = 0; i < h.nics_per_switch; ++i) addNic(swv);
    }
    for (int i = 0; i < h.nics_per_socket; ++i) addNic(cpus[s]);
  }
  if (gpu_local != m.gpus) {
    throw Error(blinkInternalError, "zoo machine " + m.name + " places " +
                                        std::to_string(gpu_local) + " of its " +
                                        std::to_string(m.gpus) + " GPUs");
  }
  m.fabric(t, gpus, table, prefix, node);
  return nics;
}

std::string knownNames() {
  std::string out;
  for (const auto& m : machines()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

}  // namespace

const std::vector<ZooEntry>& zooMachines() {
  static const std::vector<ZooEntry> entries = [] {
    std::vector<ZooEntry> e;
    for (const auto& m : machines()) e.push_back({m.name, m.description});
    return e;
  }();
  return entries;
}

bool isZooName(std::string_view spec) {
  return findMachine(spec.substr(0, spec.find(':'))) != nullptr;
}

Topology makeZooTopology(std::string_view spec, const LinkTable& table) {
  std::string_view name = spec.substr(0, spec.find(':'));
  const Machine* m = findMachine(name);
  if (m == nullptr) {
    throw Error(blinkInvalidInput,
                "unknown zoo machine '" + std::string(name) + "' (known: " + knownNames() + ")");
  }
  int nodes = 1;
  if (auto colon = spec.find(':'); colon != std::string_view::npos) {
    std::string_view count = spec.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), nodes);
    if (ec != std::errc() || ptr != count.data() + count.size() || nodes < 1 || nodes > 128) {
      throw Error(blinkInvalidInput,
                  "'" + std::string(spec) + "': the node count after ':' must be 1..128");
    }
  }
  if (nodes == 1) {
    Topology t(m->name);
    addServer(t, *m, table, 0, "");
    return t;
  }
  Topology t(m->name + ":" + std::to_string(nodes));
  Device net = makeDevice("netsw0", DeviceKind::NetSwitch, -1);
  net.model = table.get(m->host.nic).what + " switch";
  Vertex sw = t.addDevice(net);
  for (int n = 0; n < nodes; ++n) {
    for (Vertex nic : addServer(t, *m, table, n, "n" + std::to_string(n) + ".")) {
      t.addDuplexLink(nic, sw, table.makeLink(m->host.nic));
    }
  }
  return t;
}

}  // namespace blink::topo
