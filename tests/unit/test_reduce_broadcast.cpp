// Reduce+broadcast AllReduce trees (undirected spanning trees packed at the graph's
// strength) and the fewest-trees packings: the packer against graphStrength (an
// independent computation of the optimum) and against the capacities, every DGX-1
// allocation through the planner and the simulator, and tree counts against the
// minimum cut in lanes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plan/baselines.hpp"
#include "plan/planner.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/zoo.hpp"
#include "treegen/spanning_tree_packer.hpp"
#include "treegen/strength.hpp"
#include "treegen/treegen.hpp"

namespace {

namespace topo = blink::topo;
namespace plan = blink::plan;
namespace treegen = blink::treegen;
using treegen::CapacitatedEdge;
using treegen::Capacity;

// Checks that `packing` is spanning trees within capacity with total = strength.
void expectOptimalPacking(int n, const std::vector<CapacitatedEdge>& edges,
                          const treegen::SpanningTreePacking& packing) {
  std::vector<treegen::UndirectedEdge> weighted;
  weighted.reserve(edges.size());
  for (const auto& e : edges) weighted.push_back({e.u, e.v, static_cast<double>(e.capacity)});
  const double sigma = treegen::graphStrength(n, weighted).strength;
  ASSERT_FALSE(packing.cut_short);
  EXPECT_NEAR(packing.strength, sigma, 1e-9 * std::max(1.0, sigma));
  std::vector<double> load(edges.size(), 0.0);
  double total = 0.0;
  for (const auto& t : packing.trees) {
    EXPECT_GT(t.weight, 0.0);
    total += t.weight;
    ASSERT_EQ(t.edges.size(), static_cast<std::size_t>(n - 1));
    std::vector<int> parent(static_cast<std::size_t>(n));
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (int e : t.edges) {
      load[e] += t.weight;
      const int a = find(edges[e].u), b = find(edges[e].v);
      EXPECT_NE(a, b) << "a tree with a cycle";
      parent[a] = b;
    }
  }
  EXPECT_NEAR(total, sigma, 1e-9 * std::max(1.0, sigma));
  for (std::size_t e = 0; e < edges.size(); ++e) {
    EXPECT_LE(load[e], static_cast<double>(edges[e].capacity) * (1 + 1e-9)) << "edge " << e;
  }
}

TEST(SpanningTreePacker, CompleteGraphOfFourPacksTwoTrees) {
  std::vector<CapacitatedEdge> k4;
  for (int u = 0; u < 4; ++u) {
    for (int v = u + 1; v < 4; ++v) k4.push_back({u, v, 1});
  }
  const auto packing = treegen::packSpanningTrees(4, k4, nullptr);
  expectOptimalPacking(4, k4, packing);
  EXPECT_DOUBLE_EQ(packing.strength, 2.0);
  EXPECT_EQ(packing.trees.size(), 2u);
}

TEST(SpanningTreePacker, TwoDenseBlocksJoinedByABridge) {
  // Strength is the bridge (3); each block alone could carry more.
  std::vector<CapacitatedEdge> g;
  for (int base : {0, 4}) {
    for (int u = 0; u < 4; ++u) {
      for (int v = u + 1; v < 4; ++v) g.push_back({base + u, base + v, 5});
    }
  }
  g.push_back({3, 4, 3});
  const auto packing = treegen::packSpanningTrees(8, g, nullptr);
  expectOptimalPacking(8, g, packing);
  EXPECT_DOUBLE_EQ(packing.strength, 3.0);
}

TEST(SpanningTreePacker, RandomGraphsReachTheStrength) {
  std::mt19937 rng(1616);
  for (int round = 0; round < 150; ++round) {
    const int n = 2 + static_cast<int>(rng() % 8);
    std::vector<CapacitatedEdge> edges;
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        if (rng() % 3 != 0) edges.push_back({u, v, 1 + static_cast<Capacity>(rng() % 40)});
      }
    }
    if (rng() % 2 == 0 && !edges.empty()) edges.push_back(edges[rng() % edges.size()]);
    SCOPED_TRACE("round " + std::to_string(round));
    expectOptimalPacking(n, edges, treegen::packSpanningTrees(n, edges, nullptr));
  }
}

TEST(SpanningTreePacker, ABudgetTooSmallStopsEveryRankAlike) {
  std::vector<CapacitatedEdge> edges;
  for (int u = 0; u < 8; ++u) {
    for (int v = u + 1; v < 8; ++v) edges.push_back({u, v, 3 + (u * v) % 7});
  }
  treegen::Budget a = treegen::Budget::ofWork(500), b = treegen::Budget::ofWork(500);
  const auto first = treegen::packSpanningTrees(8, edges, &a);
  const auto second = treegen::packSpanningTrees(8, edges, &b);
  EXPECT_TRUE(first.cut_short);
  EXPECT_TRUE(first.trees.empty());
  EXPECT_EQ(a.spent(), b.spent());
  EXPECT_EQ(first.cut_short, second.cut_short);
}

// ---- DGX-1 allocations ---------------------------------------------------------

const std::set<topo::LinkKind> kNvLink = {topo::LinkKind::NvLink};

std::vector<std::vector<int>> allocations(int smallest) {
  std::vector<std::vector<int>> out;
  for (unsigned mask = 0; mask < 256; ++mask) {
    std::vector<int> gpus;
    for (int i = 0; i < 8; ++i) {
      if (mask >> i & 1u) gpus.push_back(i);
    }
    if (static_cast<int>(gpus.size()) >= smallest) out.push_back(gpus);
  }
  return out;
}

std::string label(const std::string& machine, const std::vector<int>& gpus) {
  std::string s = machine + " --gpus";
  for (int g : gpus) s += " " + std::to_string(g);
  return s;
}

// Every tree spans every GPU, and no link (direction) carries more than it has.
void expectWithinCapacity(const topo::Topology& t, const treegen::TreeSet& set) {
  std::map<std::pair<topo::Vertex, topo::Vertex>, double> load;
  for (const auto& tree : set.trees) {
    std::set<topo::Vertex> reached{*t.findGpu(tree.root_gpu)};
    for (const auto& e : tree.edges) {
      EXPECT_TRUE(reached.contains(e.from)) << "an edge from a vertex not yet reached";
      reached.insert(e.to);
      for (std::size_t k = 0; k + 1 < e.route.size(); ++k) {
        load[{e.route[k], e.route[k + 1]}] += tree.weight_gbps;
        load[{e.route[k + 1], e.route[k]}] += tree.weight_gbps;  // both ways at once
      }
    }
    for (auto g : t.gpus()) EXPECT_TRUE(reached.contains(g)) << "a tree misses a GPU";
  }
  for (const auto& [hop, gbps] : load) {
    double capacity = 0.0;
    for (auto e : t.linksBetween(hop.first, hop.second)) capacity += t.link(e).capacity();
    EXPECT_LE(gbps, capacity * (1 + 1e-9) + 1e-9);
  }
}

TEST(ReduceBroadcast, NvLinkRateIsTheStrengthOnEveryDgx1Allocation) {
  for (const std::string machine : {"dgx1-p100", "dgx1-v100"}) {
    const topo::Topology full = topo::makeZooTopology(machine, topo::LinkTable::builtin());
    for (const auto& gpus : allocations(3)) {
      SCOPED_TRACE(label(machine, gpus));
      const topo::Topology t = full.restrictToGpus(gpus);
      const auto bounds = treegen::allReduceBounds(t, kNvLink);
      treegen::PackOptions o;
      o.links = kNvLink;
      o.budget_ms = 600'000;
      const treegen::TreeSet rb = treegen::packReduceBroadcast(t, o);
      EXPECT_NEAR(rb.rate_gbps, bounds.reduce_broadcast_gbps, 1e-6);
      EXPECT_NEAR(rb.bound_gbps, bounds.reduce_broadcast_gbps, 1e-6);
      if (bounds.reduce_broadcast_gbps == 0.0) continue;  // not connected over NVLink
      expectWithinCapacity(t, rb);
      // RS+AG never beats it (blink-plan prints the better shape: this one).
      const double n = static_cast<double>(gpus.size());
      EXPECT_LE(treegen::packAllGather(t, o).rate_gbps * n / 2.0, rb.rate_gbps + 1e-6);
    }
  }
}

// The planner over all links: at 1 GiB at least 95% of the NVLink-only optimum and
// never slower than the ring.
void checkPlannedAllReduce(const std::string& machine, const std::vector<int>& gpus) {
  SCOPED_TRACE(label(machine, gpus));
  const std::uint64_t bytes = 1ull << 30;
  const topo::Topology t =
      topo::makeZooTopology(machine, topo::LinkTable::builtin()).restrictToGpus(gpus);
  const double optimum = treegen::allReduceBounds(t, kNvLink).reduce_broadcast_gbps;
  plan::PlannerOptions o;
  o.pack.budget_ms = 600'000;
  const plan::Choice choice = plan::choosePlan(plan::Collective::AllReduce, t, bytes, 0, o);
  const double rate = static_cast<double>(bytes) / choice.seconds / 1e9;
  EXPECT_GE(rate, 0.95 * optimum) << choice.why;
  bool ring = false;
  for (const auto& c : choice.candidates) {
    if (c.name == "ring") {
      ring = true;
      EXPECT_LE(choice.seconds, c.seconds);
    }
  }
  EXPECT_TRUE(ring);
}

// Planning and simulating 1 GiB on all 438 allocations takes about 50 s on a shared
// 2-core machine (8-GPU views about a second each), so the suite checks every 6th
// allocation of each machine
// (73, a deterministic spread over every size) plus the whole machines and the
// issue's views; the full enumeration is the disabled test below (run it with
// --gtest_also_run_disabled_tests: it passed on every allocation when this landed).
TEST(ReduceBroadcast, PlannedAllReduceOfAGigabyteOnDgx1Allocations) {
  for (const std::string machine : {"dgx1-p100", "dgx1-v100"}) {
    const auto all = allocations(3);
    for (std::size_t i = 0; i < all.size(); i += 6) checkPlannedAllReduce(machine, all[i]);
    checkPlannedAllReduce(machine, {0, 1, 2, 3, 4, 5, 6, 7});
    checkPlannedAllReduce(machine, {0, 1, 2, 3, 4, 5});
    checkPlannedAllReduce(machine, {0, 1, 2, 4, 5});
  }
}

TEST(ReduceBroadcast, DISABLED_PlannedAllReduceOfAGigabyteOnEveryDgx1Allocation) {
  for (const std::string machine : {"dgx1-p100", "dgx1-v100"}) {
    for (const auto& gpus : allocations(3)) checkPlannedAllReduce(machine, gpus);
  }
}

TEST(ReduceBroadcast, PlansVerifyInTheSymbolicExecutor) {
  const topo::Topology full = topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin());
  for (const auto& gpus : std::vector<std::vector<int>>{
           {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5}, {0, 1, 2, 4, 5}, {2, 3, 6}}) {
    SCOPED_TRACE(label("dgx1-v100", gpus));
    const topo::Topology t = full.restrictToGpus(gpus);
    for (const auto& links : {kNvLink, std::set<topo::LinkKind>{}}) {
      treegen::PackOptions o;
      o.links = links;
      const treegen::TreeSet rb = treegen::packReduceBroadcast(t, o);
      ASSERT_FALSE(rb.trees.empty());
      for (std::uint64_t bytes : {std::uint64_t{4}, std::uint64_t{4096}, std::uint64_t{1} << 20}) {
        const auto lowered = plan::lowerTrees(plan::Collective::AllReduce, rb, t, bytes, {});
        const auto verdict = plan::runSymbolic(lowered.plan);
        EXPECT_TRUE(verdict.ok) << verdict.error;
      }
    }
  }
}

// ---- fewest trees ---------------------------------------------------------------

// GB/s of one NVLink lane on the machine (every GPU has the same lanes).
double laneGbps(const topo::Topology& t) {
  const topo::Vertex g = t.gpus().front();
  double gbps = 0.0;
  for (auto e : t.links()) {
    if (t.source(e) == g && t.link(e).kind == topo::LinkKind::NvLink) gbps += t.link(e).capacity();
  }
  return gbps / t.laneCount(g, topo::LinkKind::NvLink);
}

TEST(FewestTrees, BroadcastUsesAtMostTheMinCutInLanesOnEveryDgx1Allocation) {
  for (const std::string machine : {"dgx1-p100", "dgx1-v100"}) {
    const topo::Topology full = topo::makeZooTopology(machine, topo::LinkTable::builtin());
    const double lane = laneGbps(full);
    for (const auto& gpus : allocations(2)) {
      SCOPED_TRACE(label(machine, gpus));
      const topo::Topology t = full.restrictToGpus(gpus);
      treegen::PackOptions o;
      o.links = kNvLink;
      o.budget_ms = 600'000;
      const treegen::TreeSet set = treegen::packBroadcast(t, gpus.front(), o);
      EXPECT_NEAR(set.rate_gbps, set.bound_gbps, 1e-9);
      const double lanes = set.bound_gbps / lane;
      EXPECT_LE(static_cast<double>(set.trees.size()), lanes + 1e-9);
      for (const auto& tree : set.trees) EXPECT_GE(tree.weight_gbps, lane - 1e-9);
    }
    const treegen::TreeSet whole = [&] {
      treegen::PackOptions o;
      o.links = kNvLink;
      return treegen::packBroadcast(full, 0, o);
    }();
    EXPECT_LE(whole.trees.size(), machine == "dgx1-p100" ? 4u : 6u);
  }
}

TEST(FewestTrees, TheIssueExampleNeedsTwoTrees) {
  const topo::Topology t = topo::makeZooTopology("dgx1-p100", topo::LinkTable::builtin())
                               .restrictToGpus({0, 1, 2, 4, 5});
  treegen::PackOptions o;
  o.links = kNvLink;
  o.minimize = true;
  const treegen::TreeSet set = treegen::packBroadcast(t, 0, o);
  EXPECT_EQ(set.trees.size(), 2u);
  EXPECT_NEAR(set.rate_gbps, set.bound_gbps, 1e-9);
}

TEST(FewestTrees, MinimizeKeepsTheReduceBroadcastRate) {
  const topo::Topology t = topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin());
  treegen::PackOptions o;
  const treegen::TreeSet plain = treegen::packReduceBroadcast(t, o);
  o.minimize = true;
  const treegen::TreeSet fewer = treegen::packReduceBroadcast(t, o);
  EXPECT_LE(fewer.trees.size(), plain.trees.size());
  EXPECT_NEAR(fewer.rate_gbps, plain.rate_gbps, 1e-6);
  expectWithinCapacity(t, fewer);
}

}  // namespace
