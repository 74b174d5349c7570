// The job topology without BLINK_TOPO: discovered on each node, gathered over PMPI,
// merged into one graph that every rank builds alike, with each rank on its socket;
// on one node and on two nodes emulated with BLINK_NODE_ID. Collectives through a
// Communicator on that graph give what PMPI gives.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "mpi_test_support.hpp"
#include "runtime/communicator.hpp"
#include "runtime/job_topology.hpp"
#include "runtime/rank_layout.hpp"
#include "topology/job_graph.hpp"
#include "topology/node_description.hpp"
#include "topology/placement.hpp"
#include "topology/topology_json.hpp"

namespace {

using blink::test::ScopedEnv;
using blink::test::worldRank;
using blink::test::worldSize;
namespace topo = blink::topo;

// The oracle: every rank describes its node and reports its socket itself, the test
// gathers that with plain MPI, and builds the graph from it.
struct Expected {
  std::vector<std::string> descriptions;  // of each node, from its local rank 0
  std::vector<topo::RankPlace> places;
};

Expected gatherExpected(const blink::runtime::RankLayout& layout) {
  topo::NodeDescribeOptions options;
  options.discover.table = topo::LinkTable::fromEnvironment();
  const std::string mine = topo::serializeNode(topo::describeNode(options));
  const int length = static_cast<int>(mine.size());
  const int package = topo::boundPackage();
  std::vector<int> lengths(static_cast<std::size_t>(layout.size));
  std::vector<int> packages(static_cast<std::size_t>(layout.size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Allgather(&package, 1, MPI_INT, packages.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> displs(lengths.size(), 0);
  for (std::size_t r = 1; r < lengths.size(); ++r) displs[r] = displs[r - 1] + lengths[r - 1];
  std::string all(static_cast<std::size_t>(displs.back() + lengths.back()), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  Expected e;
  e.descriptions.resize(static_cast<std::size_t>(layout.num_nodes));
  for (int r = 0; r < layout.size; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    if (layout.local_rank_of_rank[ur] == 0) {
      e.descriptions[static_cast<std::size_t>(layout.node_of_rank[ur])] =
          all.substr(static_cast<std::size_t>(displs[ur]), static_cast<std::size_t>(lengths[ur]));
    }
    e.places.push_back({layout.node_of_rank[ur], layout.local_rank_of_rank[ur], packages[ur]});
  }
  return e;
}

void checkAgainstOracle(const blink::runtime::RankLayout& layout,
                        const blink::runtime::JobTopology& job) {
  const Expected expected = gatherExpected(layout);
  const topo::LinkTable table = topo::LinkTable::fromEnvironment();
  const int expected_nodes = layout.num_nodes;
  EXPECT_TRUE(job.discovered);
  EXPECT_EQ(job.topology.numNodes(), expected_nodes);
  EXPECT_NE(job.source.find("discovered: " + std::to_string(expected_nodes) + " node(s)"),
            std::string::npos)
      << job.source;

  // The graph is the merge of what each node discovered, plus one vertex per rank.
  std::vector<topo::Topology> parsed;
  for (const std::string& text : expected.descriptions) {
    parsed.push_back(topo::fromJson(text, "expected", table));
  }
  std::vector<const topo::Topology*> nodes;
  for (const topo::Topology& t : parsed) nodes.push_back(&t);
  const topo::Topology merged = topo::mergeNodes(nodes, table, /*keep_gpus=*/false);
  for (topo::Vertex v = 0; v < merged.numDevices(); ++v) {
    auto w = job.topology.find(merged.device(v).id);
    ASSERT_TRUE(w) << merged.device(v).id;
    EXPECT_EQ(job.topology.device(*w), merged.device(v));
  }
  if (job.topology.gpus().size() == static_cast<std::size_t>(layout.size) &&
      job.topology.device(job.topology.gpus().front()).model == "host rank") {
    EXPECT_EQ(job.topology.numDevices(),
              merged.numDevices() + static_cast<std::size_t>(layout.size));
    EXPECT_EQ(job.topology.numLinks(),
              merged.numLinks() + 2 * static_cast<std::size_t>(layout.size));
  }
  topo::JobGraph oracle = topo::buildJobGraph(nodes, expected.places, table);
  EXPECT_TRUE(job.topology.sameAs(oracle.topology));
  EXPECT_EQ(job.plan_rank_of, oracle.plan_rank_of);
  EXPECT_EQ(job.comm_rank_of, oracle.comm_rank_of);

  // Every rank's vertex, and that a host rank hangs from a socket of its own node.
  const bool multi = expected_nodes > 1;
  for (int r = 0; r < layout.size; ++r) {
    const int p = job.plan_rank_of[static_cast<std::size_t>(r)];
    EXPECT_EQ(job.comm_rank_of[static_cast<std::size_t>(p)], r);
    const topo::Device& d = job.topology.device(job.topology.gpus()[static_cast<std::size_t>(p)]);
    EXPECT_EQ(d.node, layout.node_of_rank[static_cast<std::size_t>(r)]);
    if (d.model != "host rank") continue;
    const std::string prefix =
        multi ? "n" + std::to_string(layout.node_of_rank[static_cast<std::size_t>(r)]) + "." : "";
    EXPECT_EQ(d.id, prefix + "rank" + std::to_string(r));
    const topo::Vertex v = *job.topology.find(d.id);
    ASSERT_EQ(boost::out_degree(v, job.topology.graph()), 1u);
    const topo::Edge e = *boost::out_edges(v, job.topology.graph()).first;
    const topo::Device& socket = job.topology.device(job.topology.target(e));
    EXPECT_EQ(socket.kind, topo::DeviceKind::Cpu);
    EXPECT_EQ(socket.id.rfind(prefix + "cpu", 0), 0u) << socket.id;
    EXPECT_EQ(job.topology.link(e).kind, topo::LinkKind::SharedMemory);
  }
  // Nodes reach each other through the one network switch, by a NIC or a virtual one.
  if (multi) {
    auto sw = job.topology.find("netsw0");
    ASSERT_TRUE(sw);
    std::vector<int> uplinks(static_cast<std::size_t>(expected_nodes), 0);
    for (topo::Edge e : job.topology.links()) {
      if (job.topology.target(e) == *sw) {
        uplinks[static_cast<std::size_t>(job.topology.device(job.topology.source(e)).node)]++;
      }
    }
    for (int k = 0; k < expected_nodes; ++k) EXPECT_GE(uplinks[static_cast<std::size_t>(k)], 1);
  }
}

void checkJobTopology(int expected_nodes) {
  const auto layout =
      blink::runtime::computeRankLayout(MPI_COMM_WORLD, blink::runtime::localNodeName());
  ASSERT_EQ(layout.num_nodes, expected_nodes);
  const blink::runtime::JobTopology job = blink::runtime::jobTopology(layout, MPI_COMM_WORLD);
  EXPECT_EQ(job.distinct_descriptions, 1);  // one machine, however many emulated nodes
  checkAgainstOracle(layout, job);
}

// Through tree plans: AllReduce (int32 sums and float64 sums of small integers: exact in any order)
// and Broadcast from the last rank, against PMPI, at a small and a large size.
void checkCollectivesAgainstPmpi() {
  // Tree plans on the discovered graph at every size: no one-shot board, no direct path.
  const ScopedEnv no_board("BLINK_ONE_SHOT_MAX_BYTES", "0");
  const ScopedEnv no_direct("BLINK_SHM_DIRECT_MIN_BYTES", "0");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const int rank = worldRank(), n = worldSize();
  for (std::size_t count : {std::size_t{1000}, std::size_t{300007}}) {
    std::vector<std::int32_t> in(count), got(count), want(count);
    std::vector<double> din(count), dgot(count), dwant(count);
    for (std::size_t i = 0; i < count; ++i) {
      in[i] =
          static_cast<std::int32_t>((i * 7919 + static_cast<std::size_t>(rank) * 104729) % 65536) -
          32768;
      din[i] = static_cast<double>(in[i] % 1000);
    }
    comm.allReduce(in.data(), got.data(), count, blinkInt32, blinkSum);
    PMPI_Allreduce(in.data(), want.data(), static_cast<int>(count), MPI_INT32_T, MPI_SUM,
                   MPI_COMM_WORLD);
    EXPECT_EQ(got, want) << count;
    comm.allReduce(din.data(), dgot.data(), count, blinkFloat64, blinkSum);
    PMPI_Allreduce(din.data(), dwant.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM,
                   MPI_COMM_WORLD);
    EXPECT_EQ(dgot, dwant) << count;
    std::vector<std::int32_t> bgot = in, bwant = in;
    comm.broadcast(bgot.data(), bgot.data(), count, blinkInt32, n - 1);
    PMPI_Bcast(bwant.data(), static_cast<int>(count), MPI_INT32_T, n - 1, MPI_COMM_WORLD);
    EXPECT_EQ(bgot, bwant) << count;
  }
}

TEST(JobTopology, OneNodeIsDiscovered) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  checkJobTopology(1);
}

TEST(JobTopology, TwoEmulatedNodesShareOneDescription) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv node("BLINK_NODE_ID", worldRank() % 2 == 0 ? "node-even" : "node-odd");
  checkJobTopology(2);
}

TEST(JobTopology, DifferentNodesTravelOnceEachAndMergeAsDescribed) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  // The odd node is a two-socket host (hwloc reads the fixture instead of this VM).
  const bool odd = worldRank() % 2 == 1;
  ScopedEnv node("BLINK_NODE_ID", odd ? "node-odd" : "node-even");
  std::optional<ScopedEnv> two_socket;
  if (odd)
    two_socket.emplace("HWLOC_XMLFILE",
                       std::string(BLINK_TEST_DATA_DIR) + "/hwloc-2socket-no-gpu.xml");
  const auto layout =
      blink::runtime::computeRankLayout(MPI_COMM_WORLD, blink::runtime::localNodeName());
  const blink::runtime::JobTopology job = blink::runtime::jobTopology(layout, MPI_COMM_WORLD);
  EXPECT_EQ(job.distinct_descriptions, 2);
  checkAgainstOracle(layout, job);
  const topo::Topology& t = job.topology;
  EXPECT_TRUE(t.find("n1.cpu1"));
  EXPECT_TRUE(t.find("n1.nic0"));
  // Not bound to one socket of the fixture: spread by local rank over its two sockets.
  for (int r = 1; r < worldSize(); r += 2) {
    const std::string socket = "n1.cpu" + std::to_string((r / 2) % 2);
    const topo::Vertex v = *t.find("n1.rank" + std::to_string(r));
    const topo::Edge e = *boost::out_edges(v, t.graph()).first;
    EXPECT_EQ(t.device(t.target(e)).id, socket) << r;
  }
}

TEST(JobTopology, RepeatedCommunicatorsPlanOnTheSameGraph) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  const auto layout =
      blink::runtime::computeRankLayout(MPI_COMM_WORLD, blink::runtime::localNodeName());
  const auto first = blink::runtime::jobTopology(layout, MPI_COMM_WORLD);
  const auto second = blink::runtime::jobTopology(layout, MPI_COMM_WORLD);  // described once
  EXPECT_TRUE(first.topology.sameAs(second.topology));
  EXPECT_EQ(first.topology.name(), second.topology.name());
  // A measured speed changes the graph, and the graph says so.
  const ScopedEnv measured("BLINK_LINK_GBPS", "shm=2.5");
  const auto third = blink::runtime::jobTopology(layout, MPI_COMM_WORLD);
  for (topo::Edge e : third.topology.links()) {
    if (third.topology.link(e).kind != topo::LinkKind::SharedMemory) continue;
    EXPECT_EQ(third.topology.link(e).gbps, 2.5);
    EXPECT_EQ(third.topology.link(e).source, topo::LinkSource::Override);
  }
}

TEST(JobTopology, BlinkTopoOnSomeRanksOnlyFailsEverywhere) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO is set on every rank";
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  const auto layout =
      blink::runtime::computeRankLayout(MPI_COMM_WORLD, blink::runtime::localNodeName());
  std::optional<ScopedEnv> topo_on_rank0;
  if (worldRank() == 0) topo_on_rank0.emplace("BLINK_TOPO", "dgx1-v100");
  try {
    (void)blink::runtime::jobTopology(layout, MPI_COMM_WORLD);
    ADD_FAILURE() << "no error";
  } catch (const blink::Error& e) {
    EXPECT_EQ(e.status(), blinkInvalidInput);
    EXPECT_NE(std::string(e.what()).find("BLINK_TOPO is set on 1 of"), std::string::npos)
        << e.what();
  }
}

TEST(JobTopology, CollectivesOnTheDiscoveredGraphMatchPmpi) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  checkCollectivesAgainstPmpi();
}

TEST(JobTopology, CollectivesAcrossEmulatedNodesMatchPmpi) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv node("BLINK_NODE_ID", worldRank() % 2 == 0 ? "node-even" : "node-odd");
  checkCollectivesAgainstPmpi();
}

TEST(JobTopology, CollectivesAcrossDifferentNodesMatchPmpi) {
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO replaces discovery";
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  const bool odd = worldRank() % 2 == 1;
  ScopedEnv node("BLINK_NODE_ID", odd ? "node-odd" : "node-even");
  std::optional<ScopedEnv> two_socket;
  if (odd) {
    two_socket.emplace("HWLOC_XMLFILE",
                       std::string(BLINK_TEST_DATA_DIR) + "/hwloc-2socket-no-gpu.xml");
  }
  checkCollectivesAgainstPmpi();
}

}  // namespace
