#include "topology/nccl_xml.hpp"

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "topology/xml_input_checks.hpp"

namespace blink::topo {
namespace {

namespace pt = boost::property_tree;

// PCI class codes NCCL writes in <nvlink tclass>: NVSwitch, a CPU reached over NVLink
// (IBM POWER9), and the prefix of every display controller (GPU) class.
constexpr std::string_view kNvSwitchClass = "0x068000";
constexpr std::string_view kNvLinkCpuClass = "0x068001";
constexpr std::string_view kGpuClassPrefix = "0x03";

// Per-lane payload rate of PCIe gen 1..6 in GB/s (8b/10b for gens 1-2, 128b/130b for
// 3-5, gen 6 about twice gen 5). Only ratios are used: a gen the link table lacks is
// the nearest gen it has, scaled, so that BLINK_LINK_GBPS overrides still apply.
constexpr double kNominalPcieLaneGbps[] = {0.0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.877};
constexpr int kMaxPcieGen = 6;

// Raised inside the importer without the origin; importNcclXmlString prefixes it.
struct Rejection {
  std::string message;
};

[[noreturn]] void reject(std::string message) {
  throw Rejection{std::move(message)};
}

std::string lowerCase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

bool startsWithNoCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         lowerCase(std::string(text.substr(0, prefix.size()))) == lowerCase(std::string(prefix));
}

std::optional<std::string> attribute(const pt::ptree& element, const std::string& key) {
  auto attributes = element.get_child_optional("<xmlattr>");
  if (!attributes) return std::nullopt;
  auto value = attributes->get_child_optional(pt::ptree::path_type(key, '\0'));
  if (!value) return std::nullopt;
  return value->data();
}

std::optional<long long> parseInteger(std::string_view text) {
  text = trim(text);
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

// The integer attribute `key` of `element`, or nullopt when absent. `where` names the
// element in the message when the value is present but not an integer in [low, high].
std::optional<int> integerAttribute(const pt::ptree& element, const std::string& key,
                                    const std::string& where, long long low, long long high,
                                    const std::string& expected) {
  auto text = attribute(element, key);
  if (!text) return std::nullopt;
  auto value = parseInteger(*text);
  if (!value || *value < low || *value > high) {
    reject(where + " has " + key + "=\"" + *text + "\"; expected " + expected);
  }
  return static_cast<int>(*value);
}

// ---- what the file says, before it becomes a Topology -----------------------------

struct NvLinkSpec {
  std::string target_bus_id;  // lower case
  std::string target_class;   // lower case, "" if absent
  int count = 0;
};

struct GpuSpec {
  std::optional<int> dev;
  std::optional<int> sm;
  std::vector<NvLinkSpec> nvlinks;
};

struct NetSpec {
  std::string name;
  std::optional<int> speed_mbps;
};

struct PciSpec {
  enum class Role { Bridge, Gpu, Nic };
  Role role = Role::Bridge;
  std::string bus_id;
  std::string model;  // bridges: "pci <vendor>:<device>" when both are given
  Link uplink;        // to the parent (a CPU or a retained bridge)
  GpuSpec gpu;
  std::vector<NetSpec> nets;
  std::vector<PciSpec> children;
};

struct CpuSpec {
  std::optional<int> numaid;  // nullopt when NCCL wrote -1 (NUMA node unknown)
  std::string vendor;
  std::string arch;
  std::vector<PciSpec> children;
  std::vector<NetSpec> direct_nets;  // <nic> directly under <cpu>
};

// ---- PCIe link speeds ---------------------------------------------------------------

// NCCL copies sysfs max_link_speed: "8 GT/s", "8.0 GT/s PCIe", ... Empty values and
// the kernel's "Unknown" are what NCCL itself reads as gen 3, so they are accepted
// as gen 3 too; any other text is a corrupt file.
int pcieGeneration(const std::optional<std::string>& link_speed, const std::string& where) {
  const std::string written = link_speed.value_or("");
  std::string_view text = trim(written);
  if (text.empty() || startsWithNoCase(text, "unknown")) return 3;
  const auto bad = [&]() -> int {
    reject(where + " has link_speed=\"" + written +
           "\"; expected one of 2.5, 5, 8, 16, 32 or 64 GT/s (PCIe gen 1-6)");
  };
  double gigatransfers = 0.0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), gigatransfers);
  if (error != std::errc()) return bad();
  std::string_view unit = trim(std::string_view(end, text.data() + text.size() - end));
  if (!startsWithNoCase(unit, "GT/s")) return bad();
  std::string_view suffix = trim(unit.substr(4));
  if (!suffix.empty() && lowerCase(std::string(suffix)) != "pcie") return bad();
  const std::pair<double, int> known[] = {{2.5, 1},  {5.0, 2},  {8.0, 3},
                                          {16.0, 4}, {32.0, 5}, {64.0, 6}};
  for (auto [rate, gen] : known) {
    if (std::abs(gigatransfers - rate) < 1e-6) return gen;
  }
  return bad();
}

// sysfs reports width 0 when it does not know; NCCL then assumes x16, and so do we.
// The link table has x1..x16 only, so odd widths round down and wider ones to x16.
int pcieWidth(const pt::ptree& element, const std::string& where) {
  int width = integerAttribute(element, "link_width", where, 0, 1024,
                               "a lane count such as 16 (0 for unknown)")
                  .value_or(0);
  if (width == 0) return 16;
  for (int supported : {16, 8, 4, 2}) {
    if (width >= supported) return supported;
  }
  return 1;
}

Link pcieLink(int gen, int width, const LinkTable& table, const std::string& where) {
  const std::string name = LinkTable::pcieName(gen, width);
  if (table.contains(name)) return table.makeLink(name);
  for (int distance = 1; distance <= kMaxPcieGen; ++distance) {
    for (int candidate : {gen - distance, gen + distance}) {
      if (candidate < 1 || candidate > kMaxPcieGen) continue;
      const std::string nearest = LinkTable::pcieName(candidate, width);
      if (!table.contains(nearest)) continue;
      Link link = table.makeLink(nearest);
      link.gbps *= kNominalPcieLaneGbps[gen] / kNominalPcieLaneGbps[candidate];
      link.generation = name;
      return link;
    }
  }
  reject(where + ": the link table has no PCIe generation to derive " + name + " from");
}

Link uplinkOf(const pt::ptree& pci, const LinkTable& table, const std::string& where) {
  return pcieLink(pcieGeneration(attribute(pci, "link_speed"), where), pcieWidth(pci, where), table,
                  where);
}

const Link& slower(const Link& a, const Link& b) {
  return b.capacity() < a.capacity() ? b : a;
}

// ---- reading the XML into specs -----------------------------------------------------

GpuSpec readGpu(const pt::ptree& gpu, const std::string& bus_id) {
  const std::string where = "<gpu> of <pci busid=\"" + bus_id + "\">";
  GpuSpec spec;
  spec.dev = integerAttribute(gpu, "dev", where, 0, 1 << 20,
                              "a non-negative integer (the CUDA device ordinal)");
  spec.sm = integerAttribute(gpu, "sm", where, 0, 10000,
                             "the compute capability as an integer (70 for sm_70)");
  for (const auto& [name, child] : gpu) {
    if (name != "nvlink") continue;
    const std::string link_where = "<nvlink> of " + where;
    NvLinkSpec link;
    link.target_bus_id = lowerCase(attribute(child, "target").value_or(""));
    link.target_class = lowerCase(std::string(trim(attribute(child, "tclass").value_or(""))));
    auto count = integerAttribute(child, "count", link_where, 1, 1000, "a positive lane count");
    if (!count) reject(link_where + " has no count; expected count=\"<lanes>\"");
    link.count = *count;
    spec.nvlinks.push_back(std::move(link));
  }
  return spec;
}

std::vector<NetSpec> readNets(const pt::ptree& nic, const std::string& where) {
  std::vector<NetSpec> nets;
  for (const auto& [name, child] : nic) {
    if (name != "net") continue;
    // As NCCL does: a <net> without dev is not a usable device, and net="0" marks a
    // port fused into a virtual NIC that is listed separately.
    if (!attribute(child, "dev") || attribute(child, "net") == std::string("0")) continue;
    NetSpec net;
    net.name = attribute(child, "name").value_or("net" + *attribute(child, "dev"));
    net.speed_mbps = integerAttribute(child, "speed", "<net name=\"" + net.name + "\"> of " + where,
                                      1, 1'000'000'000, "the port speed in Mb/s (100000)");
    nets.push_back(std::move(net));
  }
  return nets;
}

// nullopt when the element leads to no GPU and no NIC (storage, an empty bridge, an
// NVSwitch's own PCI function): such elements carry no traffic Blink plans.
std::optional<PciSpec> readPci(const pt::ptree& pci, const LinkTable& table) {
  auto bus_id = attribute(pci, "busid");
  if (!bus_id || trim(*bus_id).empty()) {
    reject("a <pci> element has no busid; expected busid=\"0000:06:00.0\"");
  }
  const std::string where = "<pci busid=\"" + *bus_id + "\">";
  PciSpec spec;
  spec.bus_id = *bus_id;
  spec.uplink = uplinkOf(pci, table, where);

  if (pci.count("gpu") > 1) {
    reject(where + " holds several <gpu> elements (MLOPart partitions), which are not supported");
  }
  if (auto gpu = pci.get_child_optional("gpu")) {
    spec.role = PciSpec::Role::Gpu;
    spec.gpu = readGpu(*gpu, spec.bus_id);
    return spec;
  }
  if (auto nic = pci.get_child_optional("nic")) {
    spec.role = PciSpec::Role::Nic;
    spec.nets = readNets(*nic, where);
    if (spec.nets.empty()) return std::nullopt;
    return spec;
  }

  // Anything else is a bridge (NCCL too treats unknown classes as PCI switches).
  auto vendor = attribute(pci, "vendor");
  auto device = attribute(pci, "device");
  if (vendor && device) spec.model = "pci " + *vendor + ":" + *device;
  for (const auto& [name, child] : pci) {
    if (name != "pci") continue;
    if (auto below = readPci(child, table)) spec.children.push_back(std::move(*below));
  }
  if (spec.children.empty()) return std::nullopt;
  if (spec.children.size() == 1) {
    // A bridge with one child adds no fan-out; the child's path up is as fast as the
    // slower of the two links.
    PciSpec only = std::move(spec.children.front());
    only.uplink = slower(spec.uplink, only.uplink);
    return only;
  }
  return spec;
}

CpuSpec readCpu(const pt::ptree& cpu, const LinkTable& table) {
  CpuSpec spec;
  auto numaid = integerAttribute(cpu, "numaid", "a <cpu>", -1, 1 << 20,
                                 "a NUMA node number (-1 when unknown)");
  if (!numaid) reject("a <cpu> has no numaid; expected numaid=\"0\"");
  if (*numaid >= 0) spec.numaid = numaid;
  spec.vendor = attribute(cpu, "vendor").value_or("");
  spec.arch = attribute(cpu, "arch").value_or("");
  for (const auto& [name, child] : cpu) {
    if (name == "pci") {
      if (auto below = readPci(child, table)) spec.children.push_back(std::move(*below));
    } else if (name == "nic") {
      auto nets = readNets(child, "a <nic> of <cpu numaid=\"" + std::to_string(*numaid) + "\">");
      for (auto& net : nets) spec.direct_nets.push_back(std::move(net));
    }
  }
  return spec;
}

const pt::ptree& systemElement(const pt::ptree& document) {
  if (auto system = document.get_child_optional("system")) return *system;
  std::string found;
  for (const auto& [name, child] : document) {
    if (!name.empty() && name.front() == '<') continue;  // comments, declarations
    found += (found.empty() ? "<" : ", <") + name + ">";
  }
  reject("no <system> root element (found " + (found.empty() ? "no element" : found) +
         "); expected NCCL's topology XML, <system version=\"1\"><cpu ...>...</cpu></system>");
}

// ---- building the Topology ----------------------------------------------------------

std::string formatGigabits(int megabits) {
  std::ostringstream out;
  out << static_cast<double>(megabits) / 1000.0;  // shortest form: 100, 2.5, 56
  return out.str() + " Gb/s";
}

int nvlinkGeneration(int sm, const std::string& gpu_id) {
  // Compute capability major version -> NVLink: Pascal 1, Volta/Turing 2, Ampere and
  // Ada 3, Hopper 4, Blackwell and later 5.
  const int major = sm / 10;
  if (major < 6) {
    reject(gpu_id + " (sm " + std::to_string(sm) + ") lists <nvlink> but GPUs before sm 60 " +
           "have no NVLink");
  }
  return std::min(major - 5, 5);
}

class Builder {
 public:
  Builder(std::string name, const LinkTable& table) : topology_(std::move(name)), table_(table) {}

  Topology build(const std::vector<CpuSpec>& cpus) {
    std::vector<Vertex> cpu_vertices;
    for (std::size_t i = 0; i < cpus.size(); ++i) cpu_vertices.push_back(addCpu(cpus[i], i));
    connectSockets(cpus, cpu_vertices);
    for (std::size_t i = 0; i < cpus.size(); ++i) {
      const Socket socket{cpu_vertices[i], cpus[i].numaid.value_or(-1)};
      for (const PciSpec& child : cpus[i].children) addPci(child, cpu_vertices[i], socket);
      // NCCL treats these NICs as local to the socket; the fastest PCIe link of the
      // table is the closest stand-in for "not a bottleneck".
      for (const NetSpec& net : cpus[i].direct_nets) {
        addNic(net, "", socket, cpu_vertices[i], pcieLink(5, 16, table_, "a <nic> under <cpu>"));
      }
    }
    connectNvLinks();
    return std::move(topology_);
  }

 private:
  // The CPU a PCI tree hangs from.
  struct Socket {
    Vertex cpu;
    int numa;
  };

  struct PlacedGpu {
    Vertex vertex;
    Vertex cpu;
    const GpuSpec* spec;
  };

  Vertex addCpu(const CpuSpec& cpu, std::size_t order) {
    Device device;
    device.kind = DeviceKind::Cpu;
    device.id = "cpu" + std::to_string(cpu.numaid.value_or(static_cast<int>(order)));
    device.numa = cpu.numaid.value_or(-1);
    device.model = cpu.vendor.empty() ? cpu.arch : cpu.vendor;
    return topology_.addDevice(device);
  }

  void connectSockets(const std::vector<CpuSpec>& cpus, const std::vector<Vertex>& vertices) {
    for (std::size_t a = 0; a < cpus.size(); ++a) {
      for (std::size_t b = a + 1; b < cpus.size(); ++b) {
        const bool amd = cpus[a].vendor == "AuthenticAMD" || cpus[b].vendor == "AuthenticAMD";
        topology_.addDuplexLink(vertices[a], vertices[b], table_.makeLink(amd ? "xgmi" : "qpi"));
      }
    }
  }

  void addPci(const PciSpec& pci, Vertex parent, const Socket& socket) {
    switch (pci.role) {
      case PciSpec::Role::Gpu:
        addGpu(pci, parent, socket);
        return;
      case PciSpec::Role::Nic:
        for (const NetSpec& net : pci.nets) addNic(net, pci.bus_id, socket, parent, pci.uplink);
        return;
      case PciSpec::Role::Bridge: {
        Device device;
        device.kind = DeviceKind::PciSwitch;
        device.id = "pcisw" + std::to_string(next_switch_++);
        device.pci_bus_id = pci.bus_id;
        device.numa = socket.numa;
        device.model = pci.model;
        const Vertex bridge = topology_.addDevice(device);
        topology_.addDuplexLink(bridge, parent, pci.uplink);
        for (const PciSpec& child : pci.children) addPci(child, bridge, socket);
        return;
      }
    }
  }

  void addGpu(const PciSpec& pci, Vertex parent, const Socket& socket) {
    const std::string bus = lowerCase(pci.bus_id);
    if (gpu_by_bus_.count(bus)) reject("two <gpu> elements have busid " + pci.bus_id);
    Device device;
    device.kind = DeviceKind::Gpu;
    device.gpu_index = pci.gpu.dev.value_or(static_cast<int>(gpus_.size()));
    device.id = "gpu" + std::to_string(device.gpu_index);
    device.pci_bus_id = pci.bus_id;
    device.numa = socket.numa;
    if (pci.gpu.sm) device.model = "sm" + std::to_string(*pci.gpu.sm);
    const Vertex vertex = topology_.addDevice(device);
    topology_.addDuplexLink(vertex, parent, pci.uplink);
    gpu_by_bus_[bus] = gpus_.size();
    gpus_.push_back({vertex, socket.cpu, &pci.gpu});
  }

  void addNic(const NetSpec& net, const std::string& bus_id, const Socket& socket, Vertex parent,
              const Link& uplink) {
    Device device;
    device.kind = DeviceKind::Nic;
    device.id = "nic" + std::to_string(next_nic_++);
    device.pci_bus_id = bus_id;
    device.numa = socket.numa;
    device.model = net.name;
    if (net.speed_mbps) device.model += " " + formatGigabits(*net.speed_mbps);
    topology_.addDuplexLink(topology_.addDevice(device), parent, uplink);
  }

  const std::string& idOf(const PlacedGpu& gpu) const { return topology_.device(gpu.vertex).id; }

  // "nvlink2" for a V100, ...
  std::string nvlinkName(int generation) const { return "nvlink" + std::to_string(generation); }

  int generationOf(const PlacedGpu& gpu) const {
    if (!gpu.spec->sm) {
      reject(idOf(gpu) + " lists <nvlink> but has no sm attribute, which sets its NVLink " +
             "generation; expected sm=\"70\" or similar");
    }
    return nvlinkGeneration(*gpu.spec->sm, idOf(gpu));
  }

  // NCCL lists a GPU-GPU NVLink on both GPUs; one duplex link per unordered pair is
  // added, with the larger of the two counts in case a dump lists them unevenly.
  void connectNvLinks() {
    std::map<std::pair<std::size_t, std::size_t>, int> lanes_from_to;
    std::vector<std::pair<std::size_t, std::size_t>> pair_order;
    std::vector<int> switch_lanes(gpus_.size(), 0);
    std::vector<int> cpu_lanes(gpus_.size(), 0);
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      for (const NvLinkSpec& link : gpus_[g].spec->nvlinks) {
        auto peer = gpu_by_bus_.find(link.target_bus_id);
        if (peer != gpu_by_bus_.end()) {
          if (peer->second == g) reject(idOf(gpus_[g]) + " lists an <nvlink> to itself");
          auto key = std::minmax(g, peer->second);
          if (!lanes_from_to.count(key) && !lanes_from_to.count({key.second, key.first})) {
            pair_order.push_back(key);
          }
          lanes_from_to[{g, peer->second}] += link.count;
        } else if (link.target_class == kNvLinkCpuClass) {
          cpu_lanes[g] += link.count;
        } else if (!link.target_class.empty() && !link.target_class.starts_with(kGpuClassPrefix)) {
          switch_lanes[g] += link.count;
        } else if (link.target_class.starts_with(kGpuClassPrefix)) {
          // A process restricted by CUDA_VISIBLE_DEVICES dumps NVLinks to GPUs it cannot
          // see; NCCL ignores them, and so do we, but say so.
          BLINK_LOG(Warn, topology_.name()
                              << ": ignoring <nvlink> of " << idOf(gpus_[g]) << " to GPU "
                              << link.target_bus_id << ", which the file does not list");
        } else {
          reject("<nvlink target=\"" + link.target_bus_id + "\" tclass=\"" + link.target_class +
                 "\"> of " + idOf(gpus_[g]) + " (pci " +
                 topology_.device(gpus_[g].vertex).pci_bus_id +
                 ") matches no <gpu> of the file and is not an NVSwitch; expected the target " +
                 "to be the busid of a <pci> holding a <gpu>, or tclass=\"" +
                 std::string(kNvSwitchClass) + "\"");
        }
      }
    }
    for (auto [a, b] : pair_order) {
      const int lanes = std::max(lanes_from_to[{a, b}], lanes_from_to[{b, a}]);
      const int gen = std::min(generationOf(gpus_[a]), generationOf(gpus_[b]));
      topology_.addDuplexLink(gpus_[a].vertex, gpus_[b].vertex,
                              table_.makeLink(nvlinkName(gen), lanes));
    }
    std::optional<Vertex> nvswitch;
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      if (cpu_lanes[g] > 0) {
        topology_.addDuplexLink(gpus_[g].vertex, gpus_[g].cpu,
                                table_.makeLink(nvlinkName(generationOf(gpus_[g])), cpu_lanes[g]));
      }
      if (switch_lanes[g] > 0) {
        if (!nvswitch) {
          Device device;
          device.kind = DeviceKind::NvSwitch;
          device.id = "nvswitch0";
          nvswitch = topology_.addDevice(device);
        }
        topology_.addDuplexLink(
            gpus_[g].vertex, *nvswitch,
            table_.makeLink(nvlinkName(generationOf(gpus_[g])), switch_lanes[g]));
      }
    }
  }

  Topology topology_;
  const LinkTable& table_;
  std::vector<PlacedGpu> gpus_;
  std::map<std::string, std::size_t> gpu_by_bus_;
  int next_switch_ = 0;
  int next_nic_ = 0;
};

Topology importDocument(const pt::ptree& document, const std::string& origin,
                        const LinkTable& table) {
  const pt::ptree& system = systemElement(document);
  std::vector<CpuSpec> cpus;
  std::optional<std::string> first_host;
  for (const auto& [name, child] : system) {
    if (name != "cpu") continue;
    // Several hosts in one file (NCCL's multi-node NVLink systems) would need node
    // indices and host-qualified ids; this importer reads one server.
    const std::string host = attribute(child, "host_hash").value_or("");
    if (first_host && *first_host != host) {
      reject("<cpu> elements of several hosts (host_hash " + *first_host + " and " + host +
             "); expected the topology of one server");
    }
    first_host = host;
    cpus.push_back(readCpu(child, table));
  }
  if (cpus.empty()) reject("<system> has no <cpu>; expected at least one <cpu numaid=\"0\">");
  return Builder(origin, table).build(cpus);
}

}  // namespace

Topology importNcclXmlString(const std::string& xml, const std::string& origin,
                             const LinkTable& table) {
  if (auto bad = firstInvalidUtf8(xml); bad != std::string_view::npos) {
    const auto line =
        1 + std::count(xml.begin(), xml.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(xml[bad]));
    throw Error(blinkInvalidInput, origin + ":" + std::to_string(line) + ": byte " + byte +
                                       " is not UTF-8 text; expected NCCL's topology XML");
  }
  if (auto deep = firstTooDeep(xml); deep != std::string_view::npos) {
    const auto line =
        1 + std::count(xml.begin(), xml.begin() + static_cast<std::ptrdiff_t>(deep), '\n');
    throw Error(blinkInvalidInput, origin + ":" + std::to_string(line) +
                                       ": elements nested more than " +
                                       std::to_string(kMaxXmlDepth) +
                                       " deep; NCCL's topology XML nests fewer than ten");
  }
  pt::ptree document;
  try {
    std::istringstream in(xml);
    pt::read_xml(in, document, pt::xml_parser::no_comments);
  } catch (const pt::xml_parser_error& e) {
    const std::string line = e.line() > 0 ? ":" + std::to_string(e.line()) : "";
    throw Error(blinkInvalidInput, origin + line + ": not well-formed XML (" + e.message() +
                                       "); expected NCCL's topology XML (NCCL_TOPO_DUMP_FILE)");
  }
  try {
    return importDocument(document, origin, table);
  } catch (const Rejection& e) {
    throw Error(blinkInvalidInput, origin + ": " + e.message);
  } catch (const Error& e) {
    // From Topology or LinkTable (a duplicate id, an unknown generation): same status,
    // with the file named.
    throw Error(e.status(), origin + ": " + e.what());
  } catch (const pt::ptree_error& e) {
    throw Error(blinkInvalidInput, origin + ": " + e.what());
  }
}

Topology importNcclXml(const std::string& path, const LinkTable& table) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(blinkInvalidInput, path + ": cannot open NCCL topology XML for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(blinkInvalidInput, path + ": error while reading NCCL topology XML");
  return importNcclXmlString(text.str(), path, table);
}

}  // namespace blink::topo
