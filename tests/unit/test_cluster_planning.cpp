// Planning on clusters (GPUs on several nodes), as it scales: the hierarchical plan
// packs each class of identical nodes once; its chunks grow on large clusters so the
// plan stays within a message budget, predicting within a few percent of the chunk
// rule alone; past kFlatClusterMaxGpus the planner leaves flat trees out; and the
// baselines are what NCCL runs there: one ring per NIC, double binary trees between
// nodes, every plan proven by the symbolic executor; from 64 nodes AllGather and
// ReduceScatter move runs over binary trees, proven the same way.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "plan/baselines.hpp"
#include "plan/hierarchical.hpp"
#include "plan/node_layout.hpp"
#include "plan/planner.hpp"
#include "plan/simulator.hpp"
#include "plan/symbolic_executor.hpp"
#include "plan/tree_cache.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink;
using plan::Collective;

topo::Topology zoo(const std::string& name) {
  return topo::makeZooTopology(name, topo::LinkTable::builtin());
}

std::vector<int> range(int from, int to) {  // [from, to)
  std::vector<int> out;
  for (int g = from; g < to; ++g) out.push_back(g);
  return out;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

plan::LowerOptions smallChunks() {
  plan::LowerOptions o;
  o.chunk_bytes = 64;
  return o;
}

void expectProven(const plan::Plan& p, const std::string& what) {
  const auto result = plan::runSymbolic(p);
  EXPECT_TRUE(result.ok) << what << ": " << result.error;
}

// Tree-cache lookups (hits and misses) made while `f` runs.
template <typename F>
std::size_t lookupsDuring(F f) {
  const auto before = plan::treeCacheStats();
  f();
  const auto after = plan::treeCacheStats();
  return (after.hits + after.misses) - (before.hits + before.misses);
}

TEST(ClusterPlanning, IdenticalNodesArePackedOnce) {
  // Four identical nodes: one AllGather packing for all of them (and one broadcast
  // packing for the root's node), whatever the node count.
  const auto a100x4 = zoo("dgx-a100:4");
  EXPECT_EQ(lookupsDuring([&] {
              plan::lowerHierarchical(Collective::AllGather, a100x4, 4 * 32 * 8, 0, smallChunks());
            }),
            1u);
  EXPECT_EQ(lookupsDuring([&] {
              plan::lowerHierarchical(Collective::Broadcast, a100x4, 4 * 32 * 8, 3, smallChunks());
            }),
            2u);
  // Unequal nodes (1, 8 and 2 GPUs): one class per shape with two or more GPUs, and
  // the plans still correct.
  const auto view = zoo("dgx-a100:3").restrictToGpus(concat(concat({5}, range(8, 16)), {16, 23}));
  EXPECT_EQ(lookupsDuring([&] {
              expectProven(plan::lowerHierarchical(Collective::AllReduce, view, 4 * 11 * 7, 0,
                                                   smallChunks()),
                           "unequal allreduce");
            }),
            2u);
  // Identical in shape but not in GPU numbers: the trees land on each node's own GPUs.
  const auto v100x3 = zoo("dgx1-v100:3");
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::Reduce}) {
    expectProven(plan::lowerHierarchical(c, v100x3, 4 * 24 * 5, 20, smallChunks()),
                 "dgx1-v100:3 " + plan::toString(c));
  }
}

TEST(ClusterPlanning, MessageBudgetKeepsThePrediction) {
  // A budget that cuts the messages of a 256 MiB plan by a fifth to a half predicts
  // within 2% of the chunk rule alone (measured: within 0.4%). Larger cuts cost more
  // where latency dominates (hgx-h100:2 AllReduce, a fifth of the messages: +33%), so
  // the default budget only binds on clusters of many GPUs, where messages are large
  // (dgx1-v100:4, AllReduce of 1 GiB: +0.2%; dgx1-v100:8: +2%, perf/README.md).
  for (const char* name : {"dgx1-v100:2", "hgx-h100:2"}) {
    const auto t = zoo(name);
    for (Collective c : {Collective::AllReduce, Collective::AllGather}) {
      const std::uint64_t bytes = std::uint64_t{256} << 20;
      const auto rule = plan::lowerHierarchical(c, t, bytes, 0, {}, {}, 0);
      const auto tight = plan::lowerHierarchical(c, t, bytes, 0, {}, {}, 40000);
      const auto rule_sim = plan::simulate(rule, t);
      const auto tight_sim = plan::simulate(tight, t);
      const std::string what = std::string(name) + " " + plan::toString(c);
      EXPECT_LT(static_cast<double>(tight_sim.transfers),
                0.8 * static_cast<double>(rule_sim.transfers))
          << what;
      EXPECT_NEAR(tight_sim.seconds / rule_sim.seconds, 1.0, 0.02) << what;
    }
  }
}

TEST(ClusterPlanning, NoFlatTreesOnLargeClusters) {
  EXPECT_TRUE(plan::flatTreesWorthTrying(zoo("dgx1-v100")));
  EXPECT_TRUE(plan::flatTreesWorthTrying(zoo("dgx1-v100:2")));
  EXPECT_FALSE(plan::flatTreesWorthTrying(zoo("dgx1-v100:3")));
  const auto t = zoo("dgx-a100:3");
  const auto candidates = plan::blinkCandidates(Collective::AllReduce, t, 24 << 20, 0, {});
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates.front().first.algorithm, "blink-hierarchical");
}

TEST(ClusterPlanning, RingsAsNcclRunsThem) {
  // One node: NVLink rings where they exist, else one ring. Several nodes: one ring
  // per NIC of a node.
  struct Expect {
    const char* topology;
    std::size_t rings;
  };
  for (const Expect& e : {Expect{"dgx1-v100", 5}, Expect{"pcie-8gpu", 1}, Expect{"dgx1-v100:2", 4},
                          Expect{"dgx1-p100:3", 4}, Expect{"dgx-a100:2", 8},
                          Expect{"hgx-h100:2", 8}, Expect{"pcie-8gpu:2", 2}}) {
    const auto t = zoo(e.topology);
    const auto rings = plan::findRings(t);
    EXPECT_EQ(rings.size(), e.rings) << e.topology;
    if (!plan::isMultiNode(t)) continue;
    // Each ring visits every rank once, and its hops between nodes leave each node on
    // a NIC no other ring uses there.
    std::set<std::pair<int, topo::Vertex>> nic_used;  // (node, NIC)
    for (const auto& ring : rings) {
      EXPECT_EQ(std::set<int>(ring.order.begin(), ring.order.end()).size(), t.gpus().size());
      for (const auto& hop : ring.hops) {
        const int from_node = t.device(hop.front()).node, to_node = t.device(hop.back()).node;
        if (from_node == to_node) continue;
        std::size_t nics = 0;
        for (topo::Vertex v : hop) {
          if (t.device(v).kind != topo::DeviceKind::Nic || t.device(v).node != from_node) continue;
          ++nics;
          EXPECT_TRUE(nic_used.insert({from_node, v}).second) << e.topology << ": NIC shared";
        }
        EXPECT_EQ(nics, 1u) << e.topology;
      }
    }
  }
}

TEST(ClusterPlanning, ClusterBaselinesAreCorrect) {
  const auto v100x2 = zoo("dgx1-v100:2");
  const auto a100x3 = zoo("dgx-a100:3");
  const std::vector<topo::Topology> views = {
      v100x2, v100x2.restrictToGpus(concat(range(0, 3), range(8, 13))),
      a100x3.restrictToGpus(concat(concat({5}, range(8, 16)), {16, 23})), zoo("pcie-8gpu:3")};
  for (const auto& t : views) {
    const int n = static_cast<int>(t.gpus().size());
    const std::uint64_t bytes = 4 * 29 * static_cast<std::uint64_t>(n);
    for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce,
                         Collective::AllGather, Collective::ReduceScatter}) {
      for (int root : {0, n - 1, n / 2}) {
        const std::string what =
            t.name() + " " + plan::toString(c) + " root " + std::to_string(root);
        expectProven(plan::ringPlan(c, t, bytes, root, smallChunks()), what + " ring");
        if (c != Collective::AllGather && c != Collective::ReduceScatter) {
          const auto tree = plan::doubleBinaryTreePlan(c, t, bytes, root, smallChunks());
          expectProven(tree, what + " tree");
        }
      }
    }
  }
}

}  // namespace

namespace {

// `nodes` nodes of hgx-h100 with `per_node(k)` GPUs on node k.
template <typename PerNode>
topo::Topology h100Nodes(int nodes, PerNode per_node) {
  std::vector<int> gpus;
  for (int k = 0; k < nodes; ++k) {
    for (int g = 0; g < per_node(k); ++g) gpus.push_back(8 * k + g);
  }
  return zoo("hgx-h100:" + std::to_string(nodes)).restrictToGpus(gpus);
}

// 32 nodes: where AllReduce's inter-node phase runs double binary trees and each port
// owns one contiguous run.
template <typename PerNode>
topo::Topology thirtyTwoNodes(PerNode per_node) {
  return h100Nodes(32, per_node);
}

TEST(ClusterPlanning, DoubleBinaryTreesBetweenNodesAreCorrect) {
  const auto two = thirtyTwoNodes([](int) { return 2; });
  const auto mixed = thirtyTwoNodes([](int k) { return 1 + k % 3; });
  for (const auto* t : {&two, &mixed}) {
    const int n = static_cast<int>(t->gpus().size());
    for (std::uint64_t bytes :
         {std::uint64_t{4} * 7 * static_cast<std::uint64_t>(n), std::uint64_t{4} * 3}) {
      expectProven(plan::lowerHierarchical(Collective::AllReduce, *t, bytes, 0, smallChunks()),
                   t->name() + " allreduce of " + std::to_string(bytes) + " bytes");
    }
  }
}

// From 64 nodes AllGather and ReduceScatter cut the whole buffer among each node's
// ports (the home node's too) and move each home's runs over two binary trees rooted
// at the home: proven by the symbolic executor with equal and unequal GPU counts per
// node (two everywhere; one, two or three), with segments that are uneven or empty.
TEST(ClusterPlanning, GatherRunsOverBinaryTreesAreCorrect) {
  const auto two = h100Nodes(64, [](int) { return 2; });
  const auto mixed = h100Nodes(64, [](int k) { return 1 + k % 3; });
  for (const auto* t : {&two, &mixed}) {
    const auto n = static_cast<std::uint64_t>(t->gpus().size());
    for (Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
      for (std::uint64_t bytes :
           {std::uint64_t{4} * 7 * n, std::uint64_t{4} * (3 * n + 5), std::uint64_t{4} * 3}) {
        const auto p = plan::lowerHierarchical(c, *t, bytes, 0, smallChunks());
        expectProven(
            p, t->name() + " " + plan::toString(c) + " of " + std::to_string(bytes) + " bytes");
      }
    }
  }
}

// 1 GiB AllReduce on 16 and 32 H100 nodes, against the NIC bound. The ring chain of
// 2(N - 1) inter-node hops predicted 0.70 and 0.47 of it; double binary trees between
// the nodes, and from 32 nodes each port's contiguous run streamed through them as
// one (0.55 with a tree per piece), lift that to 0.71 and 0.67, not yet to 0.9: the
// inter-node phase alone reaches 0.98 of the bound on 16 nodes (measured without the
// intra-node phases), the rest is lost while the pipeline fills and drains
// (perf/README.md). And the plan on 32 nodes stays below 400000 steps (522240 with
// one intra-node message per piece).
TEST(ClusterPlanning, LargeClusterAllReduceAgainstTheNicBound) {
  struct Expect {
    const char* topology;
    double at_least;  // predicted / bound
  };
  for (const Expect& e : {Expect{"hgx-h100:16", 0.70}, Expect{"hgx-h100:32", 0.65}}) {
    const auto t = zoo(e.topology);
    const std::uint64_t bytes = std::uint64_t{1} << 30;
    const auto p = plan::lowerHierarchical(Collective::AllReduce, t, bytes, 0, {});
    const double gbps = static_cast<double>(bytes) / plan::simulate(p, t).seconds / 1e9;
    const double bound = plan::optimalAlgbwGbps(Collective::AllReduce, t, 0, {});
    EXPECT_GE(gbps / bound, e.at_least) << e.topology << ": " << gbps << " of " << bound << " GB/s";
    if (std::string(e.topology) == "hgx-h100:32") {
      EXPECT_LT(p.numSteps(), 400000u);
    }
  }
}

}  // namespace
