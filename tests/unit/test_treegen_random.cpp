// Tree generation on a few hundred random graphs (switches, missing, asymmetric and
// one-way links, disconnected cases) against the oracles of treegen_oracle.hpp, the
// regressions they found, determinism, and the errors tree generation reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "topology/topology.hpp"
#include "topology/zoo.hpp"
#include "treegen/tree_set.hpp"
#include "treegen/treegen.hpp"
#include "treegen_oracle.hpp"

namespace {

using namespace treegen_oracle;  // NOLINT(google-build-using-namespace): the suite's own helpers

// ---- random graphs ---------------------------------------------------------------

struct RandomCase {
  Topology topology;
  int root = 0;
  Kinds links;
  bool duplex = true;  // every link has its reverse with the same capacity
};

RandomCase randomCase(std::mt19937& rng, int index) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const double speeds[] = {10.0, 12.5, 20.0, 25.0};

  RandomCase c;
  c.topology.setName("random" + std::to_string(index));
  Topology& t = c.topology;
  const int gpus = pick(3, 7);
  const int switches = std::min(pick(0, 3), 10 - gpus);
  std::vector<Vertex> v;
  for (int i = 0; i < gpus; ++i) {
    Device d = blink::topo::makeDevice("gpu" + std::to_string(i), DeviceKind::Gpu);
    d.gpu_index = i;
    v.push_back(t.addDevice(d));
  }
  for (int i = 0; i < switches; ++i) {
    DeviceKind kind = chance(0.5) ? DeviceKind::PciSwitch : DeviceKind::NvSwitch;
    v.push_back(t.addDevice(blink::topo::makeDevice("sw" + std::to_string(i), kind)));
  }
  const double density = std::array<double, 3>{0.3, 0.55, 0.85}[pick(0, 2)];
  const bool asymmetric = index % 8 == 5;
  c.duplex = !asymmetric;  // some one-way or uneven cables
  const int isolated = index % 10 == 3 ? pick(0, gpus - 1) : -1;
  const int n = gpus + switches;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (a == isolated || b == isolated || !chance(density)) continue;
      Link l;
      if (a >= gpus || b >= gpus) {
        int s = a >= gpus ? a : b;
        l.kind = t.device(v[s]).kind == DeviceKind::NvSwitch ? LinkKind::NvLink : LinkKind::Pcie;
      } else {
        l.kind = chance(0.6) ? LinkKind::NvLink : LinkKind::Pcie;
      }
      l.gbps = speeds[pick(0, 3)];
      l.multiplicity = pick(1, 3);
      if (!asymmetric || chance(0.4)) {
        t.addDuplexLink(v[a], v[b], l);
      } else if (chance(0.5)) {
        if (chance(0.5))
          t.addLink(v[a], v[b], l);
        else
          t.addLink(v[b], v[a], l);
      } else {
        t.addLink(v[a], v[b], l);
        l.gbps = speeds[pick(0, 3)];
        l.multiplicity = pick(1, 3);
        t.addLink(v[b], v[a], l);
      }
    }
  }
  c.root = pick(0, gpus - 1);
  if (index % 4 == 3) c.links = {LinkKind::NvLink};
  return c;
}

// Exact packing: valid, rate == bound unless a switch stayed, rate 0 with a note
// when the bound is 0.
void checkExactOnRandom(const Topology& t, const TreeSet& set, double oracle, const Kinds& links,
                        bool broadcast) {
  EXPECT_EQ(whyInvalid(t, set, links, broadcast), "") << "exact " << set.collective;
  EXPECT_TRUE(nearlyEqual(set.bound_gbps, oracle)) << set.bound_gbps << " vs oracle " << oracle;
  if (oracle == 0.0) {
    EXPECT_EQ(set.rate_gbps, 0.0);
    EXPECT_EQ(set.bound_gbps, 0.0);
    EXPECT_FALSE(set.notes.empty());
  } else if (!reportsUnsplitSwitch(set)) {
    EXPECT_TRUE(nearlyEqual(set.rate_gbps, set.bound_gbps))
        << "rate " << set.rate_gbps << " of " << set.bound_gbps << " " << notesOf(set);
  } else {
    EXPECT_LE(set.rate_gbps, set.bound_gbps * (1.0 + 1e-9));
  }
}

void checkMwuOnRandom(const Topology& t, const TreeSet& set, const Kinds& links, bool broadcast) {
  EXPECT_EQ(whyInvalid(t, set, links, broadcast), "") << "mwu " << set.collective;
  if (set.bound_gbps > 0.0 && !reportsUnsplitSwitch(set)) {
    EXPECT_GE(set.rate_gbps, 0.85 * set.bound_gbps) << notesOf(set);
  }
}

constexpr unsigned kRandomSeed = 20240611;
constexpr int kRandomCases = 300;

TEST(TreegenRandom, BoundsMatchOracleAndPackingsAreValid) {
  std::mt19937 rng(kRandomSeed);
  int disconnected = 0, with_switches = 0, unsplit = 0;
  for (int i = 0; i < kRandomCases; ++i) {
    RandomCase c = randomCase(rng, i);
    const Topology& t = c.topology;
    SCOPED_TRACE("case " + std::to_string(i) + " root " + std::to_string(c.root) + " links " +
                 kindsName(c.links) + " " + describe(t));
    const double bcast = oracleBroadcastBound(t, c.root, c.links);
    const double gather = oracleAllGatherBound(t, c.links);
    disconnected += bcast == 0.0 || gather == 0.0;
    with_switches += t.numDevices() > t.gpus().size();
    double got = -1.0;
    EXPECT_NO_THROW(got = blink::treegen::broadcastBoundGbps(t, c.root, c.links));
    EXPECT_TRUE(nearlyEqual(got, bcast)) << "broadcast bound " << got << ", oracle " << bcast;
    EXPECT_NO_THROW(got = blink::treegen::allGatherBoundGbps(t, c.links));
    EXPECT_TRUE(nearlyEqual(got, gather)) << "allgather bound " << got << ", oracle " << gather;

    TreeSet set;
    EXPECT_NO_THROW(set = blink::treegen::packBroadcast(t, c.root, exact(c.links)));
    checkExactOnRandom(t, set, bcast, c.links, true);
    unsplit += reportsUnsplitSwitch(set);
    if (c.duplex) {
      EXPECT_FALSE(reportsUnsplitSwitch(set)) << notesOf(set);
    }
    set = {};
    EXPECT_NO_THROW(set = blink::treegen::packAllGather(t, exact(c.links)));
    checkExactOnRandom(t, set, gather, c.links, false);
    unsplit += reportsUnsplitSwitch(set);
    // Duplex graphs are Eulerian digraphs: every switch splits off completely.
    if (c.duplex) {
      EXPECT_FALSE(reportsUnsplitSwitch(set)) << notesOf(set);
    }

    set = {};
    EXPECT_NO_THROW(set = blink::treegen::packBroadcast(t, c.root, mwu(0.1, c.links)));
    checkMwuOnRandom(t, set, c.links, true);
    set = {};
    EXPECT_NO_THROW(set = blink::treegen::packAllGather(t, mwu(0.1, c.links)));
    checkMwuOnRandom(t, set, c.links, false);
  }
  // The generator covers what it claims to.
  EXPECT_GE(disconnected, 20);
  EXPECT_GE(with_switches, 150);
  RecordProperty("unsplit_notes", unsplit);
  RecordProperty("disconnected", disconnected);
}

// A regression found by the random graphs: MWU's oracle took min-cost
// arborescences from AllGather's super-root, which could use several super-root
// arcs, so a "tree" was a forest (here: no edges at all, both GPUs fed by the
// super-root) reported as rooted at one GPU.
TEST(TreegenMwu, AllGatherTreesHaveOneRootEach) {
  Topology t("two-gpus-one-pcie-switch");
  Vertex sw = t.addDevice(blink::topo::makeDevice("sw0", DeviceKind::PciSwitch));
  for (int i = 0; i < 2; ++i) {
    Device d = blink::topo::makeDevice("gpu" + std::to_string(i), DeviceKind::Gpu);
    d.gpu_index = i;
    t.addDuplexLink(t.addDevice(d), sw, Link{LinkKind::Pcie, 10.0, 1, 0.0, ""});
  }
  checkAllGather(t, exact(), 1.0);
  checkAllGather(t, mwu(0.1), 0.9);
}

// ---- determinism and errors -------------------------------------------------------

void expectSameTrees(const TreeSet& a, const TreeSet& b) {
  EXPECT_EQ(a.rate_gbps, b.rate_gbps);
  EXPECT_EQ(a.bound_gbps, b.bound_gbps);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.trees.size(), b.trees.size());
  for (std::size_t k = 0; k < a.trees.size(); ++k) {
    EXPECT_EQ(a.trees[k].root_gpu, b.trees[k].root_gpu) << "tree " << k;
    EXPECT_EQ(a.trees[k].weight_gbps, b.trees[k].weight_gbps) << "tree " << k;
    ASSERT_EQ(a.trees[k].edges.size(), b.trees[k].edges.size()) << "tree " << k;
    for (std::size_t i = 0; i < a.trees[k].edges.size(); ++i) {
      EXPECT_EQ(a.trees[k].edges[i].from, b.trees[k].edges[i].from);
      EXPECT_EQ(a.trees[k].edges[i].to, b.trees[k].edges[i].to);
      EXPECT_EQ(a.trees[k].edges[i].route, b.trees[k].edges[i].route);
    }
  }
}

TEST(TreegenDeterminism, SameTopologySameTrees) {
  std::mt19937 rng(7);
  std::vector<std::pair<Topology, Topology>> pairs;
  // Built twice from scratch, so nothing is shared between the two packings.
  pairs.emplace_back(
      blink::topo::makeZooTopology("dgx1-v100", kTable).restrictToGpus({0, 1, 2, 4}),
      blink::topo::makeZooTopology("dgx1-v100", kTable).restrictToGpus({0, 1, 2, 4}));
  pairs.emplace_back(blink::topo::makeZooTopology("dgx-a100", kTable),
                     blink::topo::makeZooTopology("dgx-a100", kTable));
  for (int i = 0; i < 4; ++i) {
    std::mt19937 again = rng;
    RandomCase a = randomCase(rng, i * 8 + 1), b = randomCase(again, i * 8 + 1);
    pairs.emplace_back(a.topology, b.topology);
  }
  for (const auto& [a, b] : pairs) {
    SCOPED_TRACE(a.name());
    for (const PackOptions& o : {exact(), mwu(0.1)}) {
      expectSameTrees(blink::treegen::packBroadcast(a, 0, o),
                      blink::treegen::packBroadcast(b, 0, o));
      expectSameTrees(blink::treegen::packAllGather(a, o), blink::treegen::packAllGather(b, o));
    }
  }
}

template <typename Body>
void expectInvalidArgument(Body&& body, const std::string& what) {
  try {
    body();
    ADD_FAILURE() << what << ": no exception";
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidArgument) << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a blink::Error: " << e.what();
  }
}

TEST(TreegenErrors, RootThatIsNoGpuOfTheTopology) {
  Topology t = blink::topo::makeZooTopology("dgx1-v100", kTable);
  Topology view = t.restrictToGpus({0, 1, 2, 4});
  for (const PackOptions& o : {exact(), mwu(0.1)}) {
    expectInvalidArgument([&] { blink::treegen::packBroadcast(t, 8, o); }, "root 8");
    expectInvalidArgument([&] { blink::treegen::packBroadcast(t, -1, o); }, "root -1");
    expectInvalidArgument([&] { blink::treegen::packBroadcast(view, 3, o); }, "root 3 of a view");
  }
  expectInvalidArgument([&] { blink::treegen::broadcastBoundGbps(view, 5, {}); },
                        "bound from root 5 of a view");
}

TEST(TreegenErrors, MwuEpsilonOutsideTheOpenUnitInterval) {
  Topology t = blink::topo::makeZooTopology("dgx1-v100", kTable);
  for (double eps : {0.0, 1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    const std::string what = "epsilon " + std::to_string(eps);
    expectInvalidArgument([&] { blink::treegen::packBroadcast(t, 0, mwu(eps)); },
                          "broadcast, " + what);
    expectInvalidArgument([&] { blink::treegen::packAllGather(t, mwu(eps)); },
                          "allgather, " + what);
  }
  // Exact packing does not read epsilon.
  PackOptions o = exact();
  o.epsilon = 5.0;
  EXPECT_NO_THROW(blink::treegen::packBroadcast(t, 0, o));
}

}  // namespace
