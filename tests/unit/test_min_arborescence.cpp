// The arborescence oracle: hand-checked graphs whose answer needs contraction (and a
// correct expansion), and a brute force over every choice of in-arcs on small random
// digraphs, which is what catches a wrong expansion that still looks plausible.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "treegen/min_arborescence.hpp"

namespace {

using blink::treegen::arborescenceCost;
using blink::treegen::minCostArborescence;
using blink::treegen::WeightedArc;

// "" if `chosen` is a spanning arborescence of 0..n-1 rooted at root, else why not.
std::string whyNotArborescence(int n, int root, const std::vector<WeightedArc>& arcs,
                               const std::vector<int>& chosen) {
  if (chosen.size() != static_cast<std::size_t>(n - 1)) {
    return "has " + std::to_string(chosen.size()) + " arcs, wants " + std::to_string(n - 1);
  }
  std::vector<int> parent(static_cast<std::size_t>(n), -1);
  for (int i : chosen) {
    if (i < 0 || static_cast<std::size_t>(i) >= arcs.size()) {
      return "index " + std::to_string(i) + " out of range";
    }
    const WeightedArc& a = arcs[static_cast<std::size_t>(i)];
    if (a.to == root) return "arc " + std::to_string(i) + " enters the root";
    if (a.from == a.to) return "arc " + std::to_string(i) + " is a self-loop";
    if (parent[static_cast<std::size_t>(a.to)] >= 0) {
      return "vertex " + std::to_string(a.to) + " has two parents";
    }
    parent[static_cast<std::size_t>(a.to)] = a.from;
  }
  for (int v = 0; v < n; ++v) {
    int u = v;
    for (int steps = 0; u != root; ++steps) {
      if (steps > n) return "vertex " + std::to_string(v) + " is on a cycle";
      u = parent[static_cast<std::size_t>(u)];
      if (u < 0) return "vertex " + std::to_string(v) + " has no parent";
    }
  }
  return "";
}

// Checks validity and returns the cost (NaN on failure so comparisons fail loudly).
double checkedCost(int n, int root, const std::vector<WeightedArc>& arcs) {
  auto got = minCostArborescence(n, root, arcs);
  if (!got) {
    ADD_FAILURE() << "no arborescence returned";
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::string why = whyNotArborescence(n, root, arcs, *got);
  if (!why.empty()) {
    ADD_FAILURE() << why;
    return std::numeric_limits<double>::quiet_NaN();
  }
  EXPECT_TRUE(std::is_sorted(got->begin(), got->end()));
  return arborescenceCost(arcs, *got);
}

// Minimum over every choice of one in-arc per non-root vertex that is an
// arborescence; -1 if there is none.
double bruteForce(int n, int root, const std::vector<WeightedArc>& arcs) {
  std::vector<std::vector<int>> in(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < arcs.size(); ++i) {
    if (arcs[i].from != arcs[i].to && arcs[i].to != root) {
      in[static_cast<std::size_t>(arcs[i].to)].push_back(static_cast<int>(i));
    }
  }
  std::vector<int> verts;
  for (int v = 0; v < n; ++v) {
    if (v == root) continue;
    if (in[static_cast<std::size_t>(v)].empty()) return -1.0;
    verts.push_back(v);
  }
  double best = -1.0;
  std::vector<std::size_t> pick(verts.size(), 0);
  std::vector<int> chosen(verts.size());
  for (;;) {
    for (std::size_t k = 0; k < verts.size(); ++k) {
      chosen[k] = in[static_cast<std::size_t>(verts[k])][pick[k]];
    }
    if (whyNotArborescence(n, root, arcs, chosen).empty()) {
      double c = arborescenceCost(arcs, chosen);
      if (best < 0.0 || c < best) best = c;
    }
    std::size_t k = 0;
    while (k < verts.size() && ++pick[k] == in[static_cast<std::size_t>(verts[k])].size()) {
      pick[k++] = 0;
    }
    if (k == verts.size()) break;
  }
  return best;
}

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(MinArborescence, SingleVertexNeedsNoArcs) {
  auto got = minCostArborescence(1, 0, {});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->empty());
  // Self-loops on the lone vertex change nothing.
  got = minCostArborescence(1, 0, {{0, 0, 1.0}});
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->empty());
}

TEST(MinArborescence, PathAndStarWithoutCycles) {
  std::vector<WeightedArc> arcs = {{0, 1, 1.0}, {1, 2, 1.0}, {0, 2, 5.0}};
  auto got = minCostArborescence(3, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{0, 1}));
}

TEST(MinArborescence, CycleMustBeBroken) {
  // 1 and 2 prefer each other (cost 1); the root reaches them at 10 and 3. The cycle
  // is entered at 2 (cheaper surplus 3-1=2 vs 10-1=9), so 1 keeps its arc from 2.
  std::vector<WeightedArc> arcs = {
      {0, 1, 10.0},  // 0
      {0, 2, 3.0},   // 1
      {1, 2, 1.0},   // 2
      {2, 1, 1.0},   // 3
  };
  auto got = minCostArborescence(3, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{1, 3}));
  EXPECT_DOUBLE_EQ(arborescenceCost(arcs, *got), 4.0);
}

TEST(MinArborescence, EntryArcReplacesCycleArcAtItsOriginalHead) {
  // A 3-cycle 1->2->3->1 of cost 1 each, entered cheapest at 3 from the root. The
  // chosen entry arc must displace 2->3 (the cycle arc into 3), not any other.
  std::vector<WeightedArc> arcs = {
      {1, 2, 1.0},   // 0
      {2, 3, 1.0},   // 1
      {3, 1, 1.0},   // 2
      {0, 1, 20.0},  // 3
      {0, 2, 20.0},  // 4
      {0, 3, 2.0},   // 5
  };
  auto got = minCostArborescence(4, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{0, 2, 5}));
  EXPECT_DOUBLE_EQ(arborescenceCost(arcs, *got), 4.0);
}

TEST(MinArborescence, NestedCycles) {
  // Round 1: 1<->2 and 3<->4 are cycles. Contracted, {1,2} and {3,4} prefer each
  // other over the expensive root arcs, forming a cycle of cycles in round 2.
  std::vector<WeightedArc> arcs = {
      {1, 2, 1.0},    // 0
      {2, 1, 1.0},    // 1
      {3, 4, 1.0},    // 2
      {4, 3, 1.0},    // 3
      {2, 3, 2.0},    // 4: {1,2} -> 3, reduced 1
      {4, 1, 2.0},    // 5: {3,4} -> 1, reduced 1
      {0, 1, 100.0},  // 6: reduced 99
      {0, 4, 50.0},   // 7: reduced 49
  };
  // Best: the root enters {3,4} at 4 (50) so 4->3 stays (1); {3,4} enters {1,2} at 1
  // by 4->1 (2) so 1->2 stays (1). Total 54.
  auto got = minCostArborescence(5, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{0, 3, 5, 7}));
  EXPECT_DOUBLE_EQ(arborescenceCost(arcs, *got), 54.0);
  EXPECT_DOUBLE_EQ(bruteForce(5, 0, arcs), 54.0);
}

TEST(MinArborescence, ParallelArcsPickCheapestThenLowestIndex) {
  std::vector<WeightedArc> arcs = {
      {0, 1, 5.0},  // 0
      {0, 1, 2.0},  // 1
      {0, 1, 2.0},  // 2: ties with 1, loses on index
      {1, 2, 3.0},  // 3
      {1, 2, 3.0},  // 4
      {0, 2, 7.0},  // 5
  };
  auto got = minCostArborescence(3, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{1, 3}));
}

TEST(MinArborescence, ParallelArcsIntoAContractedCycle) {
  // Two parallel entries into the cycle {1,2}; the cheaper one (not the first) wins.
  std::vector<WeightedArc> arcs = {
      {1, 2, 1.0},  // 0
      {2, 1, 1.0},  // 1
      {0, 1, 9.0},  // 2
      {0, 1, 4.0},  // 3
      {0, 2, 6.0},  // 4
  };
  auto got = minCostArborescence(3, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{0, 3}));
}

TEST(MinArborescence, UnreachableVertexGivesNullopt) {
  // 3 has no arcs in at all.
  EXPECT_FALSE(minCostArborescence(4, 0, {{0, 1, 1.0}, {1, 2, 1.0}, {3, 2, 1.0}}).has_value());
  // 2 and 3 only reach each other: every vertex has an arc in, but the set is closed.
  EXPECT_FALSE(
      minCostArborescence(4, 0, {{0, 1, 1.0}, {2, 3, 1.0}, {3, 2, 1.0}, {2, 1, 1.0}}).has_value());
  // Only a self-loop enters 1.
  EXPECT_FALSE(minCostArborescence(2, 0, {{1, 1, 0.0}}).has_value());
  // No arcs, two vertices.
  EXPECT_FALSE(minCostArborescence(2, 1, {}).has_value());
}

TEST(MinArborescence, ArcsIntoRootAndSelfLoopsAreIgnored) {
  std::vector<WeightedArc> arcs = {
      {1, 0, 0.0},  // 0: into root
      {2, 0, 0.0},  // 1: into root
      {1, 1, 0.0},  // 2: self-loop
      {2, 1, 1.0},  // 3
      {0, 2, 4.0},  // 4
      {0, 1, 8.0},  // 5
      {1, 2, 1.0},  // 6
  };
  auto got = minCostArborescence(3, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{3, 4}));
  EXPECT_DOUBLE_EQ(arborescenceCost(arcs, *got), 5.0);
}

TEST(MinArborescence, NonZeroRoot) {
  std::vector<WeightedArc> arcs = {
      {2, 0, 3.0}, {2, 1, 4.0}, {0, 1, 1.0}, {1, 0, 1.0}, {0, 2, 0.0}, {1, 2, 0.0},
  };
  auto got = minCostArborescence(3, 2, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{0, 2}));
}

TEST(MinArborescence, RejectsMalformedInput) {
  EXPECT_THROW(minCostArborescence(0, 0, {}), blink::Error);
  EXPECT_THROW(minCostArborescence(2, 2, {}), blink::Error);
  EXPECT_THROW(minCostArborescence(2, 0, {{0, 2, 1.0}}), blink::Error);
  EXPECT_THROW(minCostArborescence(2, 0, {{-1, 1, 1.0}}), blink::Error);
  EXPECT_THROW(minCostArborescence(2, 0, {{0, 1, -1.0}}), blink::Error);
  EXPECT_THROW(minCostArborescence(2, 0, {{0, 1, std::numeric_limits<double>::infinity()}}),
               blink::Error);
  EXPECT_THROW(minCostArborescence(2, 0, {{0, 1, std::numeric_limits<double>::quiet_NaN()}}),
               blink::Error);
  try {
    minCostArborescence(2, 0, {{0, 1, -1.0}});
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
  }
}

std::vector<WeightedArc> randomDigraph(std::mt19937& rng, int n, int num_arcs, bool integer_costs) {
  std::uniform_int_distribution<int> vertex(0, n - 1);
  std::uniform_int_distribution<int> small(0, 4);
  std::uniform_real_distribution<double> real(0.0, 10.0);
  std::vector<WeightedArc> arcs;
  for (int i = 0; i < num_arcs; ++i) {
    // Integer costs make ties (and zero-cost arcs) common, which is where tie-breaking
    // and zero reduced costs get exercised.
    arcs.push_back({vertex(rng), vertex(rng), integer_costs ? small(rng) : real(rng)});
  }
  return arcs;
}

TEST(MinArborescence, MatchesBruteForceOnSmallRandomDigraphs) {
  std::mt19937 rng(20240611u);
  int with_tree = 0;
  int without_tree = 0;
  for (int trial = 0; trial < 600; ++trial) {
    int n = 1 + trial % 7;
    std::uniform_int_distribution<int> arc_count(0, 3 * n);
    int m = arc_count(rng);
    std::uniform_int_distribution<int> vertex(0, n - 1);
    int root = vertex(rng);
    auto arcs = randomDigraph(rng, n, m, trial % 2 == 0);
    SCOPED_TRACE("trial " + std::to_string(trial) + " n=" + std::to_string(n) +
                 " m=" + std::to_string(m) + " root=" + std::to_string(root));

    double expected = bruteForce(n, root, arcs);
    auto got = minCostArborescence(n, root, arcs);
    if (expected < 0.0) {
      EXPECT_FALSE(got.has_value());
      ++without_tree;
      continue;
    }
    ++with_tree;
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(whyNotArborescence(n, root, arcs, *got), "");
    EXPECT_NEAR(arborescenceCost(arcs, *got), expected, 1e-9);
  }
  // The generator must actually produce both kinds, or the test proves little.
  EXPECT_GT(with_tree, 200);
  EXPECT_GT(without_tree, 20);
}

TEST(MinArborescence, MatchesBruteForceOnDenseDigraphsWithCycles) {
  // Every pair connected both ways, so cheapest in-arcs form cycles almost always.
  std::mt19937 rng(7u);
  std::uniform_real_distribution<double> real(0.0, 1.0);
  std::uniform_int_distribution<int> small(0, 2);
  for (int trial = 0; trial < 100; ++trial) {
    int n = 4 + trial % 3;
    std::vector<WeightedArc> arcs;
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) {
        if (u == v) continue;
        // The root's arcs are expensive, so the optimum has to enter cycles.
        double base = (u == 0) ? 5.0 : 0.0;
        arcs.push_back({u, v, base + (trial % 2 ? real(rng) : small(rng))});
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    EXPECT_NEAR(checkedCost(n, 0, arcs), bruteForce(n, 0, arcs), 1e-9);
  }
}

TEST(MinArborescence, DeterministicForEqualInputs) {
  std::mt19937 rng(99u);
  for (int trial = 0; trial < 50; ++trial) {
    auto arcs = randomDigraph(rng, 30, 300, trial % 2 == 0);
    for (int v = 1; v < 30; ++v) arcs.push_back({0, v, 10.0});  // all reachable
    auto first = minCostArborescence(30, 0, arcs);
    auto copy = arcs;
    auto second = minCostArborescence(30, 0, copy);
    ASSERT_TRUE(first.has_value());
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(*first, *second);
  }
}

TEST(MinArborescence, AllEqualCostsPreferLowestIndices) {
  // Complete digraph on 4 vertices, all costs equal: every vertex takes its
  // lowest-index in-arc, which for 1..3 is the arc from 0 (listed first per head).
  std::vector<WeightedArc> arcs;
  for (int u = 0; u < 4; ++u) {
    for (int v = 0; v < 4; ++v) {
      if (u != v) arcs.push_back({u, v, 1.0});
    }
  }
  auto got = minCostArborescence(4, 0, arcs);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<int>{0, 1, 2}));
}

TEST(MinArborescence, HundredVerticesTwoThousandArcs) {
  // Not timed: a size the packer uses, checked for validity and against a cheaper
  // bound (the sum of cheapest in-arcs is a lower bound on any arborescence).
  std::mt19937 rng(12345u);
  const int n = 100;
  auto arcs = randomDigraph(rng, n, 2000 - (n - 1), false);
  for (int v = 1; v < n; ++v) arcs.push_back({v - 1, v, 50.0});  // a costly spine
  ASSERT_EQ(arcs.size(), 2000u);
  double cost = checkedCost(n, 0, arcs);
  std::vector<double> cheapest(static_cast<std::size_t>(n), std::numeric_limits<double>::max());
  for (const WeightedArc& a : arcs) {
    if (a.to != 0 && a.from != a.to) {
      cheapest[static_cast<std::size_t>(a.to)] =
          std::min(cheapest[static_cast<std::size_t>(a.to)], a.cost);
    }
  }
  double lower = 0.0;
  for (int v = 1; v < n; ++v) lower += cheapest[static_cast<std::size_t>(v)];
  EXPECT_GE(cost + 1e-9, lower);
  EXPECT_LT(cost, 50.0 * (n - 1));  // far better than the spine
  // And the same answer again, to be sure nothing depends on hidden state.
  EXPECT_EQ(sorted(*minCostArborescence(n, 0, arcs)), *minCostArborescence(n, 0, arcs));
}

}  // namespace
