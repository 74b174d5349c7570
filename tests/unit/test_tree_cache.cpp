// The process-wide tree cache (plan/tree_cache.hpp): a hit gives the trees a miss
// would and charges the planning budget what the packing cost, so a rank with the
// trees cached and one without plan alike; packings cut short are not kept.
#include <gtest/gtest.h>

#include <memory>

#include "plan/tree_cache.hpp"
#include "topology/link_table.hpp"
#include "topology/zoo.hpp"
#include "treegen/budget.hpp"

namespace {

using namespace blink;

treegen::PackOptions withBudget(std::int64_t work) {
  treegen::PackOptions o;
  o.budget = std::make_shared<treegen::Budget>(treegen::Budget::ofWork(work));
  return o;
}

TEST(TreeCache, AHitReturnsTheSameTreesAndChargesTheSameWork) {
  const topo::Topology t =
      topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin()).restrictToGpus({0, 1, 4, 5});
  const auto before = plan::treeCacheStats();
  treegen::PackOptions first = withBudget(std::int64_t{1} << 40);
  const treegen::TreeSet packed = plan::allGatherTrees(t, first);
  ASSERT_FALSE(packed.budget_exhausted);
  ASSERT_GT(packed.work, 0);
  EXPECT_EQ(first.budget->spent(), packed.work);

  treegen::PackOptions second = withBudget(std::int64_t{1} << 40);
  const treegen::TreeSet cached = plan::allGatherTrees(t, second);
  EXPECT_EQ(second.budget->spent(), packed.work) << "a hit charges what the packing cost";
  EXPECT_EQ(cached.rate_gbps, packed.rate_gbps);
  ASSERT_EQ(cached.trees.size(), packed.trees.size());
  for (std::size_t i = 0; i < cached.trees.size(); ++i) {
    EXPECT_EQ(cached.trees[i].root_gpu, packed.trees[i].root_gpu);
    EXPECT_EQ(cached.trees[i].weight_gbps, packed.trees[i].weight_gbps);
    ASSERT_EQ(cached.trees[i].edges.size(), packed.trees[i].edges.size());
    for (std::size_t e = 0; e < cached.trees[i].edges.size(); ++e) {
      EXPECT_EQ(cached.trees[i].edges[e].from, packed.trees[i].edges[e].from);
      EXPECT_EQ(cached.trees[i].edges[e].to, packed.trees[i].edges[e].to);
    }
  }
  const auto after = plan::treeCacheStats();
  EXPECT_EQ(after.misses - before.misses, 1u);
  EXPECT_EQ(after.hits - before.hits, 1u);
}

TEST(TreeCache, WithTooLittleBudgetLeftAHitPacksAfreshAndIsCutShortLikeAMiss) {
  const topo::Topology t =
      topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin()).restrictToGpus({0, 1, 2, 4});
  treegen::PackOptions ample = withBudget(std::int64_t{1} << 40);
  const treegen::TreeSet full = plan::broadcastTrees(t, 0, ample);
  ASSERT_FALSE(full.budget_exhausted);
  const auto before = plan::treeCacheStats();
  treegen::PackOptions tight = withBudget(full.work / 2);
  const treegen::TreeSet cut = plan::broadcastTrees(t, 0, tight);
  EXPECT_TRUE(cut.budget_exhausted) << "as a rank without the cache would be";
  EXPECT_EQ(plan::treeCacheStats().misses - before.misses, 1u);
  // The cut-short trees were not kept: an ample budget gets the full ones again.
  treegen::PackOptions again = withBudget(std::int64_t{1} << 40);
  EXPECT_EQ(plan::broadcastTrees(t, 0, again).rate_gbps, full.rate_gbps);
}

}  // namespace
