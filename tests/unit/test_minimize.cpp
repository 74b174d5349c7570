// minimizeTrees: fewer trees at exactly the same per-link loads and per-root rates
// (tolerance 0), and within the stated loss otherwise.
#include <gtest/gtest.h>

#include <map>

#include "common/error.hpp"
#include "topology/zoo.hpp"
#include "treegen/minimize.hpp"
#include "treegen/treegen.hpp"

namespace {

using namespace blink;

using Loads = std::map<std::pair<topo::Vertex, topo::Vertex>, double>;

Loads loadsOf(const treegen::TreeSet& set) {
  Loads loads;
  for (const auto& tree : set.trees) {
    for (const auto& e : tree.edges) {
      for (std::size_t k = 0; k + 1 < e.route.size(); ++k) {
        loads[{e.route[k], e.route[k + 1]}] += tree.weight_gbps;
      }
    }
  }
  return loads;
}

std::map<int, double> ratesOf(const treegen::TreeSet& set) {
  std::map<int, double> rates;
  for (const auto& tree : set.trees) rates[tree.root_gpu] += tree.weight_gbps;
  return rates;
}

treegen::TreeSet mwu(const topo::Topology& t, bool allgather) {
  treegen::PackOptions options;
  options.method = treegen::Method::Mwu;
  options.epsilon = 0.1;
  return allgather ? treegen::packAllGather(t, options)
                   : treegen::packBroadcast(t, t.device(t.gpus()[0]).gpu_index, options);
}

TEST(Minimize, LossFreeKeepsLoadsAndRatesExactly) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  for (const char* machine : {"dgx1-v100", "dgx1-p100", "dgx-a100"}) {
    for (bool allgather : {false, true}) {
      topo::Topology t = topo::makeZooTopology(machine, table);
      treegen::TreeSet set = mwu(t, allgather);
      const std::size_t before = set.trees.size();
      const Loads loads = loadsOf(set);
      const auto rates = ratesOf(set);
      const double rate = set.rate_gbps;
      treegen::minimizeTrees(set, 0.0);
      EXPECT_LT(set.trees.size(), before) << machine;
      // A basic solution needs no more trees than rows (links used + roots).
      EXPECT_LE(set.trees.size(), loads.size() + rates.size()) << machine;
      EXPECT_NEAR(set.rate_gbps, rate, 1e-9 * rate) << machine;
      const Loads after = loadsOf(set);
      for (const auto& [hop, load] : after) {
        ASSERT_TRUE(loads.contains(hop));
        EXPECT_NEAR(load, loads.at(hop), 1e-7 * loads.at(hop) + 1e-9) << machine;
      }
      for (const auto& [root, r] : ratesOf(set)) {
        EXPECT_NEAR(r, rates.at(root), 1e-9 * rates.at(root)) << machine << " root " << root;
      }
      for (const auto& tree : set.trees) EXPECT_GT(tree.weight_gbps, 0.0);
      EXPECT_EQ(set.method, "mwu+minimize");
    }
  }
}

TEST(Minimize, ToleranceBoundsTheLoss) {
  topo::Topology t = topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin());
  treegen::TreeSet exact_free = mwu(t, false);
  treegen::TreeSet lossy = exact_free;
  treegen::minimizeTrees(exact_free, 0.0);
  treegen::minimizeTrees(lossy, 0.05);
  EXPECT_LE(lossy.trees.size(), exact_free.trees.size());
  EXPECT_GE(lossy.rate_gbps, 0.95 * exact_free.rate_gbps * (1 - 1e-12));
  const Loads before = loadsOf(exact_free);
  for (const auto& [hop, load] : loadsOf(lossy)) EXPECT_LE(load, before.at(hop) * (1 + 1e-9));
}

TEST(Minimize, RejectsABadTolerance) {
  treegen::TreeSet set;
  for (double bad : {-0.1, 1.0, 2.0}) {
    try {
      treegen::minimizeTrees(set, bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const blink::Error& e) {
      EXPECT_EQ(e.status(), blinkInvalidArgument);
    }
  }
}

}  // namespace
