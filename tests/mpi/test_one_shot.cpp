// The one-shot shared-memory board for small collectives (shm_one_shot.hpp): every
// collective on it checked against PMPI_* over many calls in a row, so that both of
// each rank's buffers are reused many times, including by ranks that run ahead of a
// slow reader; the size boundary with plans; a peer that never posts; settings that
// differ between ranks; and communicators that span nodes, where each node's board
// serves the node leaders' algorithm (node_leaders.hpp).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "mpi_test_support.hpp"
#include "runtime/communicator.hpp"

namespace {

using blink::runtime::Algorithm;
using blink::test::ScopedEnv;
using blink::test::worldRank;
using blink::test::worldSize;

std::vector<std::int32_t> data(int rank, int call, std::size_t count) {
  return blink::test::callValues(rank, call, count);
}

constexpr std::size_t kMaxBytes = 16384;  // BLINK_ONE_SHOT_MAX_BYTES in the tests below
constexpr std::size_t kMaxInts = kMaxBytes / sizeof(std::int32_t);

TEST(OneShot, EveryCollectiveMatchesPmpiOverManyCallsInARow) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv limit("BLINK_ONE_SHOT_MAX_BYTES", std::to_string(kMaxBytes));
  ScopedEnv algo("BLINK_ALGO", "board");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const auto un = static_cast<std::size_t>(n);
  for (int call = 0; call < 400; ++call) {
    const int root = call % n;
    // Counts from 1 to the largest that fits, the total for AllGather/ReduceScatter.
    const std::size_t total = 1 + (static_cast<std::size_t>(call) * 389u) % kMaxInts;
    const std::size_t block = std::max<std::size_t>(1, total / un);
    std::vector<std::int32_t> in = data(rank, call, total), out(total, -7), want(total, -7);
    const int kind = call % 5;
    if (kind == 0) {
      comm.allReduce(in.data(), out.data(), total, blinkInt32, blinkSum);
      PMPI_Allreduce(in.data(), want.data(), static_cast<int>(total), MPI_INT32_T, MPI_SUM,
                     MPI_COMM_WORLD);
    } else if (kind == 1) {
      comm.broadcast(in.data(), out.data(), total, blinkInt32, root);
      want = data(root, call, total);
    } else if (kind == 2) {
      comm.reduce(in.data(), out.data(), total, blinkInt32, blinkMax, root);
      PMPI_Reduce(in.data(), want.data(), static_cast<int>(total), MPI_INT32_T, MPI_MAX, root,
                  MPI_COMM_WORLD);
      if (rank != root) want = out;  // only the root's result is defined
    } else if (kind == 3) {
      out.assign(block * un, -7);
      want.assign(block * un, -7);
      comm.allGather(in.data(), out.data(), block, blinkInt32);
      PMPI_Allgather(in.data(), static_cast<int>(block), MPI_INT32_T, want.data(),
                     static_cast<int>(block), MPI_INT32_T, MPI_COMM_WORLD);
    } else {
      in = data(rank, call, block * un);
      out.assign(block, -7);
      want.assign(block, -7);
      comm.reduceScatter(in.data(), out.data(), block, blinkInt32, blinkMin);
      PMPI_Reduce_scatter_block(in.data(), want.data(), static_cast<int>(block), MPI_INT32_T,
                                MPI_MIN, MPI_COMM_WORLD);
    }
    ASSERT_EQ(out, want) << "call " << call << " kind " << kind << " count " << total;
  }
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 400u) << "every call fits the board";
}

// Non-roots of a Reduce never wait for the root's result, and the root of a
// Broadcast never waits for anyone: they run up to 64 small calls (4 larger ones)
// ahead (the depths of the board's two rings), and must then wait before overwriting
// a slot the slow rank has not read. Sizes mix both rings, and the small calls
// outnumber the deep ring's slots, so both rings wrap while a rank waits.
TEST(OneShot, RanksThatRunAheadWaitForASlowReader) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv algo("BLINK_ALGO", "board");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const int slow = n - 1;
  constexpr int kCalls = 200;
  // 4000 bytes (the deep ring) twice, then 8000 (the other).
  auto countOf = [](int call) { return std::size_t{call % 3 == 2 ? 2000u : 1000u}; };
  for (int call = 0; call < kCalls; ++call) {
    if (rank == slow && call % 6 == 0) usleep(5000);
    const std::size_t count = countOf(call);
    std::vector<std::int32_t> in = data(rank, call, count), out(count, 0);
    comm.reduce(in.data(), out.data(), count, blinkInt32, blinkSum, slow);
    if (rank == slow) {
      for (std::size_t i = 0; i < count; ++i) {
        std::int64_t sum = 0;
        for (int r = 0; r < n; ++r) sum += data(r, call, count)[i];
        ASSERT_EQ(out[i], sum) << "Reduce call " << call << " index " << i;
      }
    }
  }
  for (int call = 0; call < kCalls; ++call) {
    if (rank == slow && call % 6 == 0) usleep(5000);
    const std::size_t count = countOf(call);
    std::vector<std::int32_t> buf =
        rank == 0 ? data(0, call, count) : std::vector<std::int32_t>(count);
    comm.broadcast(buf.data(), buf.data(), count, blinkInt32, 0);
    ASSERT_EQ(buf, data(0, call, count)) << "Broadcast call " << call;
  }
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 2u * kCalls);
}

TEST(OneShot, LargerMessagesTakePlans) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv limit("BLINK_ONE_SHOT_MAX_BYTES", "4096");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(1025, 3), b(1025, 0);
  comm.allReduce(a.data(), b.data(), 1024, blinkInt32, blinkSum);  // exactly 4096 bytes
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 1u) << comm.explain();
  EXPECT_EQ(b[1023], 3 * n);
  comm.allReduce(a.data(), b.data(), 1025, blinkInt32, blinkSum);  // only plans apply
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 1u);
  EXPECT_EQ(comm.callsWith(Algorithm::Direct), 0u);
  EXPECT_EQ(b[1024], 3 * n);
  EXPECT_NE(comm.explain().find("board: the one-shot shared-memory board for up to 4096 bytes"),
            std::string::npos)
      << comm.explain();
}

TEST(OneShot, ZeroTurnsItOff) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv limit("BLINK_ONE_SHOT_MAX_BYTES", "0");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(4, 5), b(4, 0);
  comm.allReduce(a.data(), b.data(), a.size(), blinkInt32, blinkSum);
  EXPECT_EQ(b[3], 5 * n);
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 0u);
  EXPECT_NE(comm.explain().find("board: off (BLINK_ONE_SHOT_MAX_BYTES=0)"), std::string::npos);
}

TEST(OneShot, CommunicatorsAcrossNodesUseTheBoardOfEachNodeUnderLeaders) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO fixes the nodes";
  ScopedEnv node("BLINK_NODE_ID", rank % 2 == 0 ? "node-even" : "node-odd");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(16, rank), b(16, 0);
  comm.allReduce(a.data(), b.data(), a.size(), blinkInt32, blinkSum);
  EXPECT_EQ(b[15], n * (n - 1) / 2);
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 0u);
  EXPECT_EQ(comm.callsWith(Algorithm::Leaders), 1u) << comm.explain();
  EXPECT_NE(comm.explain().find("within each node (under leaders)"), std::string::npos);
}

TEST(OneShot, TheSettingMustBeTheSameOnEveryRank) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv limit("BLINK_ONE_SHOT_MAX_BYTES", rank == 0 ? "1024" : "2048");
  blinkComm_t comm = nullptr;
  EXPECT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkInvalidUsage);
  EXPECT_NE(std::string(blinkGetLastError()).find("BLINK_ONE_SHOT_MAX_BYTES differs"),
            std::string::npos)
      << blinkGetLastError();
}

TEST(OneShot, APeerThatNeverPostsIsNamed) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv timeout("BLINK_TIMEOUT_S", "1");
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  const int absent = n - 1;
  const bool agreement = blink::test::callsAgreeOnMemoryTypes();
  float a[64] = {}, b[64];
  // The board is made at the first call, by everyone; then one rank stays away.
  ASSERT_EQ(blinkAllReduce(a, b, 64, blinkFloat32, blinkSum, comm), blinkSuccess);
  if (rank != absent) {
    blinkResult_t rc = blinkAllReduce(a, b, 64, blinkFloat32, blinkSum, comm);
    std::string msg = blinkGetLastError();
    EXPECT_EQ(rc, blinkTimeout) << msg;
    if (agreement) {
      EXPECT_NE(msg.find("agreeing on the memory types of the buffers"), std::string::npos) << msg;
    } else {
      EXPECT_NE(msg.find("no progress"), std::string::npos) << msg;
      EXPECT_NE(msg.find("waiting for rank " + std::to_string(absent)), std::string::npos) << msg;
    }
    // The call count on the board is lost: the communicator refuses further work.
    EXPECT_EQ(blinkAllReduce(a, b, 64, blinkFloat32, blinkSum, comm), blinkInvalidUsage);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

}  // namespace
