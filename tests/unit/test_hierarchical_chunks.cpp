// The planner's choice of chunk size for the hierarchical plan: besides the chunk
// rule's chunks it simulates coarser fixed chunks and keeps the fastest (planner.cpp,
// coarserChunksWhereFaster). On the issue-17 criterion's graph (2 hosts x 2 ranks, 2
// NICs per host at the probed 0.95 Gbit/s) the rule cuts a 64 KiB AllReduce into 36
// steps per rank; whole pieces simulate faster with a third of the steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "plan/hierarchical.hpp"
#include "plan/planner.hpp"
#include "plan/simulator.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/link_table.hpp"
#include "topology/load.hpp"

namespace {

using namespace blink;
using plan::Collective;

topo::Topology twoSlowNics() {
  return topo::loadTopology(std::string(BLINK_TEST_DATA_DIR) + "/two_hosts_two_slow_nics.json",
                            topo::LinkTable::builtin());
}

// As the runtime plans across nodes: the hierarchical plan, no flat trees.
plan::PlannerOptions acrossNodes() {
  plan::PlannerOptions o;
  o.flat_trees_across_nodes = false;
  return o;
}

std::size_t steps(const plan::Plan& p) {
  std::size_t n = 0;
  for (const auto& rank : p.ranks) n += rank.steps.size();
  return n;
}

std::uint64_t largestMessage(const plan::Plan& p) {
  std::uint64_t largest = 0;
  for (const auto& rank : p.ranks) {
    for (const auto& s : rank.steps) largest = std::max(largest, s.bytes);
  }
  return largest;
}

TEST(HierarchicalChunks, MidSizeAllReduceTakesWholePieces) {
  const auto t = twoSlowNics();
  const auto o = acrossNodes();
  const auto choice = plan::choosePlan(Collective::AllReduce, t, 64 << 10, -1, o);
  ASSERT_EQ(choice.plan.algorithm, "blink-hierarchical") << choice.why;
  const plan::Plan rule = plan::lowerHierarchical(Collective::AllReduce, t, 64 << 10, -1, o.lower);
  const double rule_seconds = plan::simulate(rule, t, o.sim).seconds;
  // Fewer, larger messages, predicted faster: 16 KiB pieces (2 nodes x 2 ports) whole.
  EXPECT_LT(steps(choice.plan), steps(rule) / 2);
  EXPECT_EQ(largestMessage(choice.plan), 16u << 10);
  EXPECT_LT(choice.seconds, rule_seconds);
  // What the planner predicted is what the plan it returns costs (the runtime runs it).
  EXPECT_DOUBLE_EQ(plan::simulate(choice.plan, t, o.sim).seconds, choice.seconds);
  const auto proof = plan::runSymbolic(choice.plan);
  EXPECT_TRUE(proof.ok) << proof.error;
}

TEST(HierarchicalChunks, NeverPredictedSlowerThanTheChunkRule) {
  const auto t = twoSlowNics();
  const auto o = acrossNodes();
  for (std::uint64_t bytes :
       {std::uint64_t{64} << 10, std::uint64_t{1} << 20, std::uint64_t{16} << 20}) {
    const auto choice = plan::choosePlan(Collective::AllReduce, t, bytes, -1, o);
    const plan::Plan rule = plan::lowerHierarchical(Collective::AllReduce, t, bytes, -1, o.lower);
    EXPECT_LE(choice.seconds, plan::simulate(rule, t, o.sim).seconds * (1 + 1e-12)) << bytes;
  }
}

TEST(HierarchicalChunks, EveryCollectiveStaysCorrect) {
  const auto t = twoSlowNics();
  const auto o = acrossNodes();
  for (Collective c : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce,
                       Collective::AllGather, Collective::ReduceScatter}) {
    for (std::uint64_t bytes : {std::uint64_t{64} << 10, std::uint64_t{256} << 10}) {
      const int root = c == Collective::Broadcast || c == Collective::Reduce ? 3 : -1;
      const auto choice = plan::choosePlan(c, t, bytes, root, o);
      const auto proof = plan::runSymbolic(choice.plan);
      EXPECT_TRUE(proof.ok) << plan::toString(c) << " " << bytes << ": " << proof.error;
    }
  }
}

TEST(HierarchicalChunks, FixedChunkSizeIsKept) {
  const auto t = twoSlowNics();
  auto o = acrossNodes();
  o.lower.chunk_bytes = 4096;  // BLINK_CHUNK_BYTES
  const auto choice = plan::choosePlan(Collective::AllReduce, t, 64 << 10, -1, o);
  ASSERT_EQ(choice.plan.algorithm, "blink-hierarchical") << choice.why;
  EXPECT_EQ(largestMessage(choice.plan), 4096u);
}

}  // namespace
