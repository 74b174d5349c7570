// The runtime's one decision (runtime/algorithm_choice.hpp) as a pure function: the
// node algorithms' host-memory cost model against the planner's simulated plans, on
// host ranks in shared memory and on a DGX-1V, and what BLINK_ALGO does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/host_memory_model.hpp"
#include "algorithms/node_leaders.hpp"
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

// Host ranks on several nodes (ranks_per_node[k] on node k, in rank order), each node's
// memory joined by a NIC to one switch, as the job graph of host ranks has them.
topo::Topology hostRanksOnNodes(const std::vector<int>& ranks_per_node) {
  const topo::LinkTable table = topo::LinkTable::builtin();
  topo::Topology t("host-ranks-on-nodes");
  const topo::Vertex net = t.addDevice(topo::makeDevice("switch", topo::DeviceKind::NetSwitch, -1));
  int rank = 0;
  for (std::size_t k = 0; k < ranks_per_node.size(); ++k) {
    const int node = static_cast<int>(k);
    const std::string at = "n" + std::to_string(k);
    const topo::Vertex mem =
        t.addDevice(topo::makeDevice(at + "-mem", topo::DeviceKind::Cpu, node));
    const topo::Vertex nic =
        t.addDevice(topo::makeDevice(at + "-nic", topo::DeviceKind::Nic, node));
    t.addDuplexLink(mem, nic, table.makeLink("pcie3x16"));
    t.addDuplexLink(nic, net, table.makeLink("eth-100g"));
    for (int r = 0; r < ranks_per_node[k]; ++r, ++rank) {
      topo::Device d = topo::makeDevice("rank" + std::to_string(rank), topo::DeviceKind::Gpu, node);
      d.gpu_index = rank;
      t.addDuplexLink(t.addDevice(d), mem, table.makeLink("shm"));
    }
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

TEST(AlgorithmChoice, SmallCallsAcrossNodesTakeTheNodeLeaders) {
  runtime::NodeAlgorithms node;
  node.board_capacity = 32768;
  node.leaders = true;
  const plan::Collective every[] = {plan::Collective::AllReduce, plan::Collective::Broadcast,
                                    plan::Collective::Reduce, plan::Collective::AllGather,
                                    plan::Collective::ReduceScatter};
  for (const std::vector<int>& layout : {std::vector<int>{2, 2}, std::vector<int>{2, 2, 1},
                                         std::vector<int>{1, 1, 1}, std::vector<int>{1, 1}}) {
    const topo::Topology t = hostRanksOnNodes(layout);
    for (auto c : every) {
      for (std::uint64_t bytes : {std::uint64_t{8}, std::uint64_t{1024}, std::uint64_t{4096}}) {
        for (int root : {0, 1}) {
          const auto choice =
              runtime::chooseAlgorithm({c, bytes, root}, t, node, runtime::ForcedAlgorithms{}, {});
          EXPECT_EQ(choice.algorithm, Algorithm::Leaders)
              << layout.size() << " nodes, " << plan::toString(c) << ": " << choice.why;
        }
      }
      // Above the board's capacity it is no candidate, and says why.
      const auto large = runtime::chooseAlgorithm({c, 1 << 20, 0}, t, node, {}, {});
      EXPECT_NE(large.algorithm, Algorithm::Leaders);
      EXPECT_NE(large.why.find("leaders n/a: above the board's capacity"), std::string::npos)
          << large.why;
    }
  }
  // On one node the board serves small calls; leaders says why not.
  const auto one = choose(plan::Collective::AllReduce, 64, hostRanks(4), node);
  EXPECT_EQ(one.algorithm, Algorithm::Board) << one.why;
  EXPECT_NE(one.why.find("leaders n/a: the ranks share one node"), std::string::npos) << one.why;
}

// Measured at the leaders' set-up, a call's fixed cost replaces the model's where it
// is lower; the model's growth with the size stays, and the plans are priced as before.
TEST(AlgorithmChoice, TheLeadersMeasuredPriceReplacesTheModelsFixedCost) {
  runtime::NodeAlgorithms node;
  node.board_capacity = 32768;
  node.leaders = true;
  const topo::Topology t = hostRanksOnNodes({1, 1});
  const auto c = plan::Collective::ReduceScatter;
  auto leadersSeconds = [](const runtime::AlgorithmChoice& choice) {
    for (const auto& candidate : choice.candidates) {
      if (candidate.algorithm == Algorithm::Leaders) return candidate.seconds;
    }
    return -1.0;
  };
  const auto modeled_small = runtime::chooseAlgorithm({c, 16, 0}, t, node, {}, {});
  const auto modeled_large = runtime::chooseAlgorithm({c, 4096, 0}, t, node, {}, {});
  const double growth = leadersSeconds(modeled_large) - leadersSeconds(modeled_small);
  ASSERT_GT(leadersSeconds(modeled_small), 0.0);
  ASSERT_GE(growth, 0.0);

  node.leaders_measured[static_cast<std::size_t>(c)] = {2e-6, 16};
  const auto measured = runtime::chooseAlgorithm({c, 4096, 0}, t, node, {}, {});
  EXPECT_NEAR(leadersSeconds(measured), 2e-6 + growth, 1e-12) << measured.why;
  EXPECT_EQ(measured.algorithm, Algorithm::Leaders) << measured.why;
  EXPECT_NE(measured.why.find("leaders measured 2 us at 16 bytes at set-up"), std::string::npos)
      << measured.why;
  // Measured above the model (a slow or loaded machine, which the plans' model does
  // not see either): the model's price, as if unmeasured, and the plans' untouched.
  node.leaders_measured[static_cast<std::size_t>(c)] = {1.0, 16};
  const auto slow = runtime::chooseAlgorithm({c, 4096, 0}, t, node, {}, {});
  EXPECT_EQ(slow.algorithm, modeled_large.algorithm) << slow.why;
  EXPECT_EQ(leadersSeconds(slow), leadersSeconds(modeled_large)) << slow.why;
  EXPECT_NE(slow.why.find("above it: priced by the model"), std::string::npos) << slow.why;
  for (const auto& candidate : slow.candidates) {
    for (const auto& before : modeled_large.candidates) {
      if (before.algorithm == candidate.algorithm) {
        EXPECT_EQ(before.seconds, candidate.seconds);
      }
    }
  }
  // Another collective's measurement does not apply.
  const auto other =
      runtime::chooseAlgorithm({plan::Collective::AllReduce, 4096, 0}, t, node, {}, {});
  EXPECT_EQ(other.why.find("leaders measured"), std::string::npos) << other.why;
}

TEST(NodeLeaders, RoundsBetweenNodes) {
  using algorithms::NodeLeaders;
  EXPECT_EQ(NodeLeaders::rounds(plan::Collective::AllReduce, 1), 0);
  // Up to 8 nodes every leader exchanges with every other at once.
  for (int nodes : {2, 3, 5, 8}) {
    EXPECT_TRUE(NodeLeaders::oneRound(nodes));
    EXPECT_EQ(NodeLeaders::rounds(plan::Collective::Reduce, nodes), 1);
  }
  // Beyond, log rounds: recursive doubling (two more where the count is not a power
  // of two) or a binomial tree.
  EXPECT_FALSE(NodeLeaders::oneRound(9));
  EXPECT_EQ(NodeLeaders::rounds(plan::Collective::AllReduce, 9), 5);
  EXPECT_EQ(NodeLeaders::rounds(plan::Collective::AllGather, 16), 4);
  EXPECT_EQ(NodeLeaders::rounds(plan::Collective::ReduceScatter, 12), 5);
  EXPECT_EQ(NodeLeaders::rounds(plan::Collective::Broadcast, 9), 4);
  EXPECT_EQ(NodeLeaders::rounds(plan::Collective::Reduce, 16), 4);
}

TEST(NodeLeaders, ShapesCountRoundsAndMessages) {
  using algorithms::NodeLeaders;
  using Shape = NodeLeaders::Shape;
  const auto all_reduce = plan::Collective::AllReduce;
  // Three nodes: all-to-all sends 6 messages in a round, recursive doubling with the
  // fold 4 in 3 rounds, via the first leader 4 in 2.
  EXPECT_EQ(NodeLeaders::messages(Shape::OneRound, all_reduce, 3), 6);
  EXPECT_EQ(NodeLeaders::rounds(Shape::LogRounds, all_reduce, 3), 3);
  EXPECT_EQ(NodeLeaders::messages(Shape::LogRounds, all_reduce, 3), 4);
  EXPECT_EQ(NodeLeaders::rounds(Shape::ViaFirstLeader, all_reduce, 3), 2);
  EXPECT_EQ(NodeLeaders::messages(Shape::ViaFirstLeader, all_reduce, 3), 4);
  EXPECT_EQ(NodeLeaders::messages(Shape::LogRounds, all_reduce, 8), 24);
  EXPECT_EQ(NodeLeaders::messages(Shape::LogRounds, plan::Collective::Broadcast, 5), 4);
  EXPECT_EQ(NodeLeaders::rounds(Shape::LogRounds, plan::Collective::Broadcast, 5), 3);
  EXPECT_EQ(NodeLeaders::shapesFor(plan::Collective::Reduce).size(), 2u);

  // Messages dear against rounds: fewer messages win; rounds dear: one round.
  const NodeLeaders::ShapeCosts kernel_bound{5e-6, 10e-6}, latency_bound{20e-6, 1e-6};
  EXPECT_EQ(NodeLeaders::cheapest(all_reduce, 3, kernel_bound), Shape::ViaFirstLeader);
  EXPECT_EQ(NodeLeaders::cheapest(all_reduce, 3, latency_bound), Shape::OneRound);
  // Rooted calls send N-1 messages either way: the fewest rounds.
  EXPECT_EQ(NodeLeaders::cheapest(plan::Collective::Broadcast, 5, kernel_bound), Shape::OneRound);

  // The fit recovers the constants of exact times (a constant for the boards besides).
  for (int nodes : {3, 4, 5, 7}) {
    const auto shapes = NodeLeaders::shapesFor(all_reduce);
    std::vector<double> seconds;
    for (Shape shape : shapes) {
      seconds.push_back(3e-6 +
                        NodeLeaders::predictLeadersSeconds(shape, all_reduce, nodes, kernel_bound));
    }
    NodeLeaders::ShapeCosts fitted;
    ASSERT_TRUE(NodeLeaders::fitCosts(all_reduce, nodes, shapes, seconds, fitted)) << nodes;
    EXPECT_NEAR(fitted.round_seconds, kernel_bound.round_seconds, 1e-9) << nodes;
    EXPECT_NEAR(fitted.message_seconds, kernel_bound.message_seconds, 1e-9) << nodes;
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

TEST(AlgorithmChoice, DeviceBuffersPriceEveryStepAtTheDeviceTransportsCost) {
  // Measured on an H200 (transport/cuda/device_transport.hpp): priced at the host's
  // 1 us a step, AllReduce of 4 MiB took a plan of ~100 small steps that ran 20x
  // slower than a ring there. Priced at the device's cost, plans have fewer steps.
  for (int ranks : {2, 4}) {
    const topo::Topology t = hostRanks(ranks);
    runtime::NodeAlgorithms host_node = bothOn(), device_node = bothOn();
    plan::PlannerOptions host_options, device_options;
    runtime::priceForDeviceBuffers(device_node, device_options);
    EXPECT_EQ(device_options.sim.step_overhead_us, device_options.lower.step_overhead_us);
    EXPECT_GT(device_options.sim.step_overhead_us, 10.0 * host_options.sim.step_overhead_us);
    const runtime::CallShape call{plan::Collective::AllReduce, 4 << 20, -1};
    const auto device = runtime::chooseAlgorithm(call, t, device_node, {}, device_options);
    ASSERT_TRUE(runtime::runsPlan(device.algorithm)) << device.why;
    EXPECT_NE(device.why.find("board n/a: device buffers"), std::string::npos) << device.why;
    EXPECT_NE(device.why.find("direct n/a: device buffers"), std::string::npos) << device.why;
    // On host buffers a node algorithm would win; compare with the plan it would run.
    runtime::NodeAlgorithms plans_only = host_node;
    plans_only.board_capacity = plans_only.direct_min = 0;
    const auto host_plan = runtime::chooseAlgorithm(call, t, plans_only, {}, host_options);
    EXPECT_LT(device.plan.numSteps(), host_plan.plan.numSteps())
        << ranks << " ranks: " << device.why << " / " << host_plan.why;
    EXPECT_GT(device.seconds, host_plan.seconds) << device.why;
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
