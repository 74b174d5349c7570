// Graph strength (maximum fractional packing of undirected spanning trees): closed
// forms, the DGX-1V NVLink graph, and a brute-force oracle over all set partitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "treegen/strength.hpp"

namespace {

using blink::treegen::graphStrength;
using blink::treegen::partitionStrengthValue;
using blink::treegen::StrengthResult;
using blink::treegen::UndirectedEdge;

// Calls fn(cls) for every set partition of 0..n-1 (restricted growth strings).
template <typename Fn>
void forEachPartition(int n, Fn&& fn) {
  std::vector<int> cls(static_cast<std::size_t>(n), 0);
  std::vector<int> max_before(static_cast<std::size_t>(n), 1);  // 1 + max of cls[0..i-1]
  max_before[0] = 0;
  while (true) {
    fn(cls);
    int i = n - 1;
    while (i > 0 && cls[static_cast<std::size_t>(i)] >= max_before[static_cast<std::size_t>(i)]) {
      --i;
    }
    if (i == 0) return;
    ++cls[static_cast<std::size_t>(i)];
    for (int j = i + 1; j < n; ++j) {
      const auto uj = static_cast<std::size_t>(j);
      max_before[uj] = std::max(max_before[uj - 1], cls[uj - 1] + 1);
      cls[uj] = 0;
    }
  }
}

double bruteForceStrength(int n, const std::vector<UndirectedEdge>& edges) {
  double best = std::numeric_limits<double>::infinity();
  forEachPartition(n, [&](const std::vector<int>& cls) {
    best = std::min(best, partitionStrengthValue(n, edges, cls));
  });
  return best;
}

void expectRel(double actual, double expected, double rel = 1e-9) {
  EXPECT_NEAR(actual, expected, rel * std::max(1.0, std::abs(expected)))
      << "actual " << actual << " expected " << expected;
}

// The result's partition has >= 2 classes and achieves the reported strength.
void expectCertified(int n, const std::vector<UndirectedEdge>& edges, const StrengthResult& r) {
  ASSERT_EQ(r.partition_class.size(), static_cast<std::size_t>(n));
  expectRel(partitionStrengthValue(n, edges, r.partition_class), r.strength);
}

std::vector<UndirectedEdge> complete(int n, double c) {
  std::vector<UndirectedEdge> e;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) e.push_back({a, b, c});
  }
  return e;
}

TEST(ForEachPartition, CountsBellNumbers) {
  const int bell[] = {1, 1, 2, 5, 15, 52, 203, 877, 4140};
  for (int n = 1; n <= 8; ++n) {
    int count = 0;
    forEachPartition(n, [&](const std::vector<int>&) { ++count; });
    EXPECT_EQ(count, bell[n]) << n;
  }
}

TEST(Strength, TwoVertices) {
  const std::vector<UndirectedEdge> e{{0, 1, 3.5}};
  const StrengthResult r = graphStrength(2, e);
  expectRel(r.strength, 3.5);
  expectCertified(2, e, r);
  EXPECT_NE(r.partition_class[0], r.partition_class[1]);
}

TEST(Strength, ParallelEdgesAddUp) {
  const std::vector<UndirectedEdge> e{{0, 1, 1.0}, {1, 0, 2.0}, {0, 0, 9.0}};
  expectRel(graphStrength(2, e).strength, 3.0);
}

TEST(Strength, Triangle) {
  const auto e = complete(3, 1.0);
  const StrengthResult r = graphStrength(3, e);
  expectRel(r.strength, 1.5);
  expectCertified(3, e, r);
}

TEST(Strength, CompleteGraphs) {
  for (int n = 2; n <= 12; ++n) {
    const auto e = complete(n, 1.0);
    const StrengthResult r = graphStrength(n, e);
    expectRel(r.strength, n / 2.0);
    expectCertified(n, e, r);
  }
}

TEST(Strength, Cycles) {
  for (int n = 3; n <= 12; ++n) {
    std::vector<UndirectedEdge> e;
    for (int i = 0; i < n; ++i) e.push_back({i, (i + 1) % n, 1.0});
    const StrengthResult r = graphStrength(n, e);
    expectRel(r.strength, n / (n - 1.0));
    expectCertified(n, e, r);
  }
}

// A tree's strength is its lightest edge: cutting it gives c_min / 1, and any
// partition into p classes is crossed by >= p - 1 tree edges (contracting the classes
// leaves a connected graph on p nodes), each of capacity >= c_min.
TEST(Strength, TreeIsItsLightestEdge) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cap(0.5, 10.0);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 2 + trial;
    std::vector<UndirectedEdge> e;
    double lightest = std::numeric_limits<double>::infinity();
    for (int v = 1; v < n; ++v) {
      const int parent = std::uniform_int_distribution<int>(0, v - 1)(rng);
      const double c = cap(rng);
      lightest = std::min(lightest, c);
      e.push_back({parent, v, c});
    }
    const StrengthResult r = graphStrength(n, e);
    expectRel(r.strength, lightest);
    expectCertified(n, e, r);
  }
}

// The tolerance must be relative to the answer, not to the total capacity.
TEST(Strength, WeakBridgeBetweenHeavyCliques) {
  std::vector<UndirectedEdge> e;
  for (int q = 0; q < 10; q += 5) {
    for (int a = q; a < q + 5; ++a) {
      for (int b = a + 1; b < q + 5; ++b) e.push_back({a, b, 1e6});
    }
  }
  e.push_back({4, 5, 1e-6});
  const StrengthResult r = graphStrength(10, e);
  expectRel(r.strength, 1e-6);
  expectCertified(10, e, r);
  EXPECT_EQ(r.partition_class, (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
}

TEST(Strength, DisconnectedIsZeroWithComponents) {
  // {0,1,2} triangle, {3,4} edge, {5} isolated.
  const std::vector<UndirectedEdge> e{{0, 1, 1.0}, {1, 2, 1.0}, {0, 2, 1.0}, {3, 4, 2.0}};
  const StrengthResult r = graphStrength(6, e);
  EXPECT_EQ(r.strength, 0.0);
  EXPECT_EQ(r.partition_class, (std::vector<int>{0, 0, 0, 1, 1, 2}));
  EXPECT_EQ(graphStrength(3, {}).strength, 0.0);
  EXPECT_EQ(graphStrength(3, {}).partition_class, (std::vector<int>{0, 1, 2}));
  // Zero-capacity edges do not connect.
  EXPECT_EQ(graphStrength(2, {{0, 1, 0.0}}).strength, 0.0);
}

TEST(Strength, RejectsBadInput) {
  EXPECT_THROW(graphStrength(1, {}), std::invalid_argument);
  EXPECT_THROW(graphStrength(0, {}), std::invalid_argument);
  EXPECT_THROW(graphStrength(3, {{0, 3, 1.0}}), std::invalid_argument);
  EXPECT_THROW(graphStrength(3, {{-1, 2, 1.0}}), std::invalid_argument);
  EXPECT_THROW(graphStrength(3, {{0, 1, -1.0}}), std::invalid_argument);
  EXPECT_THROW(graphStrength(3, {{0, 1, std::numeric_limits<double>::infinity()}}),
               std::invalid_argument);
  EXPECT_THROW(graphStrength(3, {{0, 1, std::numeric_limits<double>::quiet_NaN()}}),
               std::invalid_argument);
}

// DGX-1V: two complete quads {0..3}, {4..7} plus i -- i+4; 25 GB/s per NVLink, two
// links (50) on 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7. Every GPU has 150 GB/s, and
// the strength is 600/7, attained by the singletons.
TEST(Strength, Dgx1V) {
  std::vector<UndirectedEdge> e;
  auto cap = [](int a, int b) {
    const int pairs[][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}};
    for (const auto& p : pairs) {
      if ((p[0] == a && p[1] == b) || (p[0] == b && p[1] == a)) return 50.0;
    }
    return 25.0;
  };
  for (int q = 0; q < 8; q += 4) {
    for (int a = q; a < q + 4; ++a) {
      for (int b = a + 1; b < q + 4; ++b) e.push_back({a, b, cap(a, b)});
    }
  }
  for (int i = 0; i < 4; ++i) e.push_back({i, i + 4, cap(i, i + 4)});
  const StrengthResult r = graphStrength(8, e);
  const double brute = bruteForceStrength(8, e);
  expectRel(brute, 600.0 / 7.0, 1e-12);
  expectRel(r.strength, brute);
  expectCertified(8, e, r);
}

// Random graphs; every other one is clustered (heavy edges inside hidden clusters,
// light ones between), so that optimal partitions are often neither the singletons
// nor a single cut-off vertex.
std::vector<UndirectedEdge> randomGraph(std::mt19937& rng, int n, int trial) {
  const double density = std::uniform_real_distribution<double>(0.2, 1.0)(rng);
  const bool integral = trial % 3 == 0;  // ties are common with small integers
  const bool clustered = trial % 2 == 1;
  const int clusters = std::uniform_int_distribution<int>(1, n)(rng);
  std::vector<int> cluster(static_cast<std::size_t>(n));
  for (int& c : cluster) c = std::uniform_int_distribution<int>(0, clusters - 1)(rng);
  std::vector<UndirectedEdge> e;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) > density) continue;
      double c = integral ? std::uniform_int_distribution<int>(1, 4)(rng)
                          : std::uniform_real_distribution<double>(0.01, 100.0)(rng);
      if (trial % 7 == 2) c = std::pow(10.0, std::uniform_real_distribution<double>(-6, 6)(rng));
      if (clustered &&
          cluster[static_cast<std::size_t>(a)] == cluster[static_cast<std::size_t>(b)]) {
        c *= 10.0;
      }
      e.push_back({a, b, c});
      if (trial % 5 == 0) e.push_back({b, a, 1.0});  // a parallel edge
    }
  }
  return e;
}

int numClasses(const std::vector<int>& cls) {
  std::vector<int> ids = cls;
  std::sort(ids.begin(), ids.end());
  return static_cast<int>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

TEST(Strength, MatchesBruteForceOnRandomGraphs) {
  std::mt19937 rng(20240611);
  int disconnected = 0;
  int intermediate = 0;  // optimal partitions with 2 < |P| < n
  for (int trial = 0; trial < 600; ++trial) {
    const int n = std::uniform_int_distribution<int>(2, 8)(rng);
    const std::vector<UndirectedEdge> e = randomGraph(rng, n, trial);
    const StrengthResult r = graphStrength(n, e);
    const double brute = bruteForceStrength(n, e);
    if (brute == 0.0) ++disconnected;
    const int parts = numClasses(r.partition_class);
    if (brute > 0.0 && parts > 2 && parts < n) ++intermediate;
    SCOPED_TRACE(testing::Message() << "trial " << trial << " n " << n);
    expectRel(r.strength, brute);
    expectCertified(n, e, r);
  }
  // The generator exercises disconnected graphs and non-trivial partitions too.
  EXPECT_GT(disconnected, 10);
  EXPECT_GT(intermediate, 30);
}

// Untimed: a 64-vertex graph of 8 hidden clusters (dense, heavy inside; sparse,
// light between) and a dense 70-vertex one. The result must be achieved by its
// partition and be no worse than the singletons, every single-vertex cut, the hidden
// clusters and many random partitions.
void checkLarge(int n, int clusters, double density_in, double density_out, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> cluster(static_cast<std::size_t>(n));
  for (int v = 0; v < n; ++v) cluster[static_cast<std::size_t>(v)] = v % clusters;
  std::vector<UndirectedEdge> e;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const bool same =
          cluster[static_cast<std::size_t>(a)] == cluster[static_cast<std::size_t>(b)];
      if (unit(rng) < (same ? density_in : density_out)) {
        e.push_back(
            {a, b, (same ? 20.0 : 1.0) * std::uniform_real_distribution<double>(1.0, 5.0)(rng)});
      }
    }
  }
  const StrengthResult r = graphStrength(n, e);
  ASSERT_GT(r.strength, 0.0);
  expectCertified(n, e, r);
  auto expectNoBetter = [&](const std::vector<int>& cls) {
    EXPECT_LE(r.strength, partitionStrengthValue(n, e, cls) * (1 + 1e-12));
  };
  std::vector<int> singletons(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) singletons[static_cast<std::size_t>(i)] = i;
  expectNoBetter(singletons);
  expectNoBetter(cluster);
  for (int v = 0; v < n; ++v) {
    std::vector<int> cls(static_cast<std::size_t>(n), 0);
    cls[static_cast<std::size_t>(v)] = 1;
    expectNoBetter(cls);
  }
  for (int trial = 0; trial < 200; ++trial) {
    const int k = std::uniform_int_distribution<int>(2, n)(rng);
    std::vector<int> cls(static_cast<std::size_t>(n));
    for (int& c : cls) c = std::uniform_int_distribution<int>(0, k - 1)(rng);
    expectNoBetter(cls);
    // Random coarsenings of the hidden clusters.
    std::vector<int> merge(static_cast<std::size_t>(clusters));
    for (int& m : merge) m = std::uniform_int_distribution<int>(0, clusters - 1)(rng);
    for (int v = 0; v < n; ++v) {
      cls[static_cast<std::size_t>(v)] =
          merge[static_cast<std::size_t>(cluster[static_cast<std::size_t>(v)])];
    }
    expectNoBetter(cls);
  }
}

TEST(Strength, LargeClusteredGraphIsCertified) {
  checkLarge(64, 8, 0.6, 0.05, 99);
}

TEST(Strength, LargeDenseGraphIsCertified) {
  checkLarge(70, 5, 1.0, 0.5, 7);
}

}  // namespace
