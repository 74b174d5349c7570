// The network devices of a node as its description sees them: listed from (a fake)
// sysfs with their speeds, merged with hwloc's NICs into "nic<k>" devices in list
// order, rates measured by BLINK_PROBE_LINKS put on the uplinks, and the rank -> NIC
// map the transport sends by.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "link_of.hpp"
#include "runtime/nic_assignment.hpp"
#include "topology/host_nics.hpp"
#include "topology/job_graph.hpp"
#include "topology/node_description.hpp"

namespace {

using namespace blink::topo;

const std::string kTwoSocket = std::string(BLINK_TEST_DATA_DIR) + "/hwloc-2socket-no-gpu.xml";

Topology describe(std::optional<std::vector<HostNic>> nics) {
  NodeDescribeOptions options;
  options.discover.hwloc_xml_path = kTwoSocket;  // one NIC, eth7, under socket 1
  options.discover.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.discover.use_cuda = false;
  options.sysfs_root = "";
  options.nics = std::move(nics);
  return describeNode(options);
}

HostNic nic(const std::string& name, double gbps, int numa = -1) {
  HostNic n;
  n.device = n.os_name = name;
  n.gbps = gbps;
  n.speed_source = gbps > 0 ? "sysfs" : "unknown";
  n.numa = numa;
  return n;
}

using blink::topo::testing::linkOf;

TEST(HostNics, ListedFromSysfsWithSpeedNumaAndAddress) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("blink-host-nics-" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "devices/0000:3b:00.1");
  std::filesystem::create_directories(root / "class/net/eth0");
  std::filesystem::create_directory_symlink("../../../devices/0000:3b:00.1",
                                            root / "class/net/eth0/device");
  std::filesystem::create_directories(root / "class/net/veth1");
  std::ofstream(root / "class/net/eth0/speed") << "1000\n";
  std::ofstream(root / "class/net/eth0/device/numa_node") << "1\n";
  std::ofstream(root / "class/net/veth1/speed") << "-1\n";
  const auto nics = hostNicsFrom(root.string(), {{"eth0", "10.0.0.1"}, {"veth1", "10.0.1.1"}});
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_EQ(nics[0].device, "eth0");
  EXPECT_DOUBLE_EQ(nics[0].gbps, 0.125);
  EXPECT_EQ(nics[0].speed_source, "sysfs");
  EXPECT_EQ(nics[0].numa, 1);
  EXPECT_EQ(nics[0].ipv4, "10.0.0.1");
  EXPECT_EQ(nics[0].pci_bus_id, "0000:3b:00.1");
  EXPECT_EQ(nics[1].pci_bus_id, "");
  EXPECT_EQ(nics[1].gbps, 0.0);
  EXPECT_EQ(nics[1].speed_source, "unknown");
  EXPECT_EQ(nics[1].numa, -1);
  EXPECT_EQ(gbitText(1.25), "10 Gbit/s");
  std::filesystem::remove_all(root);
}

TEST(HostNics, BecomeTheNodesNicsInListOrder) {
  // eth1 is no PCI device hwloc shows (a veth): it hangs off the first CPU; eth7 is
  // hwloc's NIC under socket 1 and keeps its PCIe link there.
  const Topology node = describe(std::vector<HostNic>{nic("eth1", 0.125), nic("eth7", 1.25, 1)});
  EXPECT_EQ(node.device(*node.find("nic0")).model, "eth1");
  EXPECT_EQ(node.device(*node.find("nic1")).model, "eth7");
  EXPECT_TRUE(linkOf(node, "nic0", "cpu0", LinkKind::Pcie));
  EXPECT_EQ(linkOf(node, "nic1", "cpu1", LinkKind::Pcie)->generation, "pcie3x8");
  const auto up0 = linkOf(node, "nic0", "netsw0", LinkKind::Network);
  ASSERT_TRUE(up0);
  EXPECT_DOUBLE_EQ(up0->capacity(), 0.125);
  EXPECT_EQ(up0->source, LinkSource::Sysfs);
  EXPECT_DOUBLE_EQ(linkOf(node, "nic1", "netsw0", LinkKind::Network)->capacity(), 1.25);
  EXPECT_EQ(hostNicIndex(node.device(*node.find("nic1"))), 1);
  EXPECT_FALSE(node.find("nic2"));
}

TEST(HostNics, AnHwlocNicThatIsNotListedIsLeftOutAndNumaPlacesTheRest) {
  const Topology node = describe(std::vector<HostNic>{nic("eth3", 0.0, 1)});
  EXPECT_EQ(node.device(*node.find("nic0")).model, "eth3");
  EXPECT_FALSE(node.find("nic1"));  // hwloc's eth7 is not up here
  EXPECT_TRUE(linkOf(node, "nic0", "cpu1", LinkKind::Pcie));
  EXPECT_EQ(linkOf(node, "nic0", "netsw0", LinkKind::Network)->source, LinkSource::Table);
  // Unset: hwloc's NICs, as before.
  EXPECT_EQ(describe(std::nullopt).device(*describe(std::nullopt).find("nic0")).model, "eth7");
}

TEST(HostNics, AnHwlocNicOfTheSamePciFunctionKeepsItsPlace) {
  HostNic port = nic("mlx5_0:1", 12.5);  // hwloc calls its NIC eth7 (say, ib0)
  port.pci_bus_id = "0000:81:00.0";
  const Topology node = describe(std::vector<HostNic>{port});
  EXPECT_EQ(node.device(*node.find("nic0")).model, "mlx5_0:1");
  EXPECT_EQ(linkOf(node, "nic0", "cpu1", LinkKind::Pcie)->generation, "pcie3x8");
  EXPECT_FALSE(node.find("nic1"));
}

TEST(HostNics, MeasuredRatesLowerTheUplinksOnly) {
  const Topology node = describe(std::vector<HostNic>{nic("eth1", 1.25), nic("eth7", 1.25, 1)});
  const Topology job = mergeNodes({&node, &node}, LinkTable::builtin(), false);
  const Topology measured = withMeasuredNicRates(job, {0.117, 2.0});
  for (const std::string p : {"n0.", "n1."}) {
    for (const auto& [a, b] : {std::pair{p + "nic0", std::string("netsw0")},
                               std::pair{std::string("netsw0"), p + "nic0"}}) {
      const auto l = linkOf(measured, a, b, LinkKind::Network);
      ASSERT_TRUE(l);
      EXPECT_DOUBLE_EQ(l->capacity(), 0.117);
      EXPECT_EQ(l->source, LinkSource::Measured);
    }
    // Measured above its nominal speed: the nominal one stays.
    const auto fast = linkOf(measured, p + "nic1", "netsw0", LinkKind::Network);
    EXPECT_DOUBLE_EQ(fast->capacity(), 1.25);
    EXPECT_EQ(fast->source, LinkSource::Sysfs);
    EXPECT_EQ(linkOf(measured, p + "nic0", p + "cpu0", LinkKind::Pcie),
              linkOf(job, p + "nic0", p + "cpu0", LinkKind::Pcie));
  }
  EXPECT_EQ(hostNicIndex(measured.device(*measured.find("n1.nic1"))), 1);
  EXPECT_EQ(hostNicIndex(makeDevice("n0.vnic0", DeviceKind::Nic)), -1);
}

TEST(NicAssignment, EachRankSendsOnTheNicNearestItsSocket) {
  // Two nodes of two sockets, a NIC on each socket, a host rank bound to each socket.
  const Topology node = describe(std::vector<HostNic>{nic("eth1", 0.125), nic("eth7", 0.125, 1)});
  blink::runtime::JobTopology job;
  JobGraph graph = buildJobGraph({&node, &node}, {{0, 0, 0}, {0, 1, 1}, {1, 0, 0}, {1, 1, 1}},
                                 LinkTable::builtin());
  job.topology = std::move(graph.topology);
  job.plan_rank_of = graph.plan_rank_of;
  job.comm_rank_of = graph.comm_rank_of;
  job.discovered = true;
  const auto map = blink::runtime::assignNics(job);
  ASSERT_EQ(map.nics_of_rank.size(), 4u);
  EXPECT_EQ(map.nics_of_rank[0], std::vector<int>{0});
  EXPECT_EQ(map.nics_of_rank[1], std::vector<int>{1});
  EXPECT_EQ(map.nics_of_rank[2], std::vector<int>{0});
  EXPECT_EQ(map.nics_of_rank[3], std::vector<int>{1});
  EXPECT_NE(map.text.find("rank 1 (node 0) -> n0.nic1 eth7"), std::string::npos) << map.text;
  // Not discovered (BLINK_TOPO): no map, the transport's round robin.
  job.discovered = false;
  EXPECT_TRUE(blink::runtime::assignNics(job).nics_of_rank[0].empty());
}

}  // namespace
