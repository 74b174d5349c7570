// Tree generation end to end, checked against oracles that share no code with it
// (treegen_oracle.hpp): graphs worked out by hand, the zoo machines and every GPU
// subset of the DGX-1s; test_treegen_random.cpp runs a few hundred random graphs
// (switches, missing, asymmetric and one-way links, disconnected cases) through both.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "topology/topology.hpp"
#include "topology/zoo.hpp"
#include "treegen/tree_set.hpp"
#include "treegen/treegen.hpp"
#include "treegen_oracle.hpp"

namespace {

using namespace treegen_oracle;  // NOLINT(google-build-using-namespace): the suite's own helpers

// ---- the oracle itself, on graphs worked out by hand ---------------------------

Topology ringOfThree() {
  Topology t("ring3");
  std::vector<Vertex> g;
  for (int i = 0; i < 3; ++i) {
    Device d = blink::topo::makeDevice("gpu" + std::to_string(i), DeviceKind::Gpu);
    d.gpu_index = i;
    g.push_back(t.addDevice(d));
  }
  Link l{LinkKind::NvLink, 10.0, 1, 0.0, ""};
  t.addDuplexLink(g[0], g[1], l);
  t.addDuplexLink(g[1], g[2], l);
  l.multiplicity = 2;
  t.addDuplexLink(g[2], g[0], l);
  return t;
}

TEST(TreegenOracle, HandComputedRing) {
  Topology t = ringOfThree();
  // From GPU 0: X = {1} has 10 + 10 entering; X = {1, 2} has 10 + 20.
  EXPECT_DOUBLE_EQ(oracleBroadcastBound(t, 0, {}), 20.0);
  // GPU 1 sends 20 out; {0, 2} sends 20 out: 10 per GPU.
  EXPECT_DOUBLE_EQ(oracleAllGatherBound(t, {}), 10.0);
  EXPECT_DOUBLE_EQ(oracleBroadcastBound(t, 0, {LinkKind::Pcie}), 0.0);
}

TEST(TreegenBounds, HandComputedRing) {
  Topology t = ringOfThree();
  for (int root = 0; root < 3; ++root) {
    EXPECT_DOUBLE_EQ(blink::treegen::broadcastBoundGbps(t, root, {}), 20.0);
    checkBroadcast(t, root, exact(), 1.0);
  }
  EXPECT_DOUBLE_EQ(blink::treegen::allGatherBoundGbps(t, {}), 10.0);
  checkAllGather(t, exact(), 1.0);
}

TEST(TreegenBounds, AllReduceBoundIsTheCutOrTheTotalTraffic) {
  // ring3: 30 + 20 + 30 GB/s into the GPUs / (2 * 2) = 20, the minimum cut too.
  EXPECT_DOUBLE_EQ(blink::treegen::allReduceBoundGbps(ringOfThree(), {}), 20.0);
  // A whole DGX-1: every GPU has 6 (V100) or 4 (P100) NVLink lanes and one PCIe x16
  // link in; 2 * 7 deliveries of every element share them, far below the cut.
  for (const char* machine : {"dgx1-v100", "dgx1-p100"}) {
    const Topology t = blink::topo::makeZooTopology(machine, kTable);
    double into = 0.0;
    for (Vertex g : t.gpus()) {
      for (auto [e, end] = boost::in_edges(g, t.graph()); e != end; ++e) {
        into += t.graph()[*e].capacity();
      }
    }
    const double bound = blink::treegen::allReduceBoundGbps(t, {});
    EXPECT_TRUE(nearlyEqual(bound, into / 14.0)) << machine << ": " << bound;
    EXPECT_LT(bound, blink::treegen::broadcastBoundGbps(t, 0, {}));
    // NVLink only: the cut (4 or 6 lanes) against 8 x lanes / 14.
    const double lanes = std::string(machine) == "dgx1-v100" ? 6.0 : 4.0;
    const double lane = std::string(machine) == "dgx1-v100" ? 25.0 : 20.0;
    EXPECT_TRUE(nearlyEqual(blink::treegen::allReduceBoundGbps(t, {LinkKind::NvLink}),
                            8.0 * lanes * lane / 14.0));
  }
  // Four DGX-1Vs: each node's four 12.5 GB/s NICs; 2 * 3 deliveries of every element
  // between nodes share 4 x 50 GB/s into the nodes (below the cut, 50, and the GPUs'
  // 32 x 165.75 / 62).
  EXPECT_TRUE(nearlyEqual(
      blink::treegen::allReduceBoundGbps(blink::topo::makeZooTopology("dgx1-v100:4", kTable), {}),
      200.0 / 6.0));
  // One GPU: nothing to reduce.
  const Topology one = blink::topo::makeZooTopology("dgx1-v100", kTable).restrictToGpus({3});
  EXPECT_EQ(blink::treegen::allReduceBoundGbps(one, {}), 0.0);
}

// The validator catches what it claims to: each corruption of a valid packing is
// rejected.
TEST(TreegenOracle, ValidatorRejectsCorruptedPackings) {
  Topology t = blink::topo::makeZooTopology("dgx1-v100", kTable);
  const Kinds nv = {LinkKind::NvLink};
  const TreeSet good = blink::treegen::packBroadcast(t, 0, exact(nv));
  ASSERT_EQ(whyInvalid(t, good, nv, true), "");
  ASSERT_FALSE(good.trees.empty());
  ASSERT_GE(good.trees[0].edges.size(), 2u);

  TreeSet heavier = good;  // the root's lanes are all in use: any more overloads one
  heavier.trees[0].weight_gbps *= 1.01;
  heavier.rate_gbps += good.trees[0].weight_gbps * 0.01;
  EXPECT_NE(whyInvalid(t, heavier, nv, true), "");
  TreeSet overstated = good;
  overstated.rate_gbps *= 1.01;
  EXPECT_NE(whyInvalid(t, overstated, nv, true), "");
  TreeSet short_of_one = good;
  short_of_one.trees[0].edges.pop_back();
  EXPECT_NE(whyInvalid(t, short_of_one, nv, true), "");
  TreeSet children_first = good;
  std::reverse(children_first.trees[0].edges.begin(), children_first.trees[0].edges.end());
  EXPECT_NE(whyInvalid(t, children_first, nv, true), "");
  TreeSet other_root = good;
  other_root.trees[0].root_gpu = 1;
  EXPECT_NE(whyInvalid(t, other_root, nv, true), "");
  // GPU 0 and GPU 5 share no NVLink (and the PCIe path is not allowed here).
  TreeSet no_link = good;
  auto& e = no_link.trees[0].edges[0];
  e.to = *t.findGpu(5);
  e.route = {e.from, e.to};
  EXPECT_NE(whyInvalid(t, no_link, nv, true), "");
}

// ---- the zoo --------------------------------------------------------------------

struct ZooCase {
  const char* name;
  Kinds links;
};

void checkWholeMachine(const std::string& name, const Kinds& links) {
  SCOPED_TRACE(name + " links " + kindsName(links));
  Topology t = blink::topo::makeZooTopology(name, kTable);
  for (Vertex g : t.gpus()) checkBroadcast(t, t.device(g).gpu_index, exact(links), 1.0);
  checkAllGather(t, exact(links), 1.0);
}

TEST(TreegenZoo, ExactReachesBoundOnWholeMachines) {
  const std::vector<ZooCase> cases = {{"dgx1-p100", {}},
                                      {"dgx1-v100", {}},
                                      {"dgx1-v100", {LinkKind::NvLink}},
                                      {"dgx-a100", {}},
                                      {"hgx-h100", {}}};
  for (const auto& c : cases) checkWholeMachine(c.name, c.links);
}

TEST(TreegenZoo, NvLinkOnlyBroadcastOfTheDgx1s) {
  struct Expect {
    const char* name;
    double bound;
    std::size_t max_trees;
  };
  for (const auto& e : {Expect{"dgx1-p100", 80.0, 4}, Expect{"dgx1-v100", 150.0, 6}}) {
    SCOPED_TRACE(e.name);
    Topology t = blink::topo::makeZooTopology(e.name, kTable);
    for (int root = 0; root < 8; ++root) {
      EXPECT_TRUE(
          nearlyEqual(blink::treegen::broadcastBoundGbps(t, root, {LinkKind::NvLink}), e.bound))
          << "root " << root;
      TreeSet set = checkBroadcast(t, root, exact({LinkKind::NvLink}), 1.0);
      EXPECT_TRUE(nearlyEqual(set.rate_gbps, e.bound)) << "root " << root;
      EXPECT_LE(set.trees.size(), e.max_trees) << "root " << root;
    }
  }
}

// These two failed while the splitting of NVSwitch boards and PCIe-only hosts was
// being fixed in src/treegen/packing_graph.cpp.
TEST(TreegenZoo, Dgx2ExactReachesBound) {
  checkWholeMachine("dgx2", {});
}
TEST(TreegenZoo, Pcie8GpuExactReachesBound) {
  checkWholeMachine("pcie-8gpu", {});
}

// Every GPU subset of 3..8 GPUs: exact broadcast from the lowest GPU and exact
// allgather reach the bound, MWU at epsilon 0.1 reaches 0.9 of it.
template <typename Check>
void forEachGpuSubset(const std::string& name, Check&& check) {
  Topology machine = blink::topo::makeZooTopology(name, kTable);
  for (unsigned mask = 0; mask < 256; ++mask) {
    std::vector<int> gpus;
    for (int i = 0; i < 8; ++i) {
      if (mask >> i & 1u) gpus.push_back(i);
    }
    if (gpus.size() < 3) continue;
    std::string label = name + " --gpus";
    for (int g : gpus) label += " " + std::to_string(g);
    SCOPED_TRACE(label);
    check(machine.restrictToGpus(gpus), gpus.front());
  }
}

void checkSubset(const Topology& t, int root) {
  checkBroadcast(t, root, exact(), 1.0);
  checkAllGather(t, exact(), 1.0);
  checkBroadcast(t, root, mwu(0.1), 0.9);
  // The smallest views are small enough for the brute force (host side included).
  if (t.numDevices() <= 13) {
    EXPECT_TRUE(nearlyEqual(blink::treegen::broadcastBoundGbps(t, root, {}),
                            oracleBroadcastBound(t, root, {})));
    EXPECT_TRUE(
        nearlyEqual(blink::treegen::allGatherBoundGbps(t, {}), oracleAllGatherBound(t, {})));
  }
}

TEST(TreegenZoo, EveryGpuSubsetOfDgx1V100) {
  forEachGpuSubset("dgx1-v100", checkSubset);
}
TEST(TreegenZoo, EveryGpuSubsetOfDgx1P100) {
  forEachGpuSubset("dgx1-p100", checkSubset);
}

// MWU allgather is the slow one: a fixed-seed sample of 40 views per machine plus
// the fragments the Blink paper draws.
TEST(TreegenZoo, MwuAllGatherOnSampledGpuSubsetsOfTheDgx1s) {
  std::vector<std::vector<int>> all;
  for (unsigned mask = 0; mask < 256; ++mask) {
    std::vector<int> gpus;
    for (int i = 0; i < 8; ++i) {
      if (mask >> i & 1u) gpus.push_back(i);
    }
    if (gpus.size() >= 3) all.push_back(gpus);
  }
  std::mt19937 rng(4242);
  for (const char* name : {"dgx1-v100", "dgx1-p100"}) {
    Topology machine = blink::topo::makeZooTopology(name, kTable);
    std::vector<std::vector<int>> views = {{0, 1, 2, 4}, {0, 1, 2, 3}, {0, 4, 5, 6}};
    std::sample(all.begin(), all.end(), std::back_inserter(views), 40, rng);
    for (const auto& gpus : views) {
      std::string label = std::string(name) + " --gpus";
      for (int g : gpus) label += " " + std::to_string(g);
      SCOPED_TRACE(label);
      checkAllGather(machine.restrictToGpus(gpus), mwu(0.1), 0.9);
    }
  }
}

}  // namespace
