// The direct path for large collectives within a node (node_collectives.hpp), both
// ways it moves bytes: through the staging area (shm_staged.hpp; also with the
// smallest area, so that every call goes in many rounds through both halves) and by
// cross-memory attach (shm_direct.hpp). Checked against PMPI_* for every collective
// it serves, in and out of place, with counts that leave some ranks an empty share,
// that do not divide by the ranks and that span several pieces; buffers reused the
// moment a call returns, with a slow rank; a peer that never arrives. Then the
// boundaries with the one-shot board and plans, which way is chosen and why, the
// area's growth, the settings that turn the path off, and settings that differ
// between ranks.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/shm_staged.hpp"
#include "blink/blink.h"
#include "mpi_test_support.hpp"
#include "runtime/communicator.hpp"

namespace {

using blink::runtime::Algorithm;
using blink::test::ScopedEnv;

using blink::test::worldRank;
using blink::test::worldSize;

std::uint64_t callsOtherThan(const blink::runtime::Communicator& comm, Algorithm algorithm) {
  std::uint64_t calls = 0;
  for (int a = 0; a < blink::runtime::kNumAlgorithms; ++a) {
    if (static_cast<Algorithm>(a) != algorithm) calls += comm.callsWith(static_cast<Algorithm>(a));
  }
  return calls;
}

// Small integers, distinct per rank, call and index: sums and products of them are
// exact in every type below, floats included, so results compare exactly.
int value(int rank, int call, std::size_t i) {
  return static_cast<int>((static_cast<std::size_t>(rank) * 7919u +
                           static_cast<std::size_t>(call) * 104729u + i * 31u) %
                          7u) -
         3;
}

template <typename T>
std::vector<T> data(int rank, int call, std::size_t count) {
  std::vector<T> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<T>(value(rank, call, i));
  return v;
}

// Every call of 16 bytes or more takes the direct path (the board is off, and
// BLINK_ALGO forces the direct path where it applies).
struct DirectFromSmallSizes {
  ScopedEnv algo{"BLINK_ALGO", "direct"};
  ScopedEnv board{"BLINK_ONE_SHOT_MAX_BYTES", "0"};
  ScopedEnv direct{"BLINK_SHM_DIRECT_MIN_BYTES", "16"};
  ScopedEnv single_copy{"BLINK_SHM_SINGLE_COPY", "AUTO"};
};

// How the direct path moves the bytes in a parameterised test.
enum class Mover { Staged, StagedInRounds, CrossMemory };

std::string moverName(const testing::TestParamInfo<Mover>& info) {
  switch (info.param) {
    case Mover::Staged:
      return "Staged";
    case Mover::StagedInRounds:
      return "StagedInRounds";
    case Mover::CrossMemory:
      return "CrossMemory";
  }
  return "Unknown";
}

std::string stagingBytesFor(Mover mover) {
  switch (mover) {
    case Mover::Staged:
      return "33554432";
    case Mover::StagedInRounds:
      return std::to_string(blink::algorithms::ShmStaged::minimumBytesPerRank(worldSize()));
    case Mover::CrossMemory:
      return "0";
  }
  return "";
}

class DirectPath : public testing::TestWithParam<Mover> {
 protected:
  void SetUp() override {
    if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  }
  DirectFromSmallSizes settings_;
  ScopedEnv staging_{"BLINK_SHM_STAGING_BYTES", stagingBytesFor(GetParam())};
};

INSTANTIATE_TEST_SUITE_P(Movers, DirectPath,
                         testing::Values(Mover::Staged, Mover::StagedInRounds, Mover::CrossMemory),
                         moverName);

template <typename T>
void checkEveryCollective(blink::runtime::Communicator& comm, blinkDataType_t type,
                          MPI_Datatype mpi_type, blinkRedOp_t op, MPI_Op mpi_op, std::size_t count,
                          int call) {
  const int rank = worldRank(), n = worldSize();
  const auto un = static_cast<std::size_t>(n);
  const int root = call % n;
  const std::string where = "count " + std::to_string(count) + " call " + std::to_string(call);
  for (bool in_place : {false, true}) {
    SCOPED_TRACE(where + (in_place ? " in place" : " out of place"));
    {  // AllReduce
      std::vector<T> in = data<T>(rank, call, count), out(count, T(99)), want(count);
      PMPI_Allreduce(in.data(), want.data(), static_cast<int>(count), mpi_type, mpi_op,
                     MPI_COMM_WORLD);
      if (in_place) {
        comm.allReduce(in.data(), in.data(), count, type, op);
        out = in;
      } else {
        comm.allReduce(in.data(), out.data(), count, type, op);
        EXPECT_EQ(in, (data<T>(rank, call, count))) << "the input changed";
      }
      ASSERT_EQ(out, want) << "AllReduce";
    }
    {  // Reduce: the root gets the result; the others' receive buffer is not touched
      std::vector<T> in = data<T>(rank, call, count), out(count, T(99)), want(count);
      PMPI_Reduce(in.data(), want.data(), static_cast<int>(count), mpi_type, mpi_op, root,
                  MPI_COMM_WORLD);
      if (in_place && rank == root) {
        comm.reduce(in.data(), in.data(), count, type, op, root);
        out = in;
      } else {
        comm.reduce(in.data(), rank == root ? out.data() : nullptr, count, type, op, root);
        EXPECT_EQ(in, (data<T>(rank, call, count))) << "the input changed";
      }
      if (rank == root) {
        ASSERT_EQ(out, want) << "Reduce to " << root;
      } else {
        ASSERT_EQ(out, std::vector<T>(count, T(99))) << "Reduce, not the root";
      }
    }
    {  // ReduceScatter: `count` per rank
      std::vector<T> in = data<T>(rank, call, count * un), out(count, T(99)), want(count);
      PMPI_Reduce_scatter_block(in.data(), want.data(), static_cast<int>(count), mpi_type, mpi_op,
                                MPI_COMM_WORLD);
      if (in_place) {
        comm.reduceScatter(in.data(), in.data() + static_cast<std::size_t>(rank) * count, count,
                           type, op);
        out.assign(in.begin() + static_cast<std::ptrdiff_t>(rank * count),
                   in.begin() + static_cast<std::ptrdiff_t>((rank + 1) * count));
      } else {
        comm.reduceScatter(in.data(), out.data(), count, type, op);
      }
      ASSERT_EQ(out, want) << "ReduceScatter";
      if (in_place) {  // MPI_IN_PLACE's layout: the result at the start of the input
        in = data<T>(rank, call, count * un);
        comm.reduceScatter(in.data(), in.data(), count, type, op);
        out.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(count));
        ASSERT_EQ(out, want) << "ReduceScatter into the start of its input";
      }
    }
    {  // AllGather: `count` per rank
      std::vector<T> in = data<T>(rank, call, count), out(count * un, T(99)), want(count * un);
      PMPI_Allgather(in.data(), static_cast<int>(count), mpi_type, want.data(),
                     static_cast<int>(count), mpi_type, MPI_COMM_WORLD);
      if (in_place) {
        std::copy(in.begin(), in.end(), out.begin() + static_cast<std::ptrdiff_t>(rank * count));
        comm.allGather(out.data() + static_cast<std::size_t>(rank) * count, out.data(), count,
                       type);
      } else {
        comm.allGather(in.data(), out.data(), count, type);
      }
      ASSERT_EQ(out, want) << "AllGather";
    }
    {  // Broadcast
      std::vector<T> buf = rank == root ? data<T>(root, call, count) : std::vector<T>(count, T(99));
      std::vector<T> out(count, T(98));
      if (in_place) {
        comm.broadcast(buf.data(), buf.data(), count, type, root);
        out = buf;
      } else {
        comm.broadcast(buf.data(), out.data(), count, type, root);
      }
      ASSERT_EQ(out, (data<T>(root, call, count))) << "Broadcast from " << root;
    }
  }
}

TEST_P(DirectPath, EveryCollectiveMatchesPmpi) {
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  // 16: an element per rank or less at 4 ranks (empty segments); 1009: prime; 300007:
  // several 256 KiB pieces per segment, not a multiple of any rank count.
  int call = 0;
  for (std::size_t count : {16u, 1009u, 300007u}) {
    checkEveryCollective<std::int32_t>(comm, blinkInt32, MPI_INT32_T, blinkSum, MPI_SUM, count,
                                       call++);
    checkEveryCollective<double>(comm, blinkFloat64, MPI_DOUBLE, blinkMax, MPI_MAX, count, call++);
    checkEveryCollective<float>(comm, blinkFloat32, MPI_FLOAT, blinkSum, MPI_SUM, count, call++);
    checkEveryCollective<std::int8_t>(comm, blinkInt8, MPI_INT8_T, blinkMin, MPI_MIN, count,
                                      call++);
    checkEveryCollective<std::uint64_t>(comm, blinkUint64, MPI_UINT64_T, blinkProd, MPI_PROD, count,
                                        call++);
  }
  EXPECT_EQ(callsOtherThan(comm, Algorithm::Direct), 0u) << "every call took the direct path";
  EXPECT_GT(comm.callsWith(Algorithm::Direct), 0u);
  EXPECT_NE(comm.explain().find("direct: the direct path from 16 bytes"), std::string::npos)
      << comm.explain();
  const bool staged = GetParam() != Mover::CrossMemory;
  EXPECT_NE(comm.explain().find(staged ? "staging area" : "cross-memory attach"), std::string::npos)
      << comm.explain();
}

// 12 MiB and a little: AllReduce and Reduce pipeline pieces through many rounds,
// across the rounds' boundaries and both halves, on every rank count; the other
// collectives in between change the halves' owners.
TEST_P(DirectPath, LargeCallsMatchPmpi) {
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = (std::size_t{3} << 20) + 13;
  for (int call = 0; call < worldSize(); ++call) {  // every rank a root once
    checkEveryCollective<std::int32_t>(comm, blinkInt32, MPI_INT32_T, blinkSum, MPI_SUM, count,
                                       call);
  }
  checkEveryCollective<float>(comm, blinkFloat32, MPI_FLOAT, blinkMax, MPI_MAX, count, 1);
  EXPECT_EQ(callsOtherThan(comm, Algorithm::Direct), 0u);
}

TEST_P(DirectPath, AvgDividesOnce) {
  const int rank = worldRank(), n = worldSize();
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  std::vector<double> in(100000, static_cast<double>(rank)), out(in.size(), -1);
  ASSERT_EQ(blinkAllReduce(in.data(), out.data(), in.size(), blinkFloat64, blinkAvg, comm),
            blinkSuccess);
  for (double v : out) ASSERT_EQ(v, (n - 1) / 2.0);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

// A rank may reuse its buffers as soon as its call returns, so it must not return
// while a peer still reads them, nor rewrite a staging half a peer still reads. Here
// each rank rewrites its buffer at once for the next call, and one rank is often
// late: a peer that read the rewritten data would get the wrong sum.
TEST_P(DirectPath, BuffersAreFreeTheMomentACallReturns) {
  const int rank = worldRank(), n = worldSize();
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = 400000;  // 1.6 MB: several pieces, long enough to be preempted
  const int slow = n - 1;
  std::vector<std::int32_t> buf(count), want(count);
  for (int call = 0; call < 40; ++call) {
    buf = data<std::int32_t>(rank, call, count);
    if (rank == slow && call % 4 == 1) usleep(5000);
    comm.allReduce(buf.data(), buf.data(), count, blinkInt32, blinkSum);
    for (std::size_t i = 0; i < count; i += 997) {
      std::int32_t sum = 0;
      for (int r = 0; r < n; ++r) sum += value(r, call, i);
      ASSERT_EQ(buf[i], sum) << "AllReduce call " << call << " index " << i;
    }
  }
  // The readers of a Broadcast wait for the root only; the root waits for them only
  // before it rewrites what they may still read.
  for (int call = 0; call < 40; ++call) {
    buf = rank == 0 ? data<std::int32_t>(0, call, count) : std::vector<std::int32_t>(count, 0);
    if (rank == slow && call % 4 == 1) usleep(5000);
    comm.broadcast(buf.data(), buf.data(), count, blinkInt32, 0);
    ASSERT_EQ(buf, (data<std::int32_t>(0, call, count))) << "Broadcast call " << call;
  }
  EXPECT_EQ(callsOtherThan(comm, Algorithm::Direct), 0u);
}

// A Broadcast's readers write nothing in its round, so the AllReduce after it may
// start on their halves while a late peer still reads their halves of the AllReduce
// before: the halves (and the record of which half a round used) must not move
// under that peer. Calls alternate, the root moves, and a different rank is late.
TEST_P(DirectPath, ARoundThatOnlyReadsLeavesTheHalvesToLateReaders) {
  const int rank = worldRank(), n = worldSize();
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = 50021;  // one piece per rank: the rounds follow each other fast
  std::vector<std::int32_t> buf(count), out(count);
  for (int call = 0; call < 60; ++call) {
    buf = data<std::int32_t>(rank, call, count);
    if (rank == call % n && call % 3 != 0) usleep(2000);
    comm.allReduce(buf.data(), out.data(), count, blinkInt32, blinkSum);
    for (std::size_t i = 0; i < count; i += 101) {
      std::int32_t sum = 0;
      for (int r = 0; r < n; ++r) sum += value(r, call, i);
      ASSERT_EQ(out[i], sum) << "AllReduce call " << call << " index " << i;
    }
    const int root = (call + 1) % n;
    buf = rank == root ? data<std::int32_t>(root, call, count) : std::vector<std::int32_t>(count);
    comm.broadcast(buf.data(), buf.data(), count, blinkInt32, root);
    ASSERT_EQ(buf, (data<std::int32_t>(root, call, count))) << "Broadcast call " << call;
  }
  EXPECT_EQ(callsOtherThan(comm, Algorithm::Direct), 0u);
}

// Neither node algorithm applies between the board's capacity and the direct path's
// minimum: the planner's plans are the only candidates there.
TEST(ShmDirect, SizesBetweenTheBoardAndTheDirectPathTakePlans) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv board("BLINK_ONE_SHOT_MAX_BYTES", "4096");
  ScopedEnv direct("BLINK_SHM_DIRECT_MIN_BYTES", "8192");
  ScopedEnv single_copy("BLINK_SHM_SINGLE_COPY", "AUTO");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(4096, 3), b(4096, 0);
  comm.allReduce(a.data(), b.data(), 1024, blinkInt32, blinkSum);  // 4096 bytes: the board
  EXPECT_EQ(comm.callsWith(Algorithm::Board), 1u) << comm.explain();
  comm.allReduce(a.data(), b.data(), 2047, blinkInt32, blinkSum);  // 8188 bytes: a plan
  EXPECT_EQ(callsOtherThan(comm, Algorithm::Board) - comm.callsWith(Algorithm::Direct), 1u);
  EXPECT_EQ(b[2046], 3 * n);
  comm.allReduce(a.data(), b.data(), 2048, blinkInt32, blinkSum);  // 8192 bytes: any
  comm.allReduce(a.data(), b.data(), 4096, blinkInt32, blinkSum);
  EXPECT_EQ(comm.plansBuilt(), 4u);
  EXPECT_EQ(b[4095], 3 * n);
}

TEST(ShmDirect, SettingsTurnItOff) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  struct Case {
    std::vector<std::pair<const char*, const char*>> settings;
    const char* why;
  };
  const Case cases[] = {
      {{{"BLINK_SHM_DIRECT_MIN_BYTES", "0"}}, "BLINK_SHM_DIRECT_MIN_BYTES=0"},
      {{{"BLINK_SHM_STAGING_BYTES", "0"}, {"BLINK_SHM_SINGLE_COPY", "0"}},
       "BLINK_SHM_STAGING_BYTES=0 and BLINK_SHM_SINGLE_COPY=0"},
  };
  for (const Case& c : cases) {
    DirectFromSmallSizes settings;
    std::vector<std::unique_ptr<ScopedEnv>> off;
    for (const auto& [name, value] : c.settings)
      off.push_back(std::make_unique<ScopedEnv>(name, value));
    blink::runtime::Communicator comm(MPI_COMM_WORLD);
    std::vector<std::int32_t> a(1000, 5), b(1000, 0);
    comm.allReduce(a.data(), b.data(), a.size(), blinkInt32, blinkSum);
    EXPECT_EQ(b[999], 5 * n);
    EXPECT_EQ(comm.callsWith(Algorithm::Direct), 0u) << c.why;
    EXPECT_NE(comm.explain().find(std::string("direct: off (") + c.why + ")"), std::string::npos)
        << comm.explain();
  }
}

// The staging area needs no cross-memory attach, so BLINK_SHM_SINGLE_COPY=0 leaves
// it on; an area too small for the node's ranks gives way to cross-memory attach.
TEST(ShmDirect, TheWayBytesMoveFollowsTheSettings) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  struct Case {
    const char* staging;
    const char* single_copy;
    const char* expect;
  };
  const std::string too_small =
      std::to_string(blink::algorithms::ShmStaged::minimumBytesPerRank(n) - 1);
  const Case cases[] = {
      {"33554432", "0", "staging area in shared memory"},
      {"0", "AUTO", "cross-memory attach"},
      {too_small.c_str(), "AUTO", "cross-memory attach"},
  };
  for (const Case& c : cases) {
    DirectFromSmallSizes settings;
    ScopedEnv staging("BLINK_SHM_STAGING_BYTES", c.staging);
    ScopedEnv single_copy("BLINK_SHM_SINGLE_COPY", c.single_copy);
    blink::runtime::Communicator comm(MPI_COMM_WORLD);
    std::vector<std::int32_t> a(1000, 5), b(1000, 0);
    comm.allReduce(a.data(), b.data(), a.size(), blinkInt32, blinkSum);
    EXPECT_EQ(b[999], 5 * n);
    EXPECT_EQ(comm.callsWith(Algorithm::Direct), 1u);
    const std::string explain = comm.explain();
    EXPECT_NE(explain.find(c.expect), std::string::npos)
        << "staging " << c.staging << ", single copy " << c.single_copy << ":\n"
        << explain;
  }
}

// The area starts at 4 MiB per rank, grows on every rank at once to fit an
// AllGather or Broadcast in one round (a power of two), and stops at the setting.
// AllReduce pipelines small rounds and asks for no more than they need.
TEST(ShmDirect, TheStagingAreaGrowsToFitTheCallsUpToTheSetting) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  DirectFromSmallSizes settings;
  ScopedEnv staging("BLINK_SHM_STAGING_BYTES", "12582912");  // 12 MiB
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  auto perRankNow = [&] {
    const std::string explain = comm.explain();
    const auto at = explain.find(" bytes per rank now");
    EXPECT_NE(at, std::string::npos) << explain;
    const auto from = explain.rfind('(', at);
    return std::stoull(explain.substr(from + 1, at - from - 1));
  };
  const std::size_t block = 5 << 18;  // 5 MiB of int32
  std::vector<std::int32_t> a(block, rank + 1), b(block * static_cast<std::size_t>(n), 0);
  const std::int32_t want = n * (n + 1) / 2;
  comm.allReduce(a.data(), b.data(), block, blinkInt32, blinkSum);
  EXPECT_EQ(b[block - 1], want);
  // Rounds of 256 KiB per rank, or 1 MiB where ranks share cores: halves of at
  // most n MiB, rounded up to a power of two.
  EXPECT_LE(perRankNow(), std::max(4u, 2 * std::bit_ceil(static_cast<unsigned>(n))) << 20)
      << "AllReduce goes in small rounds";
  comm.allGather(a.data(), b.data(), 3 << 18, blinkInt32);  // 3 MiB: more than half of 4 MiB
  EXPECT_EQ(b[(static_cast<std::size_t>(n) * (3 << 18)) - 1], n);
  EXPECT_EQ(perRankNow(), 8u << 20);
  comm.allGather(a.data(), b.data(), block, blinkInt32);  // wants 16, capped at 12
  EXPECT_EQ(b[static_cast<std::size_t>(n) * block - 1], n);
  EXPECT_EQ(perRankNow(), 12u << 20);
  comm.allGather(a.data(), b.data(), 1000, blinkInt32);
  EXPECT_EQ(perRankNow(), 12u << 20) << "the area never shrinks";
}

TEST(ShmDirect, CommunicatorsAcrossNodesUsePlans) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  DirectFromSmallSizes settings;
  ScopedEnv node("BLINK_NODE_ID", rank % 2 == 0 ? "node-even" : "node-odd");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(1000, rank), b(1000, 0);
  comm.allReduce(a.data(), b.data(), a.size(), blinkInt32, blinkSum);
  EXPECT_EQ(b[999], n * (n - 1) / 2);
  EXPECT_EQ(comm.callsWith(Algorithm::Direct), 0u);
  EXPECT_NE(comm.explain().find("direct: off (the ranks span nodes)"), std::string::npos)
      << comm.explain();
}

TEST(ShmDirect, TheSettingsMustBeTheSameOnEveryRank) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  for (const char* name : {"BLINK_SHM_DIRECT_MIN_BYTES", "BLINK_SHM_STAGING_BYTES"}) {
    ScopedEnv differs(name, rank == 0 ? "1048576" : "2097152");
    blinkComm_t comm = nullptr;
    EXPECT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkInvalidUsage);
    EXPECT_NE(std::string(blinkGetLastError()).find(std::string(name) + " differs"),
              std::string::npos)
        << blinkGetLastError();
  }
}

TEST_P(DirectPath, APeerThatNeverArrivesIsNamed) {
  const int rank = worldRank(), n = worldSize();
  ScopedEnv timeout("BLINK_TIMEOUT_S", "1");
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  const int absent = n - 1;
  const bool agreement = blink::test::callsAgreeOnMemoryTypes();
  std::vector<float> a(4096, 1.0f), b(4096);
  // The path is set up at the first call, by everyone; then one rank stays away.
  ASSERT_EQ(blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm),
            blinkSuccess);
  if (rank != absent) {
    blinkResult_t rc = blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm);
    std::string msg = blinkGetLastError();
    EXPECT_EQ(rc, blinkTimeout) << msg;
    if (agreement) {
      EXPECT_NE(msg.find("agreeing on the memory types of the buffers"), std::string::npos) << msg;
    } else {
      EXPECT_NE(msg.find(GetParam() == Mover::CrossMemory ? "direct path, cross-memory attach"
                                                          : "direct path, staging area"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("waiting for rank " + std::to_string(absent)), std::string::npos) << msg;
    }
    // The call counts are lost: the communicator refuses further work.
    EXPECT_EQ(blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm),
              blinkInvalidUsage);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

}  // namespace
