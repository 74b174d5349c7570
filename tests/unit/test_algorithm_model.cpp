// The runtime's one decision (runtime/algorithm_choice.hpp) as a pure function: the
// node algorithms' host-memory cost model against the planner's simulated plans, on
// host ranks in shared memory and on a DGX-1V, and what BLINK_ALGO does.
#include <gtest/gtest.h>

#include <string>

#include "algorithms/host_memory_model.hpp"
#include "common/error.hpp"
#include "runtime/algorithm_choice.hpp"
#include "topology/link_table.hpp"
#include "topology/zoo.hpp"

namespace {

using namespace blink;
using runtime::Algorithm;

// n host processes of one node, each joined to the node's memory by a shared-memory
// link (what a host rank's copies go through).
topo::Topology hostRanks(int n) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  topo::Topology t("host-ranks");
  const topo::Vertex mem = t.addDevice(topo::makeDevice("mem", topo::DeviceKind::Cpu));
  for (int r = 0; r < n; ++r) {
    topo::Device d = topo::makeDevice("rank" + std::to_string(r), topo::DeviceKind::Gpu);
    d.gpu_index = r;
    t.addDuplexLink(t.addDevice(d), mem, table.makeLink("shm"));
  }
  return t;
}

runtime::NodeAlgorithms bothOn() {
  runtime::NodeAlgorithms node;
  node.board_capacity = 32768;
  node.direct_min = 32768;
  return node;
}

runtime::AlgorithmChoice choose(plan::Collective c, std::uint64_t bytes, const topo::Topology& t,
                                const runtime::NodeAlgorithms& node,
                                const std::string& forced = "") {
  return runtime::chooseAlgorithm({c, bytes, c == plan::Collective::Broadcast ? 0 : -1}, t, node,
                                  runtime::ForcedAlgorithms::parse(forced), {});
}

constexpr plan::Collective kAll[] = {plan::Collective::AllReduce, plan::Collective::Broadcast,
                                     plan::Collective::AllGather, plan::Collective::ReduceScatter};

TEST(HostMemoryModel, RanksShareTheLinksTheirPathsCross) {
  // DGX-1V: two GPUs behind each PCIe switch share its link to the CPU.
  const topo::Topology dgx = topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin());
  const algorithms::HostMemoryPaths paths = algorithms::hostMemoryPaths(dgx);
  ASSERT_TRUE(paths.why_not.empty()) << paths.why_not;
  ASSERT_EQ(paths.write_bytes_per_s.size(), 8u);
  const double pcie = topo::LinkTable::builtin().makeLink("pcie3x16").capacity() * 1e9;
  for (double rate : paths.write_bytes_per_s) EXPECT_NEAR(rate, pcie / 2, pcie * 1e-9);
  for (bool half : paths.half_duplex) EXPECT_FALSE(half);
  // Host ranks copy their reads and writes with one CPU each.
  const algorithms::HostMemoryPaths host = algorithms::hostMemoryPaths(hostRanks(4));
  for (bool half : host.half_duplex) EXPECT_TRUE(half);
  // Across nodes the node algorithms do not apply.
  const topo::Topology cluster = topo::makeZooTopology("dgx1-v100:2", topo::LinkTable::builtin());
  EXPECT_EQ(algorithms::hostMemoryPaths(cluster).why_not, "the ranks span nodes");
}

TEST(AlgorithmChoice, HostRanksTakeTheBoardWhenSmallAndTheDirectPathWhenLarge) {
  for (int n : {2, 4, 8}) {
    const topo::Topology t = hostRanks(n);
    for (auto c : kAll) {
      const std::uint64_t small = 1024 * static_cast<std::uint64_t>(n);
      EXPECT_EQ(choose(c, small, t, bothOn()).algorithm, Algorithm::Board)
          << n << " ranks, " << plan::toString(c) << ": " << choose(c, small, t, bothOn()).why;
      for (std::uint64_t large : {std::uint64_t{1} << 20, std::uint64_t{64} << 20}) {
        const auto choice = choose(c, large * static_cast<std::uint64_t>(n), t, bothOn());
        // Two ranks that only copy (Broadcast, AllGather) move the same bytes either
        // way: a plan may win there by a synchronisation or two.
        const bool copies_only =
            c == plan::Collective::Broadcast || c == plan::Collective::AllGather;
        if (n == 2 && copies_only) {
          const auto direct = choose(c, large * 2, t, bothOn(), "direct");
          EXPECT_LE(direct.seconds, choice.seconds * 1.05) << choice.why;
          continue;
        }
        EXPECT_EQ(choice.algorithm, Algorithm::Direct)
            << n << " ranks, " << plan::toString(c) << ": " << choice.why;
      }
    }
  }
}

TEST(AlgorithmChoice, WithoutTheNodeAlgorithmsAPlanRuns) {
  const topo::Topology t = hostRanks(4);
  runtime::NodeAlgorithms off;
  off.board_off = "BLINK_ONE_SHOT_MAX_BYTES=0";
  off.direct_off = "BLINK_SHM_DIRECT_MIN_BYTES=0";
  for (auto c : kAll) {
    const auto choice = choose(c, 1 << 20, t, off);
    EXPECT_TRUE(runtime::runsPlan(choice.algorithm)) << choice.why;
    EXPECT_EQ(choice.plan.bytes, 1u << 20);
    EXPECT_NE(choice.why.find("board n/a: BLINK_ONE_SHOT_MAX_BYTES=0"), std::string::npos)
        << choice.why;
  }
}

TEST(AlgorithmChoice, TreesWinLargeCallsOnAFragmentWithoutAnNvlinkRing) {
  const topo::Topology frag =
      topo::makeZooTopology("dgx1-v100", topo::LinkTable::builtin()).restrictToGpus({0, 1, 2, 4});
  for (auto c : kAll) {
    const auto choice = choose(c, 4 << 20, frag, bothOn());
    EXPECT_EQ(choice.algorithm, Algorithm::Trees) << choice.why;
    EXPECT_EQ(choice.plan.collective, c);
  }
}

TEST(AlgorithmChoice, ForcedAlgorithmsWinWhereTheyApplyAndSayWhyWhereNot) {
  const topo::Topology t = hostRanks(4);
  EXPECT_EQ(choose(plan::Collective::AllReduce, 1 << 20, t, bothOn(), "ring").algorithm,
            Algorithm::Ring);
  EXPECT_EQ(choose(plan::Collective::AllReduce, 4096, t, bothOn(), "allreduce:direct").algorithm,
            Algorithm::Board)
      << "4096 bytes are below the direct path's minimum";
  const auto no_dbt = choose(plan::Collective::AllGather, 1 << 20, t, bothOn(), "dbt");
  EXPECT_EQ(no_dbt.algorithm, Algorithm::Direct);
  EXPECT_NE(no_dbt.why.find("BLINK_ALGO's dbt does not apply"), std::string::npos) << no_dbt.why;
  // Per collective: the others keep the planner's choice.
  const auto others = choose(plan::Collective::Broadcast, 1 << 20, t, bothOn(), "allreduce:ring");
  EXPECT_EQ(others.algorithm, Algorithm::Direct) << others.why;
}

TEST(AlgorithmChoice, BadSettingsAreClearErrors) {
  for (const char* bad : {"fastest", "allreduce:fastest", "allscatter:ring", "allreduce:"}) {
    try {
      (void)runtime::ForcedAlgorithms::parse(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), blinkInvalidInput);
      EXPECT_NE(std::string(e.what()).find("BLINK_ALGO"), std::string::npos) << e.what();
    }
  }
  const auto both = runtime::ForcedAlgorithms::parse("trees,bcast:direct");
  EXPECT_EQ(both.forced(plan::Collective::AllReduce), Algorithm::Trees);
  EXPECT_EQ(both.forced(plan::Collective::Broadcast), Algorithm::Direct);
}

}  // namespace
