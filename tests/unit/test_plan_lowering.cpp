// Every plan Blink builds is proven right by the symbolic executor: tree plans for
// every collective on every zoo machine and every DGX-1 allocation (also with the
// data split by other weights than the packed ones), and the ring and
// double-binary-tree baselines. And what the lowering does for speed, on the
// simulator: channel shares let trees of unequal weight reach the bound where they
// share a link, and two staggered channels hide a deep tree's per-step latency.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gpu_topologies.hpp"
#include "plan/baselines.hpp"
#include "plan/lower_trees.hpp"
#include "plan/simulator.hpp"
#include "plan/symbolic_executor.hpp"
#include "topology/zoo.hpp"
#include "treegen/treegen.hpp"

namespace {

using namespace blink;
using plan::Collective;

const Collective kAll[] = {Collective::Broadcast, Collective::Reduce, Collective::AllGather,
                           Collective::ReduceScatter, Collective::AllReduce};

// Small buffers with small chunks: many chunks per tree, every code path exercised.
plan::LowerOptions smallChunks() {
  plan::LowerOptions o;
  o.element_size = 4;
  o.chunk_bytes = 64;
  return o;
}

plan::Plan treePlan(Collective c, const topo::Topology& t, std::uint64_t bytes,
                    const plan::LowerOptions& o, bool reduce_broadcast_shape = false) {
  treegen::PackOptions options;
  const int root = t.device(t.gpus()[0]).gpu_index;
  switch (c) {
    case Collective::Broadcast:
      return plan::lowerBroadcast(treegen::packBroadcast(t, root, options), t, bytes, o);
    case Collective::Reduce:
      return plan::lowerReduce(treegen::packBroadcast(t, root, options), t, bytes, o);
    case Collective::AllGather:
      return plan::lowerAllGather(treegen::packAllGather(t, options), t, bytes, o);
    case Collective::ReduceScatter:
      return plan::lowerReduceScatter(treegen::packAllGather(t, options), t, bytes, o);
    case Collective::AllReduce:
      return plan::lowerAllReduce(reduce_broadcast_shape ? treegen::packBroadcast(t, root, options)
                                                         : treegen::packAllGather(t, options),
                                  t, bytes, o);
  }
  return {};
}

void expectProven(const plan::Plan& p, const std::string& what) {
  auto result = plan::runSymbolic(p);
  EXPECT_TRUE(result.ok) << what << ": " << result.error;
  if (p.bytes > 0 && p.num_ranks > 1) {
    EXPECT_GT(result.steps_run, 0u) << what;
  }
}

TEST(PlanLowering, TreePlansAreCorrectOnEveryZooMachine) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  for (const auto& m : topo::zooMachines()) {
    topo::Topology t = topo::makeZooTopology(m.name, table);
    const std::uint64_t n = t.gpus().size();
    for (std::uint64_t bytes : {std::uint64_t{0}, 4 * n, 4 * 97 * n + 4 * 3}) {
      for (Collective c : kAll) {
        // AllGather/ReduceScatter buffers are whole segments.
        std::uint64_t b = (c == Collective::AllGather || c == Collective::ReduceScatter)
                              ? bytes / (4 * n) * 4 * n
                              : bytes;
        expectProven(treePlan(c, t, b, smallChunks()),
                     m.name + " " + plan::toString(c) + " " + std::to_string(b));
      }
      expectProven(treePlan(Collective::AllReduce, t, bytes, smallChunks(), true),
                   m.name + " allreduce reduce+broadcast " + std::to_string(bytes));
    }
  }
}

TEST(PlanLowering, TreePlansAreCorrectOnEveryDgx1Allocation) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  for (const char* machine : {"dgx1-v100", "dgx1-p100"}) {
    topo::Topology full = topo::makeZooTopology(machine, table);
    for (unsigned mask = 0; mask < 256; ++mask) {
      std::vector<int> gpus;
      for (int g = 0; g < 8; ++g) {
        if (mask & (1u << g)) gpus.push_back(g);
      }
      if (gpus.size() < 2) continue;
      topo::Topology t = full.restrictToGpus(gpus);
      const std::uint64_t bytes = 4 * 41 * gpus.size();
      for (Collective c : kAll) {
        expectProven(treePlan(c, t, bytes, smallChunks()), t.name() + " " + plan::toString(c));
      }
    }
  }
}

TEST(PlanLowering, TreePlansWithOtherDataWeightsAreCorrect) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  const topo::Topology t =
      topo::makeZooTopology("dgx1-v100", table).restrictToGpus({0, 1, 2, 4, 5});
  const std::uint64_t bytes = 4 * 97 * 5;
  for (Collective c : kAll) {
    const bool multi_root =
        c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllReduce;
    const auto trees =
        multi_root ? treegen::packAllGather(t, {}) : treegen::packBroadcast(t, 0, {});
    plan::LowerOptions o = smallChunks();
    for (std::size_t i = 0; i < trees.trees.size(); ++i) {
      o.data_weights.push_back(1.0 + static_cast<double>((i * 7) % 5));  // anything positive
    }
    const auto lowered = plan::lowerTrees(c, trees, t, bytes, o);
    expectProven(lowered.plan, "data weights " + plan::toString(c));
    EXPECT_EQ(lowered.channel_tree.size(), lowered.plan.channel_shares.size());
    o.data_weights.pop_back();
    EXPECT_THROW(plan::lowerTrees(c, trees, t, bytes, o), Error);  // one weight short
    o.data_weights.push_back(0.0);
    EXPECT_THROW(plan::lowerTrees(c, trees, t, bytes, o), Error);  // not positive
  }
}

// Three GPUs: A -> B 20 GB/s, B -> C 15 GB/s, A -> C 5 GB/s (duplex). The broadcast
// bound from A is 20: a 15 GB/s tree A -> B -> C and a 5 GB/s tree A -> B, A -> C,
// sharing A -> B.
topo::Topology unequalTriangle() {
  topo::Topology t("unequal-triangle");
  const std::vector<topo::Vertex> g = test::addGpus(t, 3);
  auto link = [](double gbps) { return topo::Link{topo::LinkKind::NvLink, gbps, 1, 0.7, ""}; };
  t.addDuplexLink(g[0], g[1], link(20.0));
  t.addDuplexLink(g[1], g[2], link(15.0));
  t.addDuplexLink(g[0], g[2], link(5.0));
  return t;
}

treegen::TreeSet unequalTrees() {
  treegen::TreeSet set;
  set.collective = "broadcast";
  set.method = "by hand";
  set.root_gpu = 0;
  set.rate_gbps = set.bound_gbps = 20.0;
  auto edge = [](topo::Vertex from, topo::Vertex to) {
    return treegen::TreeEdge{from, to, {from, to}};
  };
  set.trees.push_back({0, 15.0, {edge(0, 1), edge(1, 2)}});
  set.trees.push_back({0, 5.0, {edge(0, 1), edge(0, 2)}});
  return set;
}

TEST(PlanLowering, TreesOfUnequalWeightSharingALinkReachTheBound) {
  const topo::Topology t = unequalTriangle();
  ASSERT_DOUBLE_EQ(treegen::broadcastBoundGbps(t, 0, {}), 20.0);
  const std::uint64_t bytes = 256ull << 20;
  const auto lowered = plan::lowerTrees(Collective::Broadcast, unequalTrees(), t, bytes, {});
  const plan::Plan& p = lowered.plan;
  expectProven(p, "unequal trees");
  // Each tree's channels share its packed rate between them.
  ASSERT_EQ(lowered.channel_tree.size(), p.channel_shares.size());
  double per_tree[2] = {0.0, 0.0};
  for (std::size_t c = 0; c < p.channel_shares.size(); ++c) {
    per_tree[lowered.channel_tree[c]] += p.channel_shares[c];
  }
  EXPECT_NEAR(per_tree[0], 15.0, 1e-9);
  EXPECT_NEAR(per_tree[1], 5.0, 1e-9);
  const double algbw = static_cast<double>(bytes) / plan::simulate(p, t).seconds / 1e9;
  EXPECT_GT(algbw, 0.97 * 20.0);
  EXPECT_LE(algbw, 20.0 * (1 + 1e-9));
  // With equal shares the light tree's one message takes a third of A -> B from the
  // heavy tree's two channels while it runs, so the heavy tree's B -> C, which has
  // no slack, idles meanwhile: about 0.91 of the bound.
  plan::Plan equal = p;
  equal.channel_shares.clear();
  const double equal_algbw = static_cast<double>(bytes) / plan::simulate(equal, t).seconds / 1e9;
  EXPECT_LT(equal_algbw, 0.93 * 20.0);
}

TEST(PlanLowering, DeepTreesUseTwoStaggeredChannels) {
  // A chain of 8 GPUs, 2 x 25 GB/s between neighbours: one 50 GB/s tree of depth 7.
  topo::Topology t("chain8");
  const std::vector<topo::Vertex> g = test::addGpus(t, 8);
  for (int i = 0; i + 1 < 8; ++i) {
    t.addDuplexLink(g[i], g[i + 1], topo::Link{topo::LinkKind::NvLink, 25.0, 2, 0.7, ""});
  }
  const auto trees = treegen::packBroadcast(t, 0, {});
  ASSERT_EQ(trees.trees.size(), 1u);
  const std::uint64_t bytes = 1ull << 30;
  plan::LowerOptions two;
  const plan::Plan p = plan::lowerBroadcast(trees, t, bytes, two);
  ASSERT_EQ(p.channel_shares.size(), 2u);
  EXPECT_DOUBLE_EQ(p.channel_shares[0], 25.0);
  // The second channel starts with half a chunk, so the two take turns.
  std::uint64_t first_of_channel[2] = {0, 0};
  for (const auto& s : p.ranks[0].steps) {
    auto& first = first_of_channel[s.channel];
    if (first == 0) first = s.bytes;
  }
  EXPECT_EQ(first_of_channel[0], p.chunk_bytes);
  EXPECT_LT(first_of_channel[1], p.chunk_bytes);
  plan::LowerOptions one;
  one.channels_per_tree = 1;
  const plan::Plan single = plan::lowerBroadcast(trees, t, bytes, one);
  ASSERT_EQ(single.channel_shares.size(), 1u);
  const double rate = static_cast<double>(bytes) / 50e9;
  const double with_two = rate / plan::simulate(p, t).seconds;
  const double with_one = rate / plan::simulate(single, t).seconds;
  // One channel waits out 1.7 us of latency per chunk: about 0.96 of the rate.
  EXPECT_GT(with_two, 0.98);
  EXPECT_GT(with_two, with_one + 0.02);
  // A message too small to pipeline keeps one channel.
  EXPECT_EQ(plan::lowerBroadcast(trees, t, 4096, two).channel_shares.size(), 1u);
}

TEST(PlanLowering, BaselinesAreCorrect) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  for (const char* spec : {"dgx1-v100", "dgx1-p100", "dgx-a100", "pcie-8gpu", "dgx1-v100:2"}) {
    topo::Topology t = topo::makeZooTopology(spec, table);
    for (const auto& view : {t, t.restrictToGpus({0, 1, 2, 4}), t.restrictToGpus({1, 6})}) {
      const std::uint64_t n = view.gpus().size();
      const std::uint64_t bytes = 4 * 53 * n;
      for (Collective c : kAll) {
        for (int root : {0, static_cast<int>(n) - 1}) {
          expectProven(plan::ringPlan(c, view, bytes, root, smallChunks()),
                       view.name() + " ring " + plan::toString(c));
          if (c != Collective::AllGather && c != Collective::ReduceScatter) {
            expectProven(plan::doubleBinaryTreePlan(c, view, bytes, root, smallChunks()),
                         view.name() + " tree " + plan::toString(c));
          }
        }
      }
    }
  }
}

TEST(PlanLowering, RingsUseNvLinkWhereARingExists) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  auto full = plan::findRings(topo::makeZooTopology("dgx1-v100", table));
  ASSERT_GE(full.size(), 2u);
  for (const auto& r : full) EXPECT_TRUE(r.nvlink);
  // {0,1,2,4}: GPU 4's only NVLink peer is GPU 0, so no NVLink ring exists.
  auto frag =
      plan::findRings(topo::makeZooTopology("dgx1-v100", table).restrictToGpus({0, 1, 2, 4}));
  ASSERT_EQ(frag.size(), 1u);
  EXPECT_FALSE(frag[0].nvlink);
}

TEST(PlanLowering, PlansAreDeterministicAndHashed) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  topo::Topology t = topo::makeZooTopology("dgx1-v100", table).restrictToGpus({0, 1, 2, 4});
  auto a = treePlan(Collective::AllReduce, t, 1 << 16, {});
  auto b = treePlan(Collective::AllReduce, t, 1 << 16, {});
  EXPECT_EQ(a.hash(), b.hash());
  auto c = treePlan(Collective::AllReduce, t, 1 << 17, {});
  EXPECT_NE(a.hash(), c.hash());
}

TEST(PlanLowering, AllReduceChunksForAPipelineUpAndDown) {
  // Each AllReduce chunk goes up its tree and down again: the chunk rule sees twice
  // the depth, so even a tree of depth 1 (two GPUs) is pipelined.
  const topo::Topology t =
      topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin()).restrictToGpus({0, 1});
  const auto trees = treegen::packAllGather(t, {});
  const std::uint64_t bytes = 64ull << 20;
  const plan::Plan p = plan::lowerAllReduce(trees, t, bytes, {});
  EXPECT_LT(p.chunk_bytes, bytes / 2 / 4);
  expectProven(plan::lowerAllReduce(trees, t, 4 * 2 * 301, smallChunks()), "two-GPU allreduce");
}

TEST(PlanLowering, ChunkRuleBalancesFillAndOverhead) {
  // 1 GiB at 25 GB/s over depth 4 with 10 us per step: sqrt(S a B / (d-1)).
  const std::uint64_t c = plan::chooseChunkBytes(1ull << 30, 4, 10e-6, 25.0, 4);
  EXPECT_NEAR(static_cast<double>(c), std::sqrt((1ull << 30) * 10e-6 * 25e9 / 3), 4.0);
  EXPECT_EQ(c % 4, 0u);
  EXPECT_EQ(plan::chooseChunkBytes(4096, 1, 10e-6, 25.0, 4), 4096u);  // a single hop: no pipeline
  EXPECT_EQ(plan::chooseChunkBytes(8, 4, 1.0, 25.0, 4), 8u);          // never more than the data
}

}  // namespace
