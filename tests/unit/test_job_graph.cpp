// The job graph from node descriptions: a two-socket host without GPUs (an hwloc XML
// fixture) with host ranks on its sockets, the merge of several nodes into a
// cluster, GPU ranks on a DGX-1-like node, and where every link's speed came from.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "link_of.hpp"
#include "plan/planner.hpp"
#include "topology/job_graph.hpp"
#include "topology/node_description.hpp"
#include "topology/placement.hpp"
#include "topology/topology_json.hpp"

namespace {

using namespace blink::topo;

const std::string kTwoSocket = std::string(BLINK_TEST_DATA_DIR) + "/hwloc-2socket-no-gpu.xml";
const std::string kDgx1Like = std::string(BLINK_TEST_DATA_DIR) + "/hwloc-dgx1-like.xml";

Topology describe(const std::string& xml, const LinkTable& table = LinkTable::builtin()) {
  NodeDescribeOptions options;
  options.discover.hwloc_xml_path = xml;
  options.discover.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.discover.use_cuda = false;
  options.discover.table = table;
  options.sysfs_root = "";  // the fixture's NICs are not this machine's
  return describeNode(options);
}

using blink::topo::testing::linkOf;

// The device ids a vertex has links to.
std::vector<std::string> neighbours(const Topology& t, const std::string& id) {
  std::vector<std::string> out;
  for (Edge e : boost::make_iterator_range(boost::out_edges(*t.find(id), t.graph()))) {
    out.push_back(t.device(t.target(e)).id);
  }
  return out;
}

int countKind(const Topology& t, DeviceKind kind) {
  int n = 0;
  for (Vertex v = 0; v < t.numDevices(); ++v) n += t.device(v).kind == kind ? 1 : 0;
  return n;
}

TEST(NodeDescription, TwoSocketHostWithOneNic) {
  const Topology node = describe(kTwoSocket);
  EXPECT_EQ(node.name(), "");  // not the host name: identical nodes describe identically
  EXPECT_EQ(countKind(node, DeviceKind::Cpu), 2);
  EXPECT_EQ(node.gpus().size(), 0u);
  // Intel family 6 model 85 (Skylake-SP): UPI, from the table.
  auto upi = linkOf(node, "cpu0", "cpu1", LinkKind::Smp);
  ASSERT_TRUE(upi);
  EXPECT_EQ(upi->generation, "upi");
  EXPECT_EQ(upi->source, LinkSource::Table);
  // The NIC sits under socket 1 at the PCIe speed hwloc read from sysfs (gen3 x8).
  auto pcie = linkOf(node, "nic0", "cpu1", LinkKind::Pcie);
  ASSERT_TRUE(pcie);
  EXPECT_EQ(pcie->generation, "pcie3x8");
  EXPECT_EQ(pcie->source, LinkSource::Sysfs);
  // Its port speed is unknown without sysfs: the table's default Ethernet.
  auto uplink = linkOf(node, "nic0", "netsw0", LinkKind::Network);
  ASSERT_TRUE(uplink);
  EXPECT_EQ(uplink->generation, kDefaultNicGeneration);
  EXPECT_EQ(uplink->source, LinkSource::Table);
  EXPECT_EQ(node.device(*node.find("netsw0")).node, -1);
}

TEST(NodeDescription, IdenticalNodesSerialiseIdenticallyAndRoundTrip) {
  const std::string a = serializeNode(describe(kTwoSocket));
  const std::string b = serializeNode(describe(kTwoSocket));
  const std::string c = serializeNode(describe(kDgx1Like));
  EXPECT_EQ(a, b);
  EXPECT_EQ(descriptionHash(a), descriptionHash(b));
  EXPECT_NE(descriptionHash(a), descriptionHash(c));
  // What travels is what arrives, sources included.
  const Topology back = fromJson(a, "node description", LinkTable::builtin());
  EXPECT_TRUE(back.sameAs(describe(kTwoSocket)));
  EXPECT_EQ(linkOf(back, "nic0", "cpu1", LinkKind::Pcie)->source, LinkSource::Sysfs);
}

TEST(NodeDescription, NicPortSpeedFromSysfsIsASysfsLink) {
  const Link fast = nicUplink(25.0, LinkTable::builtin());  // a 200 Gb/s port
  EXPECT_EQ(fast.gbps, 25.0);
  EXPECT_EQ(fast.source, LinkSource::Sysfs);
  EXPECT_EQ(fast.kind, LinkKind::Network);
  EXPECT_EQ(nicPortGbps("", "eth0"), 0.0);
  EXPECT_EQ(nicPortGbps("/nonexistent", "eth0"), 0.0);
  LinkTable measured = LinkTable::builtin();
  measured.applyOverrides("eth-100g=11");
  const Link unknown = nicUplink(0.0, measured);
  EXPECT_EQ(unknown.gbps, 11.0);
  EXPECT_EQ(unknown.source, LinkSource::Override);
}

TEST(NodeDescription, NicPortSpeedsFromAFakeSysfs) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("blink-sysfs-" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "class/net/eth9");
  std::filesystem::create_directories(root / "class/net/eth8");
  std::filesystem::create_directories(root / "class/infiniband/mlx5_3/ports/1");
  std::ofstream(root / "class/net/eth9/speed") << "25000\n";
  std::ofstream(root / "class/net/eth8/speed") << "-1\n";  // virtio: unknown
  std::ofstream(root / "class/infiniband/mlx5_3/ports/1/rate") << "200 Gb/sec (4X HDR)\n";
  EXPECT_DOUBLE_EQ(nicPortGbps(root.string(), "eth9"), 3.125);
  EXPECT_EQ(nicPortGbps(root.string(), "eth8"), 0.0);
  EXPECT_DOUBLE_EQ(nicPortGbps(root.string(), "mlx5_3"), 25.0);
  EXPECT_EQ(nicPortGbps(root.string(), "../eth9"), 0.0);
  const Link hdr = nicUplink(nicPortGbps(root.string(), "mlx5_3"), LinkTable::builtin());
  EXPECT_EQ(hdr.generation, "ib-hdr");
  EXPECT_EQ(hdr.source, LinkSource::Sysfs);
  std::filesystem::remove_all(root);
}

TEST(Placement, ABindingWithinOnePackageIsThatPackage) {
  hwloc_topology_t t = nullptr;
  ASSERT_EQ(hwloc_topology_init(&t), 0);
  ASSERT_EQ(hwloc_topology_load(t), 0);
  hwloc_bitmap_t saved = hwloc_bitmap_alloc();
  ASSERT_EQ(hwloc_get_cpubind(t, saved, HWLOC_CPUBIND_PROCESS), 0);
  const int packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  for (int k = 0; k < packages; ++k) {
    hwloc_obj_t p = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(k));
    hwloc_bitmap_t one_pu = hwloc_bitmap_alloc();
    hwloc_bitmap_set(one_pu, static_cast<unsigned>(hwloc_bitmap_first(p->cpuset)));
    if (hwloc_set_cpubind(t, one_pu, HWLOC_CPUBIND_PROCESS) == 0) {
      EXPECT_EQ(boundPackage(), k);
    }
    hwloc_bitmap_free(one_pu);
  }
  // The whole machine: one package is that package, several are none.
  hwloc_set_cpubind(t, hwloc_get_root_obj(t)->cpuset, HWLOC_CPUBIND_PROCESS);
  EXPECT_EQ(boundPackage(), packages > 1 ? -1 : 0);
  hwloc_set_cpubind(t, saved, HWLOC_CPUBIND_PROCESS);
  hwloc_bitmap_free(saved);
  hwloc_topology_destroy(t);
}

TEST(JobGraph, FourHostRanksTwoPerSocket) {
  const Topology node = describe(kTwoSocket);
  const std::vector<RankPlace> ranks = {{0, 0, 0}, {0, 1, 0}, {0, 2, 1}, {0, 3, 1}};
  const JobGraph job = buildJobGraph({&node}, ranks, LinkTable::builtin());
  const Topology& t = job.topology;
  EXPECT_FALSE(job.gpu_ranks);
  ASSERT_EQ(t.gpus().size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const std::string id = "rank" + std::to_string(r);
    EXPECT_EQ(t.device(t.gpus()[static_cast<std::size_t>(r)]).id, id);
    EXPECT_EQ(job.plan_rank_of[static_cast<std::size_t>(r)], r);
    EXPECT_EQ(job.comm_rank_of[static_cast<std::size_t>(r)], r);
    const std::string socket = r < 2 ? "cpu0" : "cpu1";
    EXPECT_EQ(neighbours(t, id), std::vector<std::string>{socket}) << id;
    for (const auto& [from, to] : {std::pair{id, socket}, std::pair{socket, id}}) {
      auto shm = linkOf(t, from, to, LinkKind::SharedMemory);
      ASSERT_TRUE(shm) << from << " -> " << to;
      EXPECT_EQ(shm->gbps, LinkTable::builtin().get("shm").gbps);
      EXPECT_EQ(shm->source, LinkSource::Table);
    }
    EXPECT_EQ(t.device(*t.find(id)).numa, r < 2 ? 0 : 1);
  }
  // Ranks of different sockets cross the inter-socket link; one node: no network.
  EXPECT_TRUE(linkOf(t, "cpu0", "cpu1", LinkKind::Smp));
  EXPECT_TRUE(linkOf(t, "cpu1", "cpu0", LinkKind::Smp));
  EXPECT_FALSE(t.find("netsw0"));
  EXPECT_EQ(linkOf(t, "nic0", "cpu1", LinkKind::Pcie)->source, LinkSource::Sysfs);
  EXPECT_EQ(t.numNodes(), 1);
  // The planner plans on it: an AllReduce over the four host ranks.
  const blink::plan::Choice choice =
      blink::plan::choosePlan(blink::plan::Collective::AllReduce, t, 1 << 20, -1, {});
  EXPECT_EQ(choice.plan.num_ranks, 4);
}

TEST(JobGraph, UnboundRanksSpreadRoundRobinAndOverridesShowAsSuch) {
  const Topology node = describe(kTwoSocket);
  LinkTable table = LinkTable::builtin();
  table.applyOverrides("shm=3.5");
  const std::vector<RankPlace> ranks = {{0, 0, -1}, {0, 1, -1}, {0, 2, -1}, {0, 3, 7}};
  const JobGraph job = buildJobGraph({&node}, ranks, table);
  EXPECT_EQ(neighbours(job.topology, "rank0"), std::vector<std::string>{"cpu0"});
  EXPECT_EQ(neighbours(job.topology, "rank1"), std::vector<std::string>{"cpu1"});
  EXPECT_EQ(neighbours(job.topology, "rank2"), std::vector<std::string>{"cpu0"});
  EXPECT_EQ(neighbours(job.topology, "rank3"), std::vector<std::string>{"cpu1"});  // no socket 7
  auto shm = linkOf(job.topology, "rank0", "cpu0", LinkKind::SharedMemory);
  EXPECT_EQ(shm->gbps, 3.5);
  EXPECT_EQ(shm->source, LinkSource::Override);
  EXPECT_NE(job.binding.find("4 not bound"), std::string::npos) << job.binding;
}

TEST(MergeNodes, PrefixesNodesAndJoinsEveryNicToOneSwitch) {
  const Topology two_socket = describe(kTwoSocket);
  const Topology dgx = describe(kDgx1Like);
  Topology bare("");  // a node whose NIC hwloc does not see
  bare.addDevice(makeDevice("cpu0", DeviceKind::Cpu));
  const LinkTable table = LinkTable::builtin();
  const Topology t = mergeNodes({&two_socket, &two_socket, &dgx, &bare}, table, true);
  EXPECT_EQ(t.numNodes(), 4);
  ASSERT_TRUE(t.find("netsw0"));
  EXPECT_EQ(countKind(t, DeviceKind::NetSwitch), 1);
  for (int k = 0; k < 2; ++k) {
    const std::string p = "n" + std::to_string(k) + ".";
    EXPECT_TRUE(linkOf(t, p + "cpu0", p + "cpu1", LinkKind::Smp));
    EXPECT_TRUE(linkOf(t, p + "nic0", p + "cpu1", LinkKind::Pcie));
    EXPECT_TRUE(linkOf(t, p + "nic0", "netsw0", LinkKind::Network));
    EXPECT_TRUE(linkOf(t, "netsw0", p + "nic0", LinkKind::Network));
    EXPECT_EQ(t.device(*t.find(p + "cpu1")).node, k);
  }
  // The DGX-like node's GPUs come third and keep their order; both its NICs reach the switch.
  ASSERT_EQ(t.gpus().size(), 8u);
  EXPECT_EQ(t.device(t.gpus()[0]).id, "n2.gpu0");
  EXPECT_EQ(t.device(t.gpus()[7]).gpu_index, 7);
  int dgx_uplinks = 0;
  for (Vertex v = 0; v < t.numDevices(); ++v) {
    const Device& d = t.device(v);
    if (d.kind == DeviceKind::Nic && d.node == 2) {
      dgx_uplinks += linkOf(t, d.id, "netsw0", LinkKind::Network) ? 1 : 0;
    }
  }
  EXPECT_EQ(dgx_uplinks, countKind(dgx, DeviceKind::Nic));
  EXPECT_GE(dgx_uplinks, 2);
  // The node without a NIC reaches the network through a virtual one, from the table.
  auto vnic = linkOf(t, "n3.vnic0", "netsw0", LinkKind::Network);
  ASSERT_TRUE(vnic);
  EXPECT_EQ(vnic->generation, kDefaultNicGeneration);
  EXPECT_EQ(vnic->source, LinkSource::Table);
  EXPECT_TRUE(linkOf(t, "n3.vnic0", "n3.cpu0", LinkKind::Pcie));
  // Without GPUs (a host-rank job) the GPUs are gone and nothing else is.
  const Topology host = mergeNodes({&two_socket, &dgx}, table, false);
  EXPECT_EQ(host.gpus().size(), 0u);
  EXPECT_TRUE(host.find("n1.cpu1"));
}

TEST(JobGraph, GpuRanksOnAGpuNodeAndHostRanksWhenGpusWouldBeShared) {
  const Topology dgx = describe(kDgx1Like);
  std::vector<RankPlace> four = {{0, 0, -1}, {0, 1, -1}, {0, 2, -1}, {0, 3, -1}};
  const JobGraph gpus = buildJobGraph({&dgx}, four, LinkTable::builtin());
  EXPECT_TRUE(gpus.gpu_ranks);
  ASSERT_EQ(gpus.topology.gpus().size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(gpus.topology.device(gpus.topology.gpus()[static_cast<std::size_t>(r)]).id,
              "gpu" + std::to_string(r));
    EXPECT_EQ(gpus.plan_rank_of[static_cast<std::size_t>(r)], r);
  }
  std::vector<RankPlace> nine;
  for (int r = 0; r < 9; ++r) nine.push_back({0, r, -1});
  const JobGraph host = buildJobGraph({&dgx}, nine, LinkTable::builtin());
  EXPECT_FALSE(host.gpu_ranks);
  EXPECT_EQ(host.topology.gpus().size(), 9u);
  EXPECT_EQ(host.topology.device(host.topology.gpus()[8]).id, "rank8");
  EXPECT_NE(host.binding.find("8 GPU(s) for 9 rank(s)"), std::string::npos) << host.binding;
}

TEST(JobGraph, EmulatedNodesOfTheSameDescription) {
  const Topology node = describe(kTwoSocket);
  // Ranks 0, 2 on node 0 and 1, 3 on node 1, as BLINK_NODE_ID=rank%2 gives.
  const std::vector<RankPlace> ranks = {{0, 0, 0}, {1, 0, 1}, {0, 1, 1}, {1, 1, 0}};
  const JobGraph job = buildJobGraph({&node, &node}, ranks, LinkTable::builtin());
  const Topology& t = job.topology;
  EXPECT_EQ(t.numNodes(), 2);
  EXPECT_EQ(neighbours(t, "n0.rank0"), std::vector<std::string>{"n0.cpu0"});
  EXPECT_EQ(neighbours(t, "n1.rank1"), std::vector<std::string>{"n1.cpu1"});
  EXPECT_EQ(neighbours(t, "n0.rank2"), std::vector<std::string>{"n0.cpu1"});
  EXPECT_EQ(neighbours(t, "n1.rank3"), std::vector<std::string>{"n1.cpu0"});
  EXPECT_TRUE(linkOf(t, "n0.nic0", "netsw0", LinkKind::Network));
  EXPECT_TRUE(linkOf(t, "n1.nic0", "netsw0", LinkKind::Network));
  EXPECT_THROW(buildJobGraph({&node}, {{1, 0, 0}}, LinkTable::builtin()), blink::Error);
}

}  // namespace
