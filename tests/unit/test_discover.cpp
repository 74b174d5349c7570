// Discovery against this machine (no GPU: a CPU-only node), against an hwloc XML
// export of a DGX-1-like machine, and with a fake NVML that reports its NVLinks.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "topology/cuda_probe.hpp"
#include "topology/discover.hpp"
#include "topology/nvml_loader.hpp"

namespace {

using blink::topo::DeviceKind;
using blink::topo::DiscoverOptions;
using blink::topo::LinkKind;
using blink::topo::LinkTable;
using blink::topo::Topology;
using blink::topo::Vertex;

const std::string kFixture = std::string(BLINK_TEST_DATA_DIR) + "/hwloc-dgx1-like.xml";
const std::string kFakeNvml = FAKE_NVML_PATH;
const std::string kNoSuchLibrary = "/nonexistent/libnvidia-ml.so.1";
const std::vector<std::string> kFixtureGpuBusIds = {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0",
                                                    "0000:0b:00.0", "0000:85:00.0", "0000:86:00.0",
                                                    "0000:8a:00.0", "0000:8b:00.0"};

// Sets an environment variable for one scope (the fake NVML reads it at init).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (previous_) {
      setenv(name_, previous_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

DiscoverOptions fixtureOptions(const std::string& nvml_library) {
  DiscoverOptions opts;
  opts.hwloc_xml_path = kFixture;
  opts.nvml_library = nvml_library;
  opts.use_cuda = false;
  return opts;
}

int countKind(const Topology& topo, DeviceKind kind) {
  int n = 0;
  for (Vertex v = 0; v < topo.numDevices(); ++v) n += topo.device(v).kind == kind ? 1 : 0;
  return n;
}

Vertex vertexOf(const Topology& topo, const std::string& id) {
  auto v = topo.find(id);
  if (!v) throw std::runtime_error("no device " + id);
  return *v;
}

// The link of `kind` from a to b, if there is one.
std::optional<blink::topo::Link> linkOf(const Topology& topo, const std::string& a,
                                        const std::string& b, LinkKind kind) {
  for (auto e : topo.linksBetween(vertexOf(topo, a), vertexOf(topo, b))) {
    if (topo.link(e).kind == kind) return topo.link(e);
  }
  return std::nullopt;
}

int nvlinkMultiplicity(const Topology& topo, int a, int b) {
  auto link = linkOf(topo, "gpu" + std::to_string(a), "gpu" + std::to_string(b), LinkKind::NvLink);
  return link ? link->multiplicity : 0;
}

TEST(DiscoverLiveMachine, CpuOnlyNodeIsANormalResult) {
  DiscoverOptions opts;
  Topology topo;
  ASSERT_NO_THROW(topo = blink::topo::discoverLocalTopology(opts));
  EXPECT_GE(countKind(topo, DeviceKind::Cpu), 1);
  EXPECT_FALSE(topo.name().empty());
  const bool machine_has_gpu_software =
      !blink::topo::queryNvml().gpus.empty() || !blink::topo::probeCuda().devices.empty();
  if (!machine_has_gpu_software) {
    EXPECT_EQ(topo.gpus().size(), 0u);
    EXPECT_EQ(countKind(topo, DeviceKind::NvSwitch), 0);
  }
  // Whatever the machine, every GPU found has a bus id and indices are dense.
  const auto gpus = topo.gpus();
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(topo.device(gpus[i]).gpu_index, static_cast<int>(i));
    EXPECT_FALSE(topo.device(gpus[i]).pci_bus_id.empty());
  }
  // Every NIC hangs from something.
  for (Vertex v = 0; v < topo.numDevices(); ++v) {
    if (topo.device(v).kind == DeviceKind::Nic) {
      EXPECT_GE(topo.laneCount(v, LinkKind::Pcie), 1);
    }
  }
}

// hwloc's own view of this machine, through its C API: packages with the first NUMA
// node of each, all NUMA nodes, and the PCI devices that are NICs (network class or
// with a network / OpenFabrics OS device).
struct HwlocView {
  std::vector<int> first_numa_of_package;
  int numa_nodes = 0;
  int nics = 0;
};

HwlocView hwlocView() {
  HwlocView view;
  hwloc_topology_t t = nullptr;
  EXPECT_EQ(hwloc_topology_init(&t), 0);
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
  EXPECT_EQ(hwloc_topology_load(t), 0);
  const int packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  for (int k = 0; k < packages; ++k) {
    hwloc_obj_t p = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(k));
    view.first_numa_of_package.push_back(hwloc_bitmap_first(p->nodeset));
  }
  view.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(t, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(t, pci)) {
    bool nic = (pci->attr->pcidev.class_id >> 8) == 0x02;
    for (hwloc_obj_t c = pci->io_first_child; c != nullptr; c = c->next_sibling) {
      nic = nic || (c->type == HWLOC_OBJ_OS_DEVICE &&
                    (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
                     c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS));
    }
    const bool nvidia_display =
        pci->attr->pcidev.vendor_id == 0x10de && (pci->attr->pcidev.class_id >> 8) == 0x03;
    view.nics += nic && !nvidia_display ? 1 : 0;
  }
  hwloc_topology_destroy(t);
  return view;
}

TEST(DiscoverLiveMachine, SocketsNumaNodesAndNicsAreHwlocs) {
  const HwlocView hwloc = hwlocView();
  const Topology topo = blink::topo::discoverLocalTopology();
  // One cpu<k> per package (one "cpu0" when hwloc shows no package level), each on the
  // first NUMA node of its package; together they cover every NUMA node of a package.
  const std::size_t sockets = std::max<std::size_t>(hwloc.first_numa_of_package.size(), 1);
  EXPECT_EQ(countKind(topo, DeviceKind::Cpu), static_cast<int>(sockets));
  for (std::size_t k = 0; k < hwloc.first_numa_of_package.size(); ++k) {
    auto cpu = topo.find("cpu" + std::to_string(k));
    ASSERT_TRUE(cpu) << k;
    EXPECT_EQ(topo.device(*cpu).numa, hwloc.first_numa_of_package[k]);
  }
  EXPECT_GE(hwloc.numa_nodes, static_cast<int>(hwloc.first_numa_of_package.size()));
  EXPECT_EQ(countKind(topo, DeviceKind::Nic), hwloc.nics);
  // Sockets are joined pairwise by the table's inter-socket link.
  for (std::size_t a = 0; a < sockets; ++a) {
    for (std::size_t b = 0; b < sockets; ++b) {
      if (a == b) continue;
      auto smp = linkOf(topo, "cpu" + std::to_string(a), "cpu" + std::to_string(b), LinkKind::Smp);
      ASSERT_TRUE(smp);
      EXPECT_EQ(smp->source, blink::topo::LinkSource::Table);
    }
  }
}

TEST(DiscoverFixture, WithoutNvmlSeesThePcieTree) {
  const Topology topo = blink::topo::discoverLocalTopology(fixtureOptions(kNoSuchLibrary));
  EXPECT_EQ(topo.name(), "dgx1-like");
  EXPECT_EQ(topo.gpus().size(), 8u);  // the ASPEED VGA is a display device, not a GPU
  EXPECT_EQ(countKind(topo, DeviceKind::Nic), 4);
  EXPECT_EQ(countKind(topo, DeviceKind::Cpu), 2);
  EXPECT_EQ(countKind(topo, DeviceKind::PciSwitch), 4);  // root and downstream ports collapse
  EXPECT_EQ(countKind(topo, DeviceKind::NvSwitch), 0);

  for (int i = 0; i < 8; ++i) {
    const auto& gpu = topo.device(*topo.findGpu(i));
    EXPECT_EQ(gpu.id, "gpu" + std::to_string(i));
    EXPECT_EQ(gpu.pci_bus_id, kFixtureGpuBusIds[static_cast<std::size_t>(i)]);  // bus order
    EXPECT_EQ(gpu.numa, i < 4 ? 0 : 1);
    EXPECT_EQ(gpu.model, "GV100GL [Tesla V100 SXM2 16GB]");
    EXPECT_EQ(topo.laneCount(*topo.findGpu(i), LinkKind::NvLink), 0);
    // Two GPUs per switch, switches in bus order.
    const std::string sw = "pcisw" + std::to_string(i / 2);
    auto up = linkOf(topo, gpu.id, sw, LinkKind::Pcie);
    auto down = linkOf(topo, sw, gpu.id, LinkKind::Pcie);
    ASSERT_TRUE(up && down) << gpu.id << " <-> " << sw;
    EXPECT_EQ(up->generation, "pcie3x16");
    EXPECT_EQ(*up, *down);
    EXPECT_EQ(topo.laneCount(*topo.findGpu(i), LinkKind::Pcie), 1);
  }
  for (int k = 0; k < 4; ++k) {
    const std::string sw = "pcisw" + std::to_string(k);
    const std::string cpu = k < 2 ? "cpu0" : "cpu1";
    auto up = linkOf(topo, sw, cpu, LinkKind::Pcie);
    ASSERT_TRUE(up) << sw << " -> " << cpu;
    EXPECT_EQ(up->generation, "pcie3x16");
    EXPECT_TRUE(linkOf(topo, cpu, sw, LinkKind::Pcie));
    // Uplink + two GPUs + one NIC.
    EXPECT_EQ(topo.laneCount(vertexOf(topo, sw), LinkKind::Pcie), 4);
    const auto& nic = topo.device(vertexOf(topo, "nic" + std::to_string(k)));
    EXPECT_EQ(nic.model, "mlx5_" + std::to_string(k));
    EXPECT_TRUE(linkOf(topo, nic.id, sw, LinkKind::Pcie)) << nic.id << " -> " << sw;
  }
  EXPECT_EQ(topo.device(vertexOf(topo, "cpu0")).numa, 0);
  EXPECT_EQ(topo.device(vertexOf(topo, "cpu1")).numa, 1);
  auto qpi = linkOf(topo, "cpu0", "cpu1", LinkKind::Smp);
  ASSERT_TRUE(qpi);
  EXPECT_EQ(qpi->generation, "qpi");  // Broadwell Xeon: before UPI
  EXPECT_TRUE(linkOf(topo, "cpu1", "cpu0", LinkKind::Smp));
}

TEST(DiscoverFixture, FakeNvmlAddsTheCubeMesh) {
  const Topology topo = blink::topo::discoverLocalTopology(fixtureOptions(kFakeNvml));
  ASSERT_EQ(topo.gpus().size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(topo.laneCount(*topo.findGpu(i), LinkKind::NvLink), 6) << "gpu" << i;
    EXPECT_EQ(topo.device(*topo.findGpu(i)).model, "Tesla V100-SXM2-16GB");
  }
  EXPECT_EQ(nvlinkMultiplicity(topo, 0, 3), 2);
  EXPECT_EQ(nvlinkMultiplicity(topo, 3, 0), 2);
  EXPECT_EQ(nvlinkMultiplicity(topo, 0, 1), 1);
  EXPECT_EQ(nvlinkMultiplicity(topo, 1, 0), 1);
  EXPECT_EQ(nvlinkMultiplicity(topo, 0, 4), 2);
  EXPECT_EQ(nvlinkMultiplicity(topo, 2, 6), 1);
  EXPECT_EQ(nvlinkMultiplicity(topo, 0, 5), 0);  // not neighbours in the cube-mesh
  EXPECT_EQ(nvlinkMultiplicity(topo, 3, 4), 0);
  auto link = linkOf(topo, "gpu0", "gpu3", LinkKind::NvLink);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->generation, "nvlink2");
  EXPECT_DOUBLE_EQ(link->capacity(), 2 * LinkTable::builtin().get("nvlink2").gbps);
  int nvlink_edges = 0;
  for (auto e : topo.links()) nvlink_edges += topo.link(e).kind == LinkKind::NvLink ? 1 : 0;
  EXPECT_EQ(nvlink_edges, 32);  // 16 GPU pairs, both directions
  EXPECT_EQ(countKind(topo, DeviceKind::NvSwitch), 0);
  // The PCIe tree is unchanged by NVML.
  EXPECT_EQ(countKind(topo, DeviceKind::PciSwitch), 4);
}

TEST(DiscoverFixture, LanesToAnUnknownFarEndGoToOneNvSwitch) {
  ScopedEnv nvswitch("FAKE_NVML_NVSWITCH", "1");
  const Topology topo = blink::topo::discoverLocalTopology(fixtureOptions(kFakeNvml));
  ASSERT_EQ(countKind(topo, DeviceKind::NvSwitch), 1);
  const Vertex sw = vertexOf(topo, "nvswitch0");
  for (int i = 0; i < 8; ++i) {
    const std::string gpu = "gpu" + std::to_string(i);
    EXPECT_EQ(topo.laneCount(*topo.findGpu(i), LinkKind::NvLink), 6) << gpu;
    auto down = linkOf(topo, "nvswitch0", gpu, LinkKind::NvLink);
    ASSERT_TRUE(down);
    EXPECT_EQ(down->multiplicity, 6);
    EXPECT_EQ(nvlinkMultiplicity(topo, 0, i), 0);  // no direct GPU-GPU NVLink
  }
  EXPECT_EQ(topo.laneCount(sw, LinkKind::NvLink), 48);
}

TEST(DiscoverFixture, GpuIndexFollowsCudaWhenItSeesTheSameGpus) {
  DiscoverOptions opts = fixtureOptions(kFakeNvml);
  opts.use_cuda = true;
  blink::topo::CudaProbe cuda;
  // CUDA's default order (fastest first) need not be bus order.
  for (int i = 0; i < 8; ++i) {
    blink::topo::CudaDeviceInfo device;
    device.ordinal = i;
    device.name = "Tesla V100-SXM2-16GB";
    device.pci_bus_id = kFixtureGpuBusIds[static_cast<std::size_t>(7 - i)];
    cuda.devices.push_back(device);
  }
  cuda.can_access_peer.assign(8, std::vector<bool>(8, true));
  for (int i = 0; i < 8; ++i) cuda.can_access_peer[i][i] = false;
  opts.cuda_probe = cuda;
  const Topology reversed = blink::topo::discoverLocalTopology(opts);
  EXPECT_EQ(reversed.device(*reversed.findGpu(0)).pci_bus_id, "0000:8b:00.0");
  EXPECT_EQ(reversed.device(*reversed.findGpu(7)).pci_bus_id, "0000:06:00.0");
  // Buses 06 <-> 0b (gpu0 <-> gpu3 in bus order) carries two lanes whatever the numbering.
  EXPECT_EQ(nvlinkMultiplicity(reversed, 7, 4), 2);

  // A CUDA that sees only some GPUs (CUDA_VISIBLE_DEVICES) cannot number them all.
  cuda.devices.resize(2);
  cuda.can_access_peer.assign(2, std::vector<bool>(2, false));
  opts.cuda_probe = cuda;
  const Topology subset = blink::topo::discoverLocalTopology(opts);
  EXPECT_EQ(subset.device(*subset.findGpu(0)).pci_bus_id, "0000:06:00.0");
}

TEST(DiscoverFixture, MalformedXmlNamesTheFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("blink-test-malformed-" + std::to_string(getpid()) + ".xml");
  {
    std::ofstream out(path);
    out << "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\"\n";
  }
  DiscoverOptions opts;
  opts.hwloc_xml_path = path.string();
  opts.nvml_library = kNoSuchLibrary;
  try {
    (void)blink::topo::discoverLocalTopology(opts);
    ADD_FAILURE() << "a malformed XML file was accepted";
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);

  opts.hwloc_xml_path = "/nonexistent/topology.xml";
  try {
    (void)blink::topo::discoverLocalTopology(opts);
    ADD_FAILURE() << "a missing XML file was accepted";
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topology.xml"), std::string::npos);
  }
}

TEST(NvmlLoader, MissingLibraryIsAnEmptyViewWithAReason) {
  const auto view = blink::topo::queryNvml(kNoSuchLibrary);
  EXPECT_TRUE(view.gpus.empty());
  EXPECT_FALSE(view.why_none.empty());
}

TEST(NvmlLoader, FailingInitIsAnEmptyViewWithAReason) {
  ScopedEnv fail("FAKE_NVML_INIT_RESULT", "9");  // NVML_ERROR_DRIVER_NOT_LOADED
  const auto view = blink::topo::queryNvml(kFakeNvml);
  EXPECT_TRUE(view.gpus.empty());
  EXPECT_NE(view.why_none.find("init"), std::string::npos) << view.why_none;
}

TEST(NvmlLoader, ReadsGpusAndActiveLinksFromTheFake) {
  const auto view = blink::topo::queryNvml(kFakeNvml);
  ASSERT_EQ(view.gpus.size(), 8u) << view.why_none;
  EXPECT_TRUE(view.why_none.empty());
  for (std::size_t i = 0; i < view.gpus.size(); ++i) {
    const auto& gpu = view.gpus[i];
    EXPECT_EQ(gpu.index, static_cast<int>(i));
    EXPECT_EQ(gpu.name, "Tesla V100-SXM2-16GB");
    EXPECT_EQ(gpu.pci_bus_id, kFixtureGpuBusIds[i]);  // lower case, 4-digit domain
    ASSERT_EQ(gpu.nvlink.size(), 6u);
    for (const auto& link : gpu.nvlink) {
      EXPECT_EQ(link.version, 2u);
      EXPECT_NE(link.remote_pci_bus_id, gpu.pci_bus_id);
    }
  }
}

TEST(NvmlLoader, NormalisesBusIds) {
  using blink::topo::normalizePciBusId;
  EXPECT_EQ(normalizePciBusId("00000000:8A:00.0"), "0000:8a:00.0");
  EXPECT_EQ(normalizePciBusId("0000:06:00.0"), "0000:06:00.0");
  EXPECT_EQ(normalizePciBusId("06:00.1"), "0000:06:00.1");
  EXPECT_EQ(normalizePciBusId(" 0001:c1:1f.7 "), "0001:c1:1f.7");
  EXPECT_EQ(normalizePciBusId(""), "");
  EXPECT_EQ(normalizePciBusId("gpu0"), "");
  EXPECT_EQ(normalizePciBusId("0000:06:00"), "");
  EXPECT_EQ(normalizePciBusId("0000:06:20.0"), "");  // device numbers stop at 0x1f
  EXPECT_EQ(normalizePciBusId("0:0:0:06:00.0"), "");
}

TEST(NvmlLoader, NvLinkVersionsFollowNvmlsEnum) {
  using blink::topo::nvlinkGenerationOf;
  EXPECT_EQ(nvlinkGenerationOf(1), "nvlink1");
  EXPECT_EQ(nvlinkGenerationOf(2), "nvlink2");
  EXPECT_EQ(nvlinkGenerationOf(3), "nvlink2");  // NVLink 2.2
  EXPECT_EQ(nvlinkGenerationOf(4), "nvlink3");
  EXPECT_EQ(nvlinkGenerationOf(6), "nvlink4");
  EXPECT_EQ(nvlinkGenerationOf(7), "nvlink5");
  EXPECT_EQ(nvlinkGenerationOf(0), "");
  EXPECT_EQ(nvlinkGenerationOf(99), "");
}

TEST(Discover, PcieSpeedMapsToTheNearestGenerationAndWidth) {
  const LinkTable table = LinkTable::builtin();
  using blink::topo::nearestPcieGeneration;
  EXPECT_EQ(nearestPcieGeneration(15.753846, table), "pcie3x16");  // not gen4 x8
  EXPECT_EQ(nearestPcieGeneration(31.507692, table), "pcie4x16");
  EXPECT_EQ(nearestPcieGeneration(63.015385, table), "pcie5x16");
  EXPECT_EQ(nearestPcieGeneration(7.876923, table), "pcie3x8");
  EXPECT_EQ(nearestPcieGeneration(0.984615, table), "pcie3x1");
  EXPECT_EQ(nearestPcieGeneration(14.0, table), "pcie3x16");
  EXPECT_EQ(nearestPcieGeneration(0.0, table), "pcie3x16");
  EXPECT_EQ(nearestPcieGeneration(-1.0, table), "pcie3x16");
  // A measured override changes the speed of a generation, not which one a slot is.
  LinkTable measured = LinkTable::builtin();
  measured.applyOverrides("pcie3x16=11.5");
  EXPECT_EQ(nearestPcieGeneration(15.753846, measured), "pcie3x16");
}

}  // namespace
