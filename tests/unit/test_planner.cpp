// The planner compares every candidate by the simulator and never picks one that
// is slower than the ring; what it picks is a correct plan. Blink's Broadcast on the
// DGX-1s comes within 5% of the bound, rebalancing evens out the trees, and no
// AllReduce beats the AllReduce bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu_topologies.hpp"
#include "plan/baselines.hpp"
#include "plan/planner.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink;

TEST(Planner, NeverSlowerThanTheRingAndAlwaysCorrect) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  for (const auto& m : topo::zooMachines()) {
    topo::Topology full = topo::makeZooTopology(m.name, table);
    for (const auto& t : {full, full.restrictToGpus({0, 1, 2, 4})}) {
      const std::uint64_t n = t.gpus().size();
      for (auto c : {plan::Collective::Broadcast, plan::Collective::AllReduce,
                     plan::Collective::AllGather}) {
        const std::uint64_t bytes = 4 * n * 1024;
        plan::PlannerOptions options;
        auto choice = plan::choosePlan(c, t, bytes, 0, options);
        const double ring =
            plan::simulate(plan::ringPlan(c, t, bytes, 0, options.lower), t, options.sim).seconds;
        EXPECT_LE(choice.seconds, ring * (1 + 1e-12)) << t.name() << " " << plan::toString(c);
        auto proof = plan::runSymbolic(choice.plan);
        EXPECT_TRUE(proof.ok) << t.name() << " " << plan::toString(c) << ": " << proof.error;
        EXPECT_FALSE(choice.why.empty());
        EXPECT_GE(choice.candidates.size(), 3u);
      }
    }
  }
}

TEST(Planner, FragmentedDgx1PrefersTrees) {
  // GPUs {0,1,2,4} of a DGX-1V have no NVLink ring: the paper's case.
  topo::Topology t =
      topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin()).restrictToGpus({0, 1, 2, 4});
  auto choice = plan::choosePlan(plan::Collective::Broadcast, t, 64ull << 20, 0, {});
  EXPECT_EQ(choice.plan.algorithm, "blink-trees") << choice.why;
  const double algbw = static_cast<double>(64ull << 20) / choice.seconds / 1e9;
  const double bound = plan::optimalAlgbwGbps(plan::Collective::Broadcast, t, 0, {});
  EXPECT_GT(algbw, 0.8 * bound);
  EXPECT_LE(algbw, bound * (1 + 1e-9));
}

// The tracker's target: at 1 GiB, Blink's Broadcast within 5% of the exact bound on
// the allocations that were furthest from it (the whole machines and the 6-GPU
// fragments; perf/simulate covers every allocation).
TEST(Planner, Dgx1BroadcastOfAGigabyteIsWithinFivePercentOfTheBound) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  const std::uint64_t bytes = 1ull << 30;
  for (const char* machine : {"dgx1-p100", "dgx1-v100"}) {
    const topo::Topology full = topo::makeZooTopology(machine, table);
    for (const auto& t : {full, full.restrictToGpus({0, 1, 2, 4, 5, 6})}) {
      const double bound = plan::optimalAlgbwGbps(plan::Collective::Broadcast, t, 0, {});
      const auto blink = plan::blinkCandidates(plan::Collective::Broadcast, t, bytes, 0, {});
      ASSERT_EQ(blink.size(), 1u);
      const double algbw = static_cast<double>(bytes) / blink[0].second / 1e9;
      EXPECT_GE(algbw, 0.95 * bound) << t.name();
      EXPECT_LE(algbw, bound * (1 + 1e-9)) << t.name();
    }
  }
}

TEST(Planner, RebalancingEvensOutTheTrees) {
  // On the full DGX-1P the packed trees differ in depth and in how much latency
  // their chunks wait out: split by packed weight, some finish ~2% after others.
  const topo::Topology t = topo::makeZooTopology("dgx1-p100", topo::LinkTable::builtin());
  const std::uint64_t bytes = 1ull << 30;
  plan::PlannerOptions fixed;
  fixed.rebalance = false;
  const auto packed = plan::blinkCandidates(plan::Collective::Broadcast, t, bytes, 0, fixed);
  const auto balanced = plan::blinkCandidates(plan::Collective::Broadcast, t, bytes, 0, {});
  ASSERT_EQ(packed.size(), 1u);
  ASSERT_EQ(balanced.size(), 1u);
  EXPECT_LT(balanced[0].second, packed[0].second * 0.99);
  bool noted = false;
  for (const auto& n : balanced[0].first.notes) noted |= n.find("rebalanced") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_NE(balanced[0].first.hash(), packed[0].first.hash());
  auto proof = plan::runSymbolic(balanced[0].first);
  EXPECT_TRUE(proof.ok) << proof.error;
}

// No AllReduce plan beats the AllReduce bound, and on a ring of four GPUs (where the
// total-traffic bound, 4 x 50 / 6 GB/s, is below the minimum cut of 50) the ring
// algorithm comes close to it.
TEST(Planner, AllReduceBoundHoldsAndIsTightOnARing) {
  topo::Topology ring("ring4");
  const std::vector<topo::Vertex> g = test::addGpus(ring, 4);
  for (int i = 0; i < 4; ++i) {
    ring.addDuplexLink(g[i], g[(i + 1) % 4], topo::Link{topo::LinkKind::NvLink, 25.0, 1, 0.7, ""});
  }
  const std::uint64_t bytes = 256ull << 20;
  const double bound = plan::optimalAlgbwGbps(plan::Collective::AllReduce, ring, 0, {});
  EXPECT_NEAR(bound, 200.0 / 6.0, 1e-9);
  // (No double binary tree here: its routes need paths the ring does not have.)
  auto plans = plan::blinkCandidates(plan::Collective::AllReduce, ring, bytes, 0, {});
  const plan::Plan rings = plan::ringPlan(plan::Collective::AllReduce, ring, bytes, 0, {});
  plans.emplace_back(rings, plan::simulate(rings, ring).seconds);
  double best = 0.0;
  for (const auto& [p, seconds] : plans) {
    const double algbw = static_cast<double>(bytes) / seconds / 1e9;
    EXPECT_LE(algbw, bound * (1 + 1e-9)) << p.algorithm;
    best = std::max(best, algbw);
  }
  EXPECT_GE(best, 0.9 * bound);

  const topo::LinkTable table = topo::LinkTable::builtin();
  for (const char* machine : {"dgx1-p100", "dgx1-v100"}) {
    const topo::Topology t = topo::makeZooTopology(machine, table).restrictToGpus({0, 1, 2, 4});
    const double b = plan::optimalAlgbwGbps(plan::Collective::AllReduce, t, 0, {});
    const auto c = plan::choosePlan(plan::Collective::AllReduce, t, 64ull << 20, 0, {});
    for (const auto& cand : c.candidates) {
      EXPECT_LE(static_cast<double>(64ull << 20) / cand.seconds / 1e9, b * (1 + 1e-9))
          << machine << " " << cand.name;
    }
  }
}

TEST(Planner, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::AllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::Broadcast, 8), 1.0);
}

}  // namespace
