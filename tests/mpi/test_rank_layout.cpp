#include <gtest/gtest.h>
#include <mpi.h>

#include "common/error.hpp"
#include "mpi_test_support.hpp"
#include "runtime/rank_layout.hpp"

namespace {

using blink::test::worldRank;
using blink::test::worldSize;

TEST(RankLayout, OneNameIsOneNode) {
  auto layout = blink::runtime::computeRankLayout(MPI_COMM_WORLD, "hostA");
  EXPECT_EQ(layout.rank, worldRank());
  EXPECT_EQ(layout.size, worldSize());
  EXPECT_EQ(layout.num_nodes, 1);
  EXPECT_EQ(layout.node, 0);
  EXPECT_EQ(layout.local_rank, worldRank());
  EXPECT_EQ(layout.local_size, worldSize());
}

TEST(RankLayout, EmulatedNodesGetIndicesInOrderOfFirstRank) {
  // Ranks 0,2,4.. on "odd-one" would be confusing; use rank % 2 and a reversed name order.
  int r = worldRank(), n = worldSize();
  std::string name = (r % 2 == 0) ? "zeta" : "alpha";
  auto layout = blink::runtime::computeRankLayout(MPI_COMM_WORLD, name);
  int expected_nodes = n >= 2 ? 2 : 1;
  ASSERT_EQ(layout.num_nodes, expected_nodes);
  EXPECT_EQ(layout.node_names[0], "zeta");  // rank 0's node comes first
  EXPECT_EQ(layout.node, r % 2);
  EXPECT_EQ(layout.local_rank, r / 2);
  EXPECT_EQ(layout.local_size, r % 2 == 0 ? (n + 1) / 2 : n / 2);
  for (int q = 0; q < n; ++q) {
    EXPECT_EQ(layout.node_of_rank[q], q % 2);
    EXPECT_EQ(layout.local_rank_of_rank[q], q / 2);
  }
}

TEST(RankLayout, WorksOnSplitCommunicators) {
  int r = worldRank();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  auto layout = blink::runtime::computeRankLayout(half, "host-" + std::to_string(r / 2 % 2));
  int hr = 0, hs = 0;
  MPI_Comm_rank(half, &hr);
  MPI_Comm_size(half, &hs);
  EXPECT_EQ(layout.rank, hr);
  EXPECT_EQ(layout.size, hs);
  int sum_local = 0, total = layout.local_size;
  MPI_Allreduce(&layout.local_rank, &sum_local, 1, MPI_INT, MPI_SUM, half);
  // Sum over ranks of local ranks = sum over nodes of k(k-1)/2.
  int expected = 0;
  std::vector<int> per_node(layout.num_nodes, 0);
  for (int q = 0; q < hs; ++q) per_node[layout.node_of_rank[q]]++;
  for (int k : per_node) expected += k * (k - 1) / 2;
  EXPECT_EQ(sum_local, expected);
  EXPECT_GE(total, 1);
  MPI_Comm_free(&half);
}

TEST(RankLayout, RejectsEmptyAndOverlongNames) {
  for (const std::string& bad : {std::string(), std::string(300, 'x')}) {
    try {
      blink::runtime::computeRankLayout(MPI_COMM_WORLD, bad);
      ADD_FAILURE() << "accepted a name of " << bad.size() << " characters";
    } catch (const blink::Error& e) {
      EXPECT_EQ(e.status(), blinkInvalidInput);
    }
  }
}

TEST(RankLayout, NodeIdEnvironmentOverridesHostname) {
  setenv("BLINK_NODE_ID", "emulated-node-7", 1);
  EXPECT_EQ(blink::runtime::localNodeName(), "emulated-node-7");
  unsetenv("BLINK_NODE_ID");
  EXPECT_FALSE(blink::runtime::localNodeName().empty());
}

}  // namespace
