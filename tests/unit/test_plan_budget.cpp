// Planning under a budget (treegen/budget.hpp): on a complete graph of 64 GPUs,
// where the exact packer needs seconds, every collective still gets a plan that the
// symbolic executor proves correct, the tree sets say the budget ran out, and a
// budget cut gives the same trees and the same plan hash every time (ranks compare
// plan hashes). Budgets are work counts (no clock), so the outcome does not
// depend on how fast or how loaded the test machine is.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/error.hpp"
#include "plan/planner.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/zoo.hpp"
#include "treegen/budget.hpp"
#include "treegen/minimize.hpp"
#include "treegen/treegen.hpp"

namespace {

using namespace blink;

// n GPUs, every pair joined by one duplex NVLink of 25 GB/s: an NVSwitch-like domain.
topo::Topology completeGraph(int n) {
  topo::Topology t("k" + std::to_string(n));
  for (int i = 0; i < n; ++i) {
    topo::Device d = topo::makeDevice("gpu" + std::to_string(i), topo::DeviceKind::Gpu);
    d.gpu_index = i;
    t.addDevice(d);
  }
  const topo::Link link{topo::LinkKind::NvLink, 25.0, 1, 0.7, "nvlink2"};
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      t.addDuplexLink(static_cast<topo::Vertex>(i), static_cast<topo::Vertex>(j), link);
    }
  }
  return t;
}

// A budget of exactly `work` units.
treegen::SharedBudget workBudget(std::int64_t work) {
  return std::make_shared<treegen::Budget>(treegen::Budget::ofWork(work));
}

treegen::PackOptions withWork(std::int64_t work, treegen::Method method = treegen::Method::Exact) {
  treegen::PackOptions o;
  o.method = method;
  o.budget = workBudget(work);
  return o;
}

TEST(PlanBudget, CompleteGraphOf64PacksWithinTheBudget) {
  const topo::Topology k64 = completeGraph(64);
  // Enough for the bounds and a few trees, far from the whole packing (~7e8 units).
  for (auto method : {treegen::Method::Exact, treegen::Method::Mwu}) {
    const auto broadcast = treegen::packBroadcast(k64, 0, withWork(6'000'000, method));
    EXPECT_TRUE(broadcast.budget_exhausted) << treegen::toString(method);
    EXPECT_DOUBLE_EQ(broadcast.bound_gbps, 63 * 25.0);
    EXPECT_LT(broadcast.rate_gbps, broadcast.bound_gbps);
    EXPECT_GT(broadcast.rate_gbps, 0.0) << treegen::toString(method);
    EXPECT_FALSE(broadcast.notes.empty());
    EXPECT_NE(broadcast.notes.back().find("planning budget exhausted"), std::string::npos)
        << broadcast.notes.back();
    const auto allgather = treegen::packAllGather(k64, withWork(6'000'000, method));
    EXPECT_TRUE(allgather.budget_exhausted) << treegen::toString(method);
    EXPECT_DOUBLE_EQ(allgather.bound_gbps, 25.0);
    EXPECT_LT(allgather.rate_gbps, allgather.bound_gbps);
  }
}

TEST(PlanBudget, EveryCollectiveOnTheCompleteGraphOf64GetsACorrectPlan) {
  const topo::Topology k64 = completeGraph(64);
  for (auto c : {plan::Collective::Broadcast, plan::Collective::Reduce, plan::Collective::AllGather,
                 plan::Collective::ReduceScatter, plan::Collective::AllReduce}) {
    plan::PlannerOptions options;
    options.pack.budget = workBudget(6'000'000);
    const auto choice = plan::choosePlan(c, k64, std::uint64_t{64} * 4096, 0, options);
    EXPECT_TRUE(options.pack.budget->exhausted()) << plan::toString(c);
    const auto proof = plan::runSymbolic(choice.plan);
    EXPECT_TRUE(proof.ok) << plan::toString(c) << " " << choice.plan.algorithm << ": "
                          << proof.error;
  }
}

TEST(PlanBudget, NoUsableTreesFallBackToTheBaselinesEvenForTreesOnly) {
  const topo::Topology k64 = completeGraph(64);
  plan::PlannerOptions options;
  options.allow_baselines = false;
  options.pack.budget = workBudget(1);  // spent by the first max-flow
  const auto choice =
      plan::choosePlan(plan::Collective::AllGather, k64, std::uint64_t{64} * 4096, 0, options);
  EXPECT_EQ(choice.plan.algorithm, "ring") << choice.why;
  EXPECT_TRUE(plan::runSymbolic(choice.plan).ok);
}

TEST(PlanBudget, AGenerousBudgetChangesNothing) {
  const topo::Topology k8 = completeGraph(8);
  const auto set = treegen::packAllGather(k8, {});  // BLINK_PLAN_BUDGET_MS's default
  EXPECT_FALSE(set.budget_exhausted);
  EXPECT_GT(set.work, 0);
  EXPECT_DOUBLE_EQ(set.rate_gbps, set.bound_gbps);
}

void expectSameTrees(const treegen::TreeSet& a, const treegen::TreeSet& b) {
  ASSERT_EQ(a.trees.size(), b.trees.size());
  EXPECT_EQ(a.rate_gbps, b.rate_gbps);
  EXPECT_EQ(a.work, b.work);
  for (std::size_t i = 0; i < a.trees.size(); ++i) {
    EXPECT_EQ(a.trees[i].root_gpu, b.trees[i].root_gpu);
    EXPECT_EQ(a.trees[i].weight_gbps, b.trees[i].weight_gbps);
    ASSERT_EQ(a.trees[i].edges.size(), b.trees[i].edges.size());
    for (std::size_t e = 0; e < a.trees[i].edges.size(); ++e) {
      EXPECT_EQ(a.trees[i].edges[e].route, b.trees[i].edges[e].route);
    }
  }
}

TEST(PlanBudget, ACutShortPackingIsTheSameEveryTime) {
  // What every rank does: the same topology and budget, planned independently.
  const topo::Topology dgx2 = topo::makeZooTopology("dgx2", topo::LinkTable::builtin());
  for (auto method : {treegen::Method::Exact, treegen::Method::Mwu}) {
    // About two thirds of what the exact packing needs: some trees, not all.
    const auto first = treegen::packAllGather(dgx2, withWork(1'500'000, method));
    const auto second = treegen::packAllGather(dgx2, withWork(1'500'000, method));
    EXPECT_TRUE(first.budget_exhausted) << treegen::toString(method);
    EXPECT_FALSE(first.trees.empty()) << treegen::toString(method);
    expectSameTrees(first, second);
  }
  for (auto c : {plan::Collective::AllReduce, plan::Collective::Broadcast}) {
    plan::PlannerOptions a, b;
    a.pack.budget = workBudget(1'200'000);
    b.pack.budget = workBudget(1'200'000);
    const auto pa = plan::choosePlan(c, dgx2, 1 << 20, 0, a);
    const auto pb = plan::choosePlan(c, dgx2, 1 << 20, 0, b);
    EXPECT_TRUE(a.pack.budget->exhausted());
    EXPECT_EQ(pa.plan.hash(), pb.plan.hash()) << plan::toString(c);
  }
}

TEST(PlanBudget, MinimizeStopsWithTheBudgetAndKeepsTheRate) {
  const topo::Topology t = topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin());
  treegen::PackOptions o;
  o.method = treegen::Method::Mwu;
  const auto full = treegen::packBroadcast(t, 0, o);
  auto cut = full;
  treegen::Budget tiny = treegen::Budget::ofWork(1);
  treegen::minimizeTrees(cut, 0.0, &tiny);
  EXPECT_TRUE(tiny.exhausted());
  EXPECT_NEAR(cut.rate_gbps, full.rate_gbps, 1e-9 * full.rate_gbps);
  EXPECT_NE(cut.notes.back().find("cut short by the planning budget"), std::string::npos)
      << cut.notes.back();
}

TEST(PlanBudget, BadBudgetsAreRejected) {
  EXPECT_THROW(treegen::Budget(0.0), Error);
  EXPECT_THROW(treegen::Budget(-5.0), Error);
  treegen::PackOptions o;
  o.budget_ms = -1.0;  // <= 0: the environment's budget, not an error
  EXPECT_NO_THROW(treegen::packBroadcast(completeGraph(4), 0, o));
}

}  // namespace
