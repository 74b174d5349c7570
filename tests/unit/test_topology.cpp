// The model: construction rules, allocation views, link-kind filters, the link table.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.hpp"
#include "topology/link_table.hpp"
#include "topology/topology_text.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink::topo;

blinkResult_t statusOf(auto&& body) {
  try {
    body();
  } catch (const blink::Error& e) {
    return e.status();
  }
  return blinkSuccess;
}

Device gpu(const std::string& id, int index) {
  Device d = makeDevice(id, DeviceKind::Gpu);
  d.gpu_index = index;
  return d;
}

TEST(Topology, RejectsDuplicateIdsAndGpuIndices) {
  Topology t("t");
  t.addDevice(gpu("a", 0));
  EXPECT_EQ(statusOf([&] { t.addDevice(gpu("a", 1)); }), blinkInvalidInput);
  EXPECT_EQ(statusOf([&] { t.addDevice(gpu("b", 0)); }), blinkInvalidInput);
  EXPECT_EQ(statusOf([&] { t.addDevice(gpu("c", -1)); }), blinkInvalidInput);
  EXPECT_EQ(statusOf([&] { t.addDevice(makeDevice("", DeviceKind::Cpu)); }), blinkInvalidInput);
  EXPECT_EQ(statusOf([&] { t.addDevice(makeDevice("x", DeviceKind::Cpu, -1)); }),
            blinkInvalidInput);
  EXPECT_EQ(statusOf([&] { t.addDevice(makeDevice("sw", DeviceKind::NetSwitch, -1)); }),
            blinkSuccess);
}

TEST(Topology, RejectsBadLinks) {
  Topology t("t");
  Vertex a = t.addDevice(gpu("a", 0));
  Vertex b = t.addDevice(gpu("b", 1));
  Link ok{LinkKind::NvLink, 25.0, 1, 0.7, "nvlink2"};
  t.addLink(a, b, ok);
  EXPECT_EQ(statusOf([&] { t.addLink(a, b, ok); }), blinkInvalidInput);  // duplicate
  EXPECT_EQ(statusOf([&] { t.addLink(a, a, ok); }), blinkInvalidInput);  // self loop
  Link bad = ok;
  bad.gbps = -1.0;
  EXPECT_EQ(statusOf([&] { t.addLink(b, a, bad); }), blinkInvalidInput);
  bad = ok;
  bad.multiplicity = 0;
  EXPECT_EQ(statusOf([&] { t.addLink(b, a, bad); }), blinkInvalidInput);
  for (double gbps : {2e4, 1e-4, 0.0, std::nan("")}) {
    bad = ok;
    bad.gbps = gbps;
    EXPECT_EQ(statusOf([&] { t.addLink(b, a, bad); }), blinkInvalidInput) << gbps;
  }
  bad = ok;
  bad.multiplicity = kMaxLanes + 1;
  EXPECT_EQ(statusOf([&] { t.addLink(b, a, bad); }), blinkInvalidInput);
  bad = ok;
  bad.latency_us = -0.1;
  EXPECT_EQ(statusOf([&] { t.addLink(b, a, bad); }), blinkInvalidInput);
  // Another kind between the same pair is a different link.
  Link pcie{LinkKind::Pcie, 15.75, 1, 1.0, "pcie3x16"};
  EXPECT_EQ(statusOf([&] { t.addLink(a, b, pcie); }), blinkSuccess);
  EXPECT_EQ(t.linksBetween(a, b).size(), 2u);
  EXPECT_EQ(t.linksBetween(b, a).size(), 0u);  // directed
}

TEST(Topology, AllocationViewRejectsRepeatedAndUnknownGpus) {
  Topology full = makeZooTopology("dgx1-v100", LinkTable::builtin());
  auto messageOf = [&](const std::vector<int>& gpus) -> std::string {
    try {
      full.restrictToGpus(gpus);
    } catch (const blink::Error& e) {
      EXPECT_EQ(e.status(), blinkInvalidInput);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(messageOf({0, 1, 1}).find("GPU 1 is listed twice"), std::string::npos);
  EXPECT_NE(messageOf({0, 8}).find("GPU 8 is not in topology 'dgx1-v100' (it has 8 GPUs)"),
            std::string::npos);
}

TEST(Topology, AllocationViewKeepsOnlyTheJobsGpus) {
  Topology full = makeZooTopology("dgx1-v100", LinkTable::builtin());
  Topology frag = full.restrictToGpus({0, 1, 2, 4});
  EXPECT_EQ(frag.name(), "dgx1-v100[0,1,2,4]");
  ASSERT_EQ(frag.gpus().size(), 4u);
  std::vector<int> indices;
  for (Vertex g : frag.gpus()) indices.push_back(frag.device(g).gpu_index);
  EXPECT_EQ(indices, (std::vector<int>{0, 1, 2, 4}));
  // Switches, CPUs and NICs stay; links to GPUs 3, 5, 6, 7 are gone.
  EXPECT_EQ(frag.numDevices(), full.numDevices() - 4);
  for (Edge e : frag.links()) {
    for (Vertex v : {frag.source(e), frag.target(e)}) {
      const Device& d = frag.device(v);
      if (d.kind == DeviceKind::Gpu) {
        EXPECT_TRUE(d.gpu_index <= 2 || d.gpu_index == 4);
      }
    }
  }
  // Lanes inside the fragment: 0-1:1, 0-2:1, 0-4:2, 1-2:2 -> GPU 0 has 4, 4 has 2.
  EXPECT_EQ(frag.laneCount(*frag.findGpu(0), LinkKind::NvLink), 4);
  EXPECT_EQ(frag.laneCount(*frag.findGpu(1), LinkKind::NvLink), 3);
  EXPECT_EQ(frag.laneCount(*frag.findGpu(2), LinkKind::NvLink), 3);
  EXPECT_EQ(frag.laneCount(*frag.findGpu(4), LinkKind::NvLink), 2);
  EXPECT_EQ(statusOf([&] { full.restrictToGpus({0, 8}); }), blinkInvalidInput);
  EXPECT_EQ(statusOf([&] { full.restrictToGpus({1, 1}); }), blinkInvalidInput);
}

TEST(Topology, LinkKindFilterKeepsDevices) {
  Topology full = makeZooTopology("dgx1-v100", LinkTable::builtin());
  Topology nv = full.restrictToLinkKinds({LinkKind::NvLink});
  EXPECT_EQ(nv.numDevices(), full.numDevices());
  EXPECT_EQ(nv.numLinks(), 32u);  // 16 GPU pairs x 2 directions; doubled pairs are one link x2
  for (Edge e : nv.links()) EXPECT_EQ(nv.link(e).kind, LinkKind::NvLink);
}

TEST(Topology, SameAsIgnoresOrderButNotContent) {
  LinkTable table = LinkTable::builtin();
  Topology a("t"), b("t");
  for (Topology* t : {&a, &b}) {
    t->addDevice(gpu("g0", 0));
    t->addDevice(gpu("g1", 1));
  }
  a.addLink(0, 1, table.makeLink("nvlink2"));
  a.addLink(1, 0, table.makeLink("nvlink2"));
  b.addLink(1, 0, table.makeLink("nvlink2"));
  b.addLink(0, 1, table.makeLink("nvlink2"));
  EXPECT_TRUE(a.sameAs(b));
  Topology c("t");
  c.addDevice(gpu("g0", 0));
  c.addDevice(gpu("g1", 1));
  c.addLink(0, 1, table.makeLink("nvlink2", 2));
  c.addLink(1, 0, table.makeLink("nvlink2"));
  EXPECT_FALSE(a.sameAs(c));
}

TEST(LinkTable, HasEveryGenerationTheIssueNames) {
  LinkTable table = LinkTable::builtin();
  for (int v = 1; v <= 5; ++v) EXPECT_TRUE(table.contains("nvlink" + std::to_string(v)));
  for (int gen = 3; gen <= 5; ++gen) {
    for (int w : {1, 2, 4, 8, 16}) EXPECT_TRUE(table.contains(LinkTable::pcieName(gen, w)));
  }
  EXPECT_NEAR(table.get("pcie3x16").gbps, 15.75, 0.01);
  EXPECT_NEAR(table.get("pcie4x16").gbps, 2 * table.get("pcie3x16").gbps, 0.01);
  EXPECT_DOUBLE_EQ(table.get("ib-edr").gbps, 12.5);
  EXPECT_DOUBLE_EQ(table.get("ib-ndr").gbps, 50.0);
}

TEST(LinkTable, OverridesAreValidated) {
  LinkTable table = LinkTable::builtin();
  table.applyOverrides("nvlink2=22.5,pcie3x16=12");
  EXPECT_DOUBLE_EQ(table.get("nvlink2").gbps, 22.5);
  EXPECT_DOUBLE_EQ(table.get("pcie3x16").gbps, 12.0);
  for (const char* bad : {"nvlink9=1", "nvlink2", "nvlink2=-1", "nvlink2=abc", "nvlink2=0",
                          "nvlink2=25e9", "nvlink2=0.0001"}) {
    EXPECT_EQ(statusOf([&] { table.applyOverrides(bad); }), blinkInvalidInput) << bad;
  }
}

TEST(TopologyText, SummaryNamesGpusLanesAndTheMatrix) {
  Topology frag = makeZooTopology("dgx1-v100", LinkTable::builtin()).restrictToGpus({0, 1, 2, 4});
  std::string text = describeTopology(frag);
  EXPECT_NE(text.find("Topology dgx1-v100[0,1,2,4]: 1 node, 4 gpu"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu4(2)"), std::string::npos) << text;
  EXPECT_NE(text.find("NVLink lanes GPU -> GPU"), std::string::npos) << text;
  Topology cpu_only("laptop");
  cpu_only.addDevice(makeDevice("cpu0", DeviceKind::Cpu));
  EXPECT_NE(describeTopology(cpu_only).find("CPU-only"), std::string::npos);
}

}  // namespace
