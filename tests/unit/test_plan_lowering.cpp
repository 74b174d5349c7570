// Every plan Blink builds is proven right by the symbolic executor: tree plans for
// every collective on every zoo machine and every DGX-1 allocation, and the ring
// and double-binary-tree baselines.
#include <gtest/gtest.h>

#include "plan/baselines.hpp"
#include "plan/lower_trees.hpp"
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

TEST(PlanLowering, ChunkRuleBalancesFillAndOverhead) {
  // 1 GiB at 25 GB/s over depth 4 with 10 us per step: sqrt(S a B / (d-1)).
  const std::uint64_t c = plan::chooseChunkBytes(1ull << 30, 4, 10e-6, 25.0, 4);
  EXPECT_NEAR(static_cast<double>(c), std::sqrt((1ull << 30) * 10e-6 * 25e9 / 3), 4.0);
  EXPECT_EQ(c % 4, 0u);
  EXPECT_EQ(plan::chooseChunkBytes(4096, 1, 10e-6, 25.0, 4), 4096u);  // a single hop: no pipeline
  EXPECT_EQ(plan::chooseChunkBytes(8, 4, 1.0, 25.0, 4), 8u);          // never more than the data
}

}  // namespace
