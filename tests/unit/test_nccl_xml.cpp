#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "topology/nccl_xml.hpp"

namespace {

using blink::Error;
using namespace blink::topo;

// ---- documents in NCCL's format (as NCCL_TOPO_DUMP_FILE writes them) -----------------

// The DGX-1V's hybrid cube-mesh: pairs with two NVLinks, then pairs with one. Every
// GPU ends up with six lanes.
const std::vector<std::pair<int, int>> kDgx1DoubleLinks = {{0, 3}, {0, 4}, {1, 2}, {1, 5},
                                                           {2, 3}, {4, 7}, {5, 6}, {6, 7}};
const std::vector<std::pair<int, int>> kDgx1SingleLinks = {{0, 1}, {0, 2}, {1, 3}, {2, 6},
                                                           {3, 7}, {4, 5}, {4, 6}, {5, 7}};
const char* const kDgx1GpuBus[] = {"0000:06:00.0", "0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0",
                                   "0000:85:00.0", "0000:86:00.0", "0000:89:00.0", "0000:8a:00.0"};
const char* const kDgx1NicBus[] = {"0000:05:00.0", "0000:0c:00.0", "0000:84:00.0", "0000:8b:00.0"};
const char* const kDgx1SwitchBus[] = {"0000:03:00.0", "0000:08:00.0", "0000:82:00.0",
                                      "0000:87:00.0"};

std::string dgx1GpuPci(int gpu) {
  std::map<int, int> lanes;
  for (auto [a, b] : kDgx1DoubleLinks) {
    if (a == gpu) lanes[b] = 2;
    if (b == gpu) lanes[a] = 2;
  }
  for (auto [a, b] : kDgx1SingleLinks) {
    if (a == gpu) lanes[b] = 1;
    if (b == gpu) lanes[a] = 1;
  }
  std::string xml = std::string("      <pci busid=\"") + kDgx1GpuBus[gpu] +
                    "\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x1db1\" "
                    "link_speed=\"8.0 GT/s PCIe\" link_width=\"16\">\n"
                    "        <gpu dev=\"" +
                    std::to_string(gpu) + "\" sm=\"70\" rank=\"" + std::to_string(gpu) +
                    "\" gdr=\"1\">\n";
  for (auto [peer, count] : lanes) {
    xml += std::string("          <nvlink target=\"") + kDgx1GpuBus[peer] + "\" count=\"" +
           std::to_string(count) + "\" tclass=\"0x030200\"/>\n";
  }
  return xml + "        </gpu>\n      </pci>\n";
}

// Two sockets, each with two PLX switches holding two GPUs and one ConnectX-4.
std::string dgx1Xml() {
  std::string xml = "<?xml version=\"1.0\"?>\n<system version=\"1\">\n";
  for (int socket = 0; socket < 2; ++socket) {
    xml += "  <cpu numaid=\"" + std::to_string(socket) +
           "\" affinity=\"00000000,00000000\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
           "familyid=\"6\" modelid=\"79\">\n";
    for (int plx = socket * 2; plx < socket * 2 + 2; ++plx) {
      xml += std::string("    <pci busid=\"") + kDgx1SwitchBus[plx] +
             "\" class=\"0x060400\" vendor=\"0x10b5\" device=\"0x8764\" "
             "link_speed=\"8.0 GT/s PCIe\" link_width=\"16\">\n";
      xml += dgx1GpuPci(plx * 2) + dgx1GpuPci(plx * 2 + 1);
      xml += std::string("      <pci busid=\"") + kDgx1NicBus[plx] +
             "\" class=\"0x020700\" vendor=\"0x15b3\" device=\"0x1013\" "
             "link_speed=\"8.0 GT/s PCIe\" link_width=\"16\">\n"
             "        <nic>\n          <net name=\"mlx5_" +
             std::to_string(plx) + "\" dev=\"" + std::to_string(plx) +
             "\" speed=\"100000\" port=\"1\" latency=\"0.000000\" guid=\"0x1\" maxconn=\"262144\" "
             "gdr=\"1\"/>\n        </nic>\n      </pci>\n";
      xml += "    </pci>\n";
    }
    xml += "  </cpu>\n";
  }
  return xml + "</system>\n";
}

// An HGX A100: each GPU sends its 12 NVLinks into the NVSwitches, which NCCL lists as
// one <nvlink> with tclass 0x068000. Two GPUs per PCIe switch.
std::string nvswitchXml() {
  std::string xml = "<system version=\"1\">\n";
  for (int socket = 0; socket < 2; ++socket) {
    xml += "<cpu numaid=\"" + std::to_string(socket) +
           "\" arch=\"x86_64\" vendor=\"AuthenticAMD\" familyid=\"23\" modelid=\"49\">\n";
    for (int pair = 0; pair < 2; ++pair) {
      const int first = socket * 4 + pair * 2;
      xml += "<pci busid=\"0000:" + std::to_string(10 + first) +
             ":00.0\" class=\"0x060400\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n";
      for (int gpu = first; gpu < first + 2; ++gpu) {
        xml += "<pci busid=\"0000:" + std::to_string(50 + gpu) +
               ":00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"
               "<gpu dev=\"" +
               std::to_string(gpu) +
               "\" sm=\"80\" rank=\"0\" gdr=\"1\">"
               "<nvlink target=\"0000:c8:00.0\" count=\"12\" tclass=\"0x068000\"/>"
               "</gpu></pci>\n";
      }
      xml += "</pci>\n";
    }
    xml += "</cpu>\n";
  }
  return xml + "</system>\n";
}

int countKind(const Topology& topology, DeviceKind kind) {
  int count = 0;
  for (Vertex v : boost::make_iterator_range(boost::vertices(topology.graph()))) {
    if (topology.device(v).kind == kind) ++count;
  }
  return count;
}

const Link& onlyLink(const Topology& topology, const std::string& from, const std::string& to,
                     LinkKind kind) {
  auto a = topology.find(from);
  auto b = topology.find(to);
  if (!a || !b) throw std::runtime_error("no device " + (a ? to : from));
  for (Edge e : topology.linksBetween(*a, *b)) {
    if (topology.link(e).kind == kind) return topology.link(e);
  }
  throw std::runtime_error("no " + std::string(toString(kind)) + " link " + from + " -> " + to);
}

Topology import(const std::string& xml) {
  return importNcclXmlString(xml, "test.xml", LinkTable::builtin());
}

// The message of the blink::Error that importing `xml` throws ("" if none is thrown).
std::string importError(const std::string& xml) {
  try {
    import(xml);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << xml;
  return "";
}

// A minimal one-GPU system around a <gpu> element, for the malformed cases.
std::string oneGpu(const std::string& gpu_element, const std::string& link_speed = "8 GT/s") {
  return "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\">"
         "<pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"" +
         link_speed + "\" link_width=\"16\">" + gpu_element + "</pci></cpu></system>";
}

// ---- well-formed systems ---------------------------------------------------------------

TEST(NcclXml, Dgx1vDevicesAndLinks) {
  const Topology topology = import(dgx1Xml());
  EXPECT_EQ(topology.name(), "test.xml");
  EXPECT_EQ(topology.numDevices(), 18u);
  EXPECT_EQ(countKind(topology, DeviceKind::Cpu), 2);
  EXPECT_EQ(countKind(topology, DeviceKind::PciSwitch), 4);
  EXPECT_EQ(countKind(topology, DeviceKind::Gpu), 8);
  EXPECT_EQ(countKind(topology, DeviceKind::Nic), 4);
  EXPECT_EQ(countKind(topology, DeviceKind::NvSwitch), 0);
  // Duplex: 1 SMP, 16 PCIe (4 switches, 8 GPUs, 4 NICs), 16 NVLink pairs.
  EXPECT_EQ(topology.numLinks(), 2u * (1 + 16 + 16));

  ASSERT_EQ(topology.gpus().size(), 8u);
  for (Vertex gpu : topology.gpus()) {
    EXPECT_EQ(topology.laneCount(gpu, LinkKind::NvLink), 6) << topology.device(gpu).id;
    EXPECT_EQ(topology.device(gpu).model, "sm70");
  }
  const Device& gpu5 = topology.device(*topology.findGpu(5));
  EXPECT_EQ(gpu5.id, "gpu5");
  EXPECT_EQ(gpu5.pci_bus_id, "0000:86:00.0");
  EXPECT_EQ(gpu5.numa, 1);

  const Link& double_link = onlyLink(topology, "gpu0", "gpu3", LinkKind::NvLink);
  EXPECT_EQ(double_link.multiplicity, 2);
  EXPECT_EQ(double_link.generation, "nvlink2");
  EXPECT_EQ(onlyLink(topology, "gpu3", "gpu0", LinkKind::NvLink).multiplicity, 2);
  EXPECT_EQ(onlyLink(topology, "gpu2", "gpu6", LinkKind::NvLink).multiplicity, 1);
  EXPECT_TRUE(topology.linksBetween(*topology.find("gpu0"), *topology.find("gpu7")).empty());

  // GPUs hang from their PLX switch at PCIe gen3 x16, the switch from its socket.
  const Link& gpu_pcie = onlyLink(topology, "gpu0", "pcisw0", LinkKind::Pcie);
  EXPECT_EQ(gpu_pcie.generation, "pcie3x16");
  EXPECT_DOUBLE_EQ(gpu_pcie.gbps, LinkTable::builtin().get("pcie3x16").gbps);
  EXPECT_EQ(onlyLink(topology, "pcisw0", "gpu0", LinkKind::Pcie).generation, "pcie3x16");
  EXPECT_EQ(onlyLink(topology, "pcisw2", "cpu1", LinkKind::Pcie).generation, "pcie3x16");
  EXPECT_EQ(topology.device(*topology.find("pcisw1")).pci_bus_id, "0000:08:00.0");
  EXPECT_EQ(topology.device(*topology.find("pcisw1")).model, "pci 0x10b5:0x8764");
  EXPECT_EQ(onlyLink(topology, "cpu0", "cpu1", LinkKind::Smp).generation, "qpi");

  const Device& nic2 = topology.device(*topology.find("nic2"));
  EXPECT_EQ(nic2.kind, DeviceKind::Nic);
  EXPECT_EQ(nic2.model, "mlx5_2 100 Gb/s");
  EXPECT_EQ(nic2.pci_bus_id, "0000:84:00.0");
  EXPECT_EQ(nic2.numa, 1);
  EXPECT_EQ(onlyLink(topology, "nic2", "pcisw2", LinkKind::Pcie).generation, "pcie3x16");
  // The port rate is a model string, not a link: clusters are assembled elsewhere.
  for (Edge e : topology.links()) EXPECT_NE(topology.link(e).kind, LinkKind::Network);
}

TEST(NcclXml, NvSwitchSystem) {
  const Topology topology = import(nvswitchXml());
  EXPECT_EQ(countKind(topology, DeviceKind::NvSwitch), 1);
  EXPECT_EQ(countKind(topology, DeviceKind::Gpu), 8);
  EXPECT_EQ(countKind(topology, DeviceKind::PciSwitch), 4);
  const Vertex nvswitch = *topology.find("nvswitch0");
  EXPECT_EQ(topology.laneCount(nvswitch, LinkKind::NvLink), 8 * 12);
  for (Vertex gpu : topology.gpus()) {
    EXPECT_EQ(topology.laneCount(gpu, LinkKind::NvLink), 12) << topology.device(gpu).id;
    const Link& link = onlyLink(topology, topology.device(gpu).id, "nvswitch0", LinkKind::NvLink);
    EXPECT_EQ(link.generation, "nvlink3");
    EXPECT_EQ(link.multiplicity, 12);
  }
  EXPECT_EQ(onlyLink(topology, "gpu4", "pcisw2", LinkKind::Pcie).generation, "pcie4x16");
  EXPECT_EQ(onlyLink(topology, "cpu0", "cpu1", LinkKind::Smp).generation, "xgmi");
}

TEST(NcclXml, ReadsAFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("blink_test_nccl_xml_" + std::to_string(::getpid()) + ".xml");
  {
    std::ofstream out(path);
    out << dgx1Xml();
  }
  const Topology topology = importNcclXml(path.string(), LinkTable::builtin());
  std::filesystem::remove(path);
  EXPECT_EQ(topology.gpus().size(), 8u);

  try {
    importNcclXml(path.string(), LinkTable::builtin());
    FAIL() << "a missing file was imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

TEST(NcclXml, PcieSpeedsAndWidths) {
  // Old gens scale the gen3 rate; odd widths round down; width 0 means x16 (unknown).
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x030000\" link_speed=\"2.5 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"60\"/></pci>"
      "<pci busid=\"0000:02:00.0\" class=\"0x030000\" link_speed=\"5.0 GT/s PCIe\" "
      "link_width=\"12\"><gpu dev=\"1\" sm=\"60\"/></pci>"
      "<pci busid=\"0000:03:00.0\" class=\"0x030000\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"0\"><gpu dev=\"2\" sm=\"90\"/></pci>"
      "<pci busid=\"0000:04:00.0\" class=\"0x030000\" link_speed=\"16 GT/s\" link_width=\"32\">"
      "<gpu dev=\"3\" sm=\"90\"/></pci>"
      "<pci busid=\"0000:05:00.0\" class=\"0x030000\" link_speed=\"\" link_width=\"4\">"
      "<gpu dev=\"4\" sm=\"90\"/></pci>"
      "</cpu></system>";
  const Topology topology = import(xml);
  const LinkTable table = LinkTable::builtin();
  const Link& gen1 = onlyLink(topology, "gpu0", "cpu0", LinkKind::Pcie);
  EXPECT_EQ(gen1.generation, "pcie1x16");
  EXPECT_NEAR(gen1.gbps, table.get("pcie3x16").gbps * 0.25 / 0.985, 1e-9);
  const Link& gen2 = onlyLink(topology, "gpu1", "cpu0", LinkKind::Pcie);
  EXPECT_EQ(gen2.generation, "pcie2x8");
  EXPECT_NEAR(gen2.gbps, table.get("pcie3x8").gbps * 0.5 / 0.985, 1e-9);
  EXPECT_EQ(onlyLink(topology, "gpu2", "cpu0", LinkKind::Pcie).generation, "pcie5x16");
  EXPECT_EQ(onlyLink(topology, "gpu3", "cpu0", LinkKind::Pcie).generation, "pcie4x16");
  // NCCL reads an empty speed as gen3.
  EXPECT_EQ(onlyLink(topology, "gpu4", "cpu0", LinkKind::Pcie).generation, "pcie3x4");
}

TEST(NcclXml, CollapsesSingleChildBridgesAndDropsEmptyOnes) {
  // cpu0 -> bridge A (x16 gen4) -> bridge B (x8 gen4) -> GPU (x16 gen4): A and B have
  // one child each, so the GPU hangs from the socket at the slowest link of the chain.
  // A bridge holding only an NVMe drive is dropped.
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\">"
      "<pci busid=\"0000:10:00.0\" class=\"0x060400\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<pci busid=\"0000:11:00.0\" class=\"0x060400\" link_speed=\"16 GT/s\" link_width=\"8\">"
      "<pci busid=\"0000:12:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"80\"/></pci></pci></pci>"
      "<pci busid=\"0000:20:00.0\" class=\"0x060400\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<pci busid=\"0000:21:00.0\" class=\"0x010802\" link_speed=\"16 GT/s\" link_width=\"4\"/>"
      "</pci></cpu></system>";
  const Topology topology = import(xml);
  EXPECT_EQ(topology.numDevices(), 2u);
  EXPECT_EQ(onlyLink(topology, "gpu0", "cpu0", LinkKind::Pcie).generation, "pcie4x8");
}

TEST(NcclXml, GpuIndexByOrderNicsUnderCpuAndNvLinkToCpu) {
  // No dev attributes: GPUs are numbered in order of appearance. A <nic> straight under
  // <cpu> is a NIC of that socket. tclass 0x068001 is an NVLink to the CPU (POWER9).
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"ppc64\">"
      "<pci busid=\"0004:04:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">"
      "<gpu sm=\"70\"><nvlink target=\"0004:05:00.0\" count=\"3\" tclass=\"0x030200\"/>"
      "<nvlink target=\"0007:00:00.0\" count=\"3\" tclass=\"0x068001\"/></gpu></pci>"
      "<pci busid=\"0004:05:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" link_width=\"16\">"
      "<gpu sm=\"70\"><nvlink target=\"0004:04:00.0\" count=\"3\" tclass=\"0x030200\"/>"
      "<nvlink target=\"0007:00:00.0\" count=\"3\" tclass=\"0x068001\"/></gpu></pci>"
      "<nic><net name=\"ib0\" dev=\"0\" speed=\"200000\"/><net name=\"off\"/></nic>"
      "</cpu></system>";
  const Topology topology = import(xml);
  EXPECT_EQ(topology.device(*topology.findGpu(1)).pci_bus_id, "0004:05:00.0");
  EXPECT_EQ(onlyLink(topology, "gpu0", "gpu1", LinkKind::NvLink).multiplicity, 3);
  EXPECT_EQ(onlyLink(topology, "gpu1", "cpu0", LinkKind::NvLink).multiplicity, 3);
  EXPECT_EQ(topology.laneCount(*topology.findGpu(0), LinkKind::NvLink), 6);
  EXPECT_EQ(countKind(topology, DeviceKind::Nic), 1);  // the <net> without dev is skipped
  EXPECT_EQ(topology.device(*topology.find("nic0")).model, "ib0 200 Gb/s");
  EXPECT_EQ(onlyLink(topology, "nic0", "cpu0", LinkKind::Pcie).generation, "pcie5x16");
}

// ---- malformed files --------------------------------------------------------------------

TEST(NcclXml, RejectsTextThatIsNotXml) {
  const std::string message = importError("<system version=\"1\">\n<cpu numaid=\"0\">\n</system>");
  EXPECT_NE(message.find("test.xml:3"), std::string::npos) << message;
  EXPECT_NE(message.find("not well-formed XML"), std::string::npos) << message;
  EXPECT_NE(importError("this is not xml").find("test.xml"), std::string::npos);
}

TEST(NcclXml, RejectsAMissingSystemRoot) {
  const std::string message = importError("<topology><cpu numaid=\"0\"/></topology>");
  EXPECT_NE(message.find("test.xml: no <system> root element (found <topology>)"),
            std::string::npos)
      << message;
  EXPECT_NE(importError("<system version=\"1\"/>").find("no <cpu>"), std::string::npos);
}

TEST(NcclXml, RejectsANonNumericGpuDev) {
  const std::string message = importError(oneGpu("<gpu dev=\"zero\" sm=\"70\"/>"));
  EXPECT_NE(message.find("test.xml: <gpu> of <pci busid=\"0000:06:00.0\"> has dev=\"zero\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("expected a non-negative integer"), std::string::npos) << message;
}

TEST(NcclXml, IgnoresAnNvLinkToAGpuTheFileDoesNotList) {
  // What a process limited by CUDA_VISIBLE_DEVICES dumps: NCCL ignores such links.
  Topology t =
      importNcclXmlString(oneGpu("<gpu dev=\"0\" sm=\"70\"><nvlink target=\"0000:07:00.0\" "
                                 "count=\"2\" tclass=\"0x030200\"/></gpu>"),
                          "test.xml", LinkTable::builtin());
  ASSERT_EQ(t.gpus().size(), 1u);
  EXPECT_EQ(t.laneCount(t.gpus()[0], LinkKind::NvLink), 0);
}

TEST(NcclXml, RejectsAnNvLinkToAnUnknownTargetOfNoClass) {
  const std::string message = importError(
      oneGpu("<gpu dev=\"0\" sm=\"70\"><nvlink target=\"0000:07:00.0\" count=\"2\"/></gpu>"));
  EXPECT_NE(message.find("test.xml: <nvlink target=\"0000:07:00.0\""), std::string::npos)
      << message;
  EXPECT_NE(message.find("matches no <gpu> of the file and is not an NVSwitch"), std::string::npos)
      << message;
}

TEST(NcclXml, RejectsAnUnknownLinkSpeed) {
  const std::string message = importError(oneGpu("<gpu dev=\"0\" sm=\"70\"/>", "10 GT/s"));
  EXPECT_NE(message.find("test.xml: <pci busid=\"0000:06:00.0\"> has link_speed=\"10 GT/s\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("expected one of 2.5, 5, 8, 16, 32 or 64 GT/s"), std::string::npos)
      << message;
  EXPECT_NE(importError(oneGpu("<gpu dev=\"0\"/>", "fast")).find("link_speed=\"fast\""),
            std::string::npos);
}

TEST(NcclXml, RejectsOtherMalformedCases) {
  EXPECT_NE(importError(oneGpu("<gpu dev=\"0\"><nvlink target=\"x\" count=\"many\" "
                               "tclass=\"0x068000\"/></gpu>"))
                .find("count=\"many\""),
            std::string::npos);
  EXPECT_NE(importError(oneGpu("<gpu dev=\"0\"><nvlink target=\"x\" count=\"2\" "
                               "tclass=\"0x068000\"/></gpu>"))
                .find("has no sm attribute"),
            std::string::npos);
  EXPECT_NE(importError(oneGpu("<gpu dev=\"0\"/><gpu dev=\"1\"/>")).find("MLOPart"),
            std::string::npos);
  // A duplicate dev is caught by Topology, and still names the file.
  std::string duplicate_dev = nvswitchXml();
  duplicate_dev.replace(duplicate_dev.find("dev=\"1\""), 7, "dev=\"0\"");
  EXPECT_NE(importError(duplicate_dev).find("test.xml: "), std::string::npos);
  EXPECT_NE(importError("<system><cpu numaid=\"0\" host_hash=\"0x1\"/>"
                        "<cpu numaid=\"1\" host_hash=\"0x2\"/></system>")
                .find("several hosts"),
            std::string::npos);
}

}  // namespace
