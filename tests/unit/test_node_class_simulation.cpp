// Simulating one node of a cluster of identical nodes (plan::simulateOneNode) against
// the full simulation of the same plan, on the plans the planner prices that way (the
// recursive halving and doubling per rail on a power of two of nodes), and where it
// does not apply. And the halving's intra-node chunks as the seventh pass cut them: a
// ramp from 1 MiB at the pipeline's ends, the last steps' blocks merged, proven by
// the symbolic executor.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "plan/hierarchical.hpp"
#include "plan/node_class_simulation.hpp"
#include "plan/node_layout.hpp"
#include "plan/planner.hpp"
#include "plan/simulator.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink;

topo::Topology zoo(const std::string& name) {
  return topo::makeZooTopology(name, topo::LinkTable::builtin());
}

constexpr std::size_t kFineBudget = 4 * plan::kHierarchicalMaxTransfers;  // as the planner

// How far the two may differ. Exact on 2 and 4 nodes at 256 MiB; up to 0.3% on 8 and 16
// nodes and 1e-5 where the segments are not all equal (4000012 bytes). The cause of
// the 0.3% was not traced: the full simulation's flow groups are N times larger, and
// the rounding of their max-min rates may reorder events that the symmetry makes
// simultaneous.
constexpr double kTolerance = 5e-3;

// The halving on 2-16 identical nodes: node 0 alone predicts what every node does, so
// its time is the full simulation's (within kTolerance).
TEST(NodeClassSimulation, OneNodeEqualsTheFullSimulation) {
  for (const char* machine :
       {"hgx-h100:2", "hgx-h100:4", "hgx-h100:8", "hgx-h100:16", "dgx1-v100:2", "dgx1-v100:4",
        "pcie-8gpu:4", "dgx-a100:4", "dgx1-p100:2"}) {
    const auto t = zoo(machine);
    ASSERT_TRUE(plan::oneNodeSimulationApplies(t)) << machine;
    for (std::uint64_t bytes : {std::uint64_t{256} << 20, std::uint64_t{4} * 1000003}) {
      const auto p = plan::lowerRailHalving(t, bytes, {}, {}, kFineBudget);
      const double full = plan::simulate(p, t).seconds;
      const auto one = plan::simulateOneNode(p, t);
      ASSERT_TRUE(one.has_value()) << machine;
      EXPECT_NEAR(one->seconds, full, kTolerance * full) << machine << ", " << bytes << " bytes";
      EXPECT_LT(one->transfers, plan::simulate(p, t).transfers) << machine;
    }
  }
}

// Chunk rule or fixed chunks, the cluster's own budget: still the same.
TEST(NodeClassSimulation, OneNodeEqualsTheFullSimulationWithOtherChunks) {
  const auto t = zoo("hgx-h100:4");
  plan::LowerOptions fixed;
  fixed.chunk_bytes = std::uint64_t{1} << 18;
  for (const auto& p : {plan::lowerRailHalving(t, std::uint64_t{64} << 20, fixed),
                        plan::lowerRailHalving(t, std::uint64_t{64} << 20, {})}) {
    const double full = plan::simulate(p, t).seconds;
    const auto one = plan::simulateOneNode(p, t);
    ASSERT_TRUE(one.has_value());
    EXPECT_NEAR(one->seconds, full, kTolerance * full);
  }
}

// Not a power of two of nodes, nodes of different GPU counts: no prediction from one node.
TEST(NodeClassSimulation, OnlyPowersOfTwoOfIdenticalNodes) {
  const auto three = zoo("hgx-h100:3");
  EXPECT_FALSE(plan::oneNodeSimulationApplies(three));
  EXPECT_FALSE(plan::simulateOneNode(plan::lowerRailHalving(three, 1 << 20, {}), three));
  const auto uneven = zoo("hgx-h100:2").restrictToGpus({0, 1, 2, 8, 9});
  EXPECT_FALSE(plan::oneNodeSimulationApplies(uneven));
  EXPECT_FALSE(plan::simulateOneNode(plan::lowerRailHalving(uneven, 1 << 20, {}), uneven));
  EXPECT_TRUE(plan::oneNodeSimulationApplies(zoo("hgx-h100:2").restrictToGpus({0, 1, 8, 9})));
}

// A malformed plan fails as the full simulation does.
TEST(NodeClassSimulation, AMalformedPlanThrows) {
  const auto t = zoo("hgx-h100:2");
  auto p = plan::lowerRailHalving(t, 1 << 20, {});
  EXPECT_NO_THROW(plan::simulateOneNode(p, t));
  p.ranks[0].steps[0].peer = p.num_ranks;
  EXPECT_THROW(plan::simulateOneNode(p, t), Error);
}

// The planner prices the halving by node 0 on a power of two of identical nodes: on 16
// H100 nodes it takes it, within 10% of the NIC bound, at the full simulation's time.
TEST(NodeClassSimulation, ThePlannerPricesTheHalvingByOneNode) {
  const auto t = zoo("hgx-h100:16");
  const std::uint64_t bytes = std::uint64_t{1} << 30;
  plan::PlannerOptions o;
  o.only_family = "hierarchical";
  const auto choice = plan::choosePlan(plan::Collective::AllReduce, t, bytes, 0, o);
  const bool halving = std::any_of(choice.plan.notes.begin(), choice.plan.notes.end(), [](auto& n) {
    return n.rfind("between nodes: recursive halving and doubling", 0) == 0;
  });
  EXPECT_TRUE(halving);
  EXPECT_NEAR(plan::simulate(choice.plan, t).seconds, choice.seconds, kTolerance * choice.seconds);
  const double bound = plan::optimalAlgbwGbps(plan::Collective::AllReduce, t, 0, {});
  EXPECT_GE(static_cast<double>(bytes) / choice.seconds / 1e9 / bound, 0.9);
}

// The intra-node ReduceScatter of the halving: each root's first chunks are 1 MiB
// (the ramp), later ones larger; the AllGather's last ones 1 MiB again.
TEST(NodeClassSimulation, TheHalvingsIntraNodeChunksRampAtBothEnds) {
  const auto t = zoo("hgx-h100:2");
  const auto layout = plan::nodeLayout(t);
  const auto p = plan::lowerRailHalving(t, std::uint64_t{1} << 30, {}, {}, 2000);
  std::vector<std::uint64_t> first_sends;
  std::uint64_t largest = 0, last = 0;
  for (const auto& s : p.ranks[0].steps) {
    if (s.kind != plan::StepKind::Send ||
        layout.node_of_rank[static_cast<std::size_t>(s.peer)] != 0)
      continue;
    if (first_sends.size() < 2) first_sends.push_back(s.bytes);
    largest = std::max(largest, s.bytes);
    last = s.bytes;
  }
  ASSERT_EQ(first_sends.size(), 2u);
  for (std::uint64_t b : first_sends) EXPECT_LE(b, std::uint64_t{1} << 20);
  EXPECT_GT(largest, std::uint64_t{1} << 20);
  EXPECT_LE(last, std::uint64_t{1} << 20);
}

// The ramp and the merged blocks move every byte exactly once: proven on chunks larger
// than the ramp's first (a tight budget) on identical and uneven nodes.
TEST(NodeClassSimulation, TheHalvingWithRampsIsCorrect) {
  for (const auto& t : {zoo("hgx-h100:2").restrictToGpus({0, 1, 8, 9}),
                        zoo("hgx-h100:4").restrictToGpus({0, 1, 8, 9, 16, 17, 24, 25}),
                        zoo("hgx-h100:3").restrictToGpus({0, 1, 2, 8, 16, 17})}) {
    for (std::uint64_t bytes : {std::uint64_t{48} << 20, std::uint64_t{4} * 5000011}) {
      const auto result = plan::runSymbolic(plan::lowerRailHalving(t, bytes, {}, {}, 200));
      EXPECT_TRUE(result.ok) << t.name() << ", " << bytes << " bytes: " << result.error;
    }
  }
}

}  // namespace
