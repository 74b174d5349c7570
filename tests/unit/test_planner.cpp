// The planner compares every candidate by the simulator and never picks one that
// is slower than the ring; what it picks is a correct plan.
#include <gtest/gtest.h>

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

TEST(Planner, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::AllGather, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(plan::busBandwidthFactor(plan::Collective::Broadcast, 8), 1.0);
}

}  // namespace
