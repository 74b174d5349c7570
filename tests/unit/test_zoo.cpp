// Each reference machine has the link counts and per-GPU degrees its hardware has.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink::topo;

const LinkTable kTable = LinkTable::builtin();

// NVLink lanes between two GPUs (by gpu_index), in one direction.
int lanesBetween(const Topology& t, int a, int b) {
  int lanes = 0;
  for (Edge e : t.linksBetween(*t.findGpu(a), *t.findGpu(b))) {
    if (t.link(e).kind == LinkKind::NvLink) lanes += t.link(e).multiplicity;
  }
  return lanes;
}

// Every link has its reverse with the same properties (zoo cables are full duplex).
void expectAllDuplex(const Topology& t) {
  for (Edge e : t.links()) {
    bool found = false;
    for (Edge back : t.linksBetween(t.target(e), t.source(e))) {
      found |= t.link(back) == t.link(e);
    }
    EXPECT_TRUE(found) << t.device(t.source(e)).id << " -> " << t.device(t.target(e)).id;
  }
}

std::size_t countKind(const Topology& t, DeviceKind kind) {
  std::size_t n = 0;
  for (Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
    n += t.device(v).kind == kind;
  }
  return n;
}

TEST(Zoo, Dgx1P100IsACubeMeshOfSingleNvLink1) {
  Topology t = makeZooTopology("dgx1-p100", kTable);
  ASSERT_EQ(t.gpus().size(), 8u);
  int pairs = 0;
  for (int a = 0; a < 8; ++a) {
    EXPECT_EQ(t.laneCount(*t.findGpu(a), LinkKind::NvLink), 4) << "GPU " << a;
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      bool same_quad = a / 4 == b / 4;
      bool across = (a % 4) == (b % 4);
      int want = (same_quad || across) ? 1 : 0;
      EXPECT_EQ(lanesBetween(t, a, b), want) << a << "-" << b;
      if (a < b) pairs += want;
    }
  }
  EXPECT_EQ(pairs, 16);
  for (Edge e : t.links()) {
    if (t.link(e).kind == LinkKind::NvLink) {
      EXPECT_EQ(t.link(e).generation, "nvlink1");
      EXPECT_DOUBLE_EQ(t.link(e).gbps, 20.0);
    }
  }
  expectAllDuplex(t);
}

TEST(Zoo, Dgx1V100DoublesEightPairsForSixLanesPerGpu) {
  Topology t = makeZooTopology("dgx1-v100", kTable);
  const std::set<std::pair<int, int>> doubled = {{0, 3}, {0, 4}, {1, 2}, {1, 5},
                                                 {2, 3}, {4, 7}, {5, 6}, {6, 7}};
  int lanes_total = 0;
  for (int a = 0; a < 8; ++a) {
    EXPECT_EQ(t.laneCount(*t.findGpu(a), LinkKind::NvLink), 6) << "GPU " << a;
    for (int b = a + 1; b < 8; ++b) {
      bool linked = a / 4 == b / 4 || a % 4 == b % 4;
      int want = !linked ? 0 : doubled.contains({a, b}) ? 2 : 1;
      EXPECT_EQ(lanesBetween(t, a, b), want) << a << "-" << b;
      EXPECT_EQ(lanesBetween(t, b, a), want) << b << "-" << a;
      lanes_total += want;
    }
  }
  EXPECT_EQ(lanes_total, 24);  // 8 GPUs x 6 lanes / 2 ends
  expectAllDuplex(t);
}

TEST(Zoo, Dgx1HasTheDgx1PcieAndNicLayout) {
  for (const char* name : {"dgx1-p100", "dgx1-v100"}) {
    Topology t = makeZooTopology(name, kTable);
    EXPECT_EQ(countKind(t, DeviceKind::Cpu), 2u);
    EXPECT_EQ(countKind(t, DeviceKind::PciSwitch), 4u);
    EXPECT_EQ(countKind(t, DeviceKind::Nic), 4u);
    // Two GPUs and one 100 Gb/s NIC per switch, two switches per socket.
    for (int sw = 0; sw < 4; ++sw) {
      Vertex s = *t.find("pcisw" + std::to_string(sw));
      int gpus = 0, nics = 0, cpus = 0;
      for (Edge e : boost::make_iterator_range(boost::out_edges(s, t.graph()))) {
        const Device& peer = t.device(t.target(e));
        EXPECT_EQ(t.link(e).kind, LinkKind::Pcie);
        EXPECT_EQ(t.link(e).generation, "pcie3x16");
        gpus += peer.kind == DeviceKind::Gpu;
        nics += peer.kind == DeviceKind::Nic;
        if (peer.kind == DeviceKind::Cpu) {
          ++cpus;
          EXPECT_EQ(peer.id, sw < 2 ? "cpu0" : "cpu1");
        }
      }
      EXPECT_EQ(gpus, 2);
      EXPECT_EQ(nics, 1);
      EXPECT_EQ(cpus, 1);
      // GPUs 2k and 2k+1 sit on switch k.
      EXPECT_EQ(t.linksBetween(*t.findGpu(2 * sw), s).size(), 1u);
      EXPECT_EQ(t.linksBetween(*t.findGpu(2 * sw + 1), s).size(), 1u);
    }
    EXPECT_EQ(t.linksBetween(*t.find("cpu0"), *t.find("cpu1")).size(), 1u);
    EXPECT_EQ(t.device(*t.find("nic0")).model, "InfiniBand EDR 100 Gb/s");
  }
}

// GPU lanes into NVSwitches, and per-GPU bandwidth.
void expectSwitched(const Topology& t, int gpus, int switches, int lanes, double gbps_per_gpu) {
  ASSERT_EQ(t.gpus().size(), static_cast<std::size_t>(gpus));
  EXPECT_EQ(countKind(t, DeviceKind::NvSwitch), static_cast<std::size_t>(switches));
  for (Vertex g : t.gpus()) {
    EXPECT_EQ(t.laneCount(g, LinkKind::NvLink), lanes);
    double bw = 0.0;
    for (Edge e : boost::make_iterator_range(boost::out_edges(g, t.graph()))) {
      if (t.link(e).kind == LinkKind::NvLink) {
        bw += t.link(e).capacity();
        EXPECT_EQ(t.device(t.target(e)).kind, DeviceKind::NvSwitch);
      }
    }
    EXPECT_DOUBLE_EQ(bw, gbps_per_gpu);
  }
  expectAllDuplex(t);
}

TEST(Zoo, Dgx2Has16GpusAt150GBpsThroughTwelveNvSwitches) {
  Topology t = makeZooTopology("dgx2", kTable);
  expectSwitched(t, 16, 12, 6, 150.0);
  // The two baseboards are joined by 8 lanes per switch pair.
  for (int k = 0; k < 6; ++k) {
    auto links = t.linksBetween(*t.find("nvswitch" + std::to_string(k)),
                                *t.find("nvswitch" + std::to_string(k + 6)));
    ASSERT_EQ(links.size(), 1u);
    EXPECT_EQ(t.link(links[0]).multiplicity, 8);
  }
  // GPU 0 reaches only the switches of its own board.
  for (Edge e : boost::make_iterator_range(boost::out_edges(*t.findGpu(0), t.graph()))) {
    const Device& peer = t.device(t.target(e));
    if (peer.kind == DeviceKind::NvSwitch) {
      EXPECT_LT(std::stoi(peer.id.substr(8)), 6);
    }
  }
}

TEST(Zoo, DgxA100Has12NvLink3LanesPerGpu) {
  Topology t = makeZooTopology("dgx-a100", kTable);
  expectSwitched(t, 8, 6, 12, 300.0);
  EXPECT_EQ(countKind(t, DeviceKind::Nic), 8u);
}

TEST(Zoo, HgxH100Has18NvLink4LanesPerGpu) {
  Topology t = makeZooTopology("hgx-h100", kTable);
  expectSwitched(t, 8, 4, 18, 450.0);
  EXPECT_EQ(countKind(t, DeviceKind::Nic), 8u);
}

TEST(Zoo, Pcie8GpuHasNoNvLink) {
  Topology t = makeZooTopology("pcie-8gpu", kTable);
  EXPECT_EQ(t.gpus().size(), 8u);
  for (Vertex g : t.gpus()) {
    EXPECT_EQ(t.laneCount(g, LinkKind::NvLink), 0);
    EXPECT_EQ(t.laneCount(g, LinkKind::Pcie), 1);
  }
  EXPECT_EQ(countKind(t, DeviceKind::Cpu), 2u);
  EXPECT_EQ(countKind(t, DeviceKind::PciSwitch), 4u);
  EXPECT_EQ(countKind(t, DeviceKind::Nic), 2u);
  expectAllDuplex(t);
}

TEST(Zoo, ClusterIsCopiesJoinedThroughNicsAndASwitch) {
  Topology one = makeZooTopology("dgx1-v100", kTable);
  Topology four = makeZooTopology("dgx1-v100:4", kTable);
  EXPECT_EQ(four.numNodes(), 4);
  EXPECT_EQ(four.gpus().size(), 32u);
  EXPECT_EQ(four.numDevices(), 4 * one.numDevices() + 1);
  // Each node's 4 NICs gain one duplex network link to the switch.
  EXPECT_EQ(four.numLinks(), 4 * one.numLinks() + 4 * 4 * 2);
  Vertex sw = *four.find("netsw0");
  EXPECT_EQ(four.device(sw).node, -1);
  EXPECT_EQ(boost::in_degree(sw, four.graph()), 16u);
  for (Edge e : boost::make_iterator_range(boost::out_edges(sw, four.graph()))) {
    EXPECT_EQ(four.link(e).kind, LinkKind::Network);
    EXPECT_DOUBLE_EQ(four.link(e).capacity(), 12.5);
  }
  // GPU indices are global; ids carry the node.
  Vertex g9 = *four.findGpu(9);
  EXPECT_EQ(four.device(g9).id, "n1.gpu1");
  EXPECT_EQ(four.device(g9).node, 1);
  expectAllDuplex(four);
}

TEST(Zoo, EveryMachineBuildsAndIsListed) {
  ASSERT_EQ(zooMachines().size(), 6u);
  for (const auto& m : zooMachines()) {
    EXPECT_TRUE(isZooName(m.name));
    EXPECT_FALSE(m.description.empty());
    Topology t = makeZooTopology(m.name, kTable);
    EXPECT_EQ(t.name(), m.name);
    EXPECT_FALSE(t.gpus().empty());
  }
}

TEST(Zoo, UnknownNamesAndBadCountsAreClearErrors) {
  for (const char* bad : {"dgx3", "dgx1-v100:0", "dgx1-v100:x", "dgx1-v100:129", "dgx1-v100:"}) {
    try {
      makeZooTopology(bad, kTable);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const blink::Error& e) {
      EXPECT_EQ(e.status(), blinkInvalidInput);
    }
  }
  try {
    makeZooTopology("dgx3", kTable);
  } catch (const blink::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dgx1-v100"), std::string::npos) << e.what();
  }
}

TEST(Zoo, LinkOverridesChangeTheZoo) {
  LinkTable table = LinkTable::builtin();
  table.applyOverrides("nvlink2=22.5");
  Topology t = makeZooTopology("dgx1-v100", table);
  EXPECT_DOUBLE_EQ(t.link(t.linksBetween(*t.findGpu(0), *t.findGpu(3))[0]).capacity(), 45.0);
}

}  // namespace
