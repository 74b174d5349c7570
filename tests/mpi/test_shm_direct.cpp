// The direct path for large collectives within a node (shm_direct.hpp): every rank
// reads its peers' buffers with cross-memory attach. Checked against PMPI_* for every
// collective it serves, in and out of place, with counts that leave some ranks an
// empty segment, that do not divide by the ranks and that span several of its
// pieces; buffers reused the moment a call returns, with a slow rank; the boundaries
// with the one-shot board and plans; the settings that turn it off; a setting that
// differs between ranks; and a peer that never arrives.
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

using blink::test::ScopedEnv;
using blink::test::worldRank;
using blink::test::worldSize;

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

// Every call of 16 bytes or more takes the direct path (the board is off).
struct DirectFromSmallSizes {
  ScopedEnv board{"BLINK_ONE_SHOT_MAX_BYTES", "0"};
  ScopedEnv direct{"BLINK_SHM_DIRECT_MIN_BYTES", "16"};
  ScopedEnv single_copy{"BLINK_SHM_SINGLE_COPY", "AUTO"};
};

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

TEST(ShmDirect, EveryCollectiveMatchesPmpi) {
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  DirectFromSmallSizes settings;
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
  EXPECT_EQ(comm.plansBuilt(), 0u) << "every call took the direct path";
  EXPECT_NE(comm.explain().find("16 bytes or more: the direct path"), std::string::npos)
      << comm.explain();
}

TEST(ShmDirect, AvgDividesOnce) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  DirectFromSmallSizes settings;
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  std::vector<double> in(100000, static_cast<double>(rank)), out(in.size(), -1);
  ASSERT_EQ(blinkAllReduce(in.data(), out.data(), in.size(), blinkFloat64, blinkAvg, comm),
            blinkSuccess);
  for (double v : out) ASSERT_EQ(v, (n - 1) / 2.0);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

// A rank may reuse its buffers as soon as its call returns, so it must not return
// while a peer still reads them. Here each rank rewrites its buffer at once for the
// next call, and one rank is often late: a peer that read the rewritten data would
// get the wrong sum.
TEST(ShmDirect, BuffersAreFreeTheMomentACallReturns) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  DirectFromSmallSizes settings;
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
  // The root of a Broadcast waits for every reader; the readers wait for nobody.
  for (int call = 0; call < 40; ++call) {
    buf = rank == 0 ? data<std::int32_t>(0, call, count) : std::vector<std::int32_t>(count, 0);
    if (rank == slow && call % 4 == 1) usleep(5000);
    comm.broadcast(buf.data(), buf.data(), count, blinkInt32, 0);
    ASSERT_EQ(buf, (data<std::int32_t>(0, call, count))) << "Broadcast call " << call;
  }
  EXPECT_EQ(comm.plansBuilt(), 0u);
}

TEST(ShmDirect, SizesBetweenTheBoardAndTheDirectPathTakePlans) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv board("BLINK_ONE_SHOT_MAX_BYTES", "4096");
  ScopedEnv direct("BLINK_SHM_DIRECT_MIN_BYTES", "8192");
  ScopedEnv single_copy("BLINK_SHM_SINGLE_COPY", "AUTO");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  std::vector<std::int32_t> a(4096, 3), b(4096, 0);
  comm.allReduce(a.data(), b.data(), 1024, blinkInt32, blinkSum);  // 4096 bytes: the board
  comm.allReduce(a.data(), b.data(), 2047, blinkInt32, blinkSum);  // 8188 bytes: a plan
  EXPECT_EQ(comm.plansBuilt(), 1u);
  EXPECT_EQ(b[2046], 3 * n);
  comm.allReduce(a.data(), b.data(), 2048, blinkInt32, blinkSum);  // 8192 bytes: direct
  comm.allReduce(a.data(), b.data(), 4096, blinkInt32, blinkSum);
  EXPECT_EQ(comm.plansBuilt(), 1u);
  EXPECT_EQ(b[4095], 3 * n);
}

TEST(ShmDirect, SettingsTurnItOff) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  for (const char* setting : {"BLINK_SHM_DIRECT_MIN_BYTES=0", "BLINK_SHM_SINGLE_COPY=0"}) {
    DirectFromSmallSizes settings;
    const std::string s(setting);
    const auto eq = s.find('=');
    ScopedEnv off(s.substr(0, eq).c_str(), s.substr(eq + 1));
    blink::runtime::Communicator comm(MPI_COMM_WORLD);
    std::vector<std::int32_t> a(1000, 5), b(1000, 0);
    comm.allReduce(a.data(), b.data(), a.size(), blinkInt32, blinkSum);
    EXPECT_EQ(b[999], 5 * n);
    EXPECT_EQ(comm.plansBuilt(), 1u) << setting;
    EXPECT_NE(comm.explain().find("Direct path: off (" + s + ")"), std::string::npos)
        << comm.explain();
  }
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
  EXPECT_EQ(comm.plansBuilt(), 1u);
  EXPECT_NE(comm.explain().find("Direct path: off (the ranks span nodes)"), std::string::npos)
      << comm.explain();
}

TEST(ShmDirect, TheSettingMustBeTheSameOnEveryRank) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv direct("BLINK_SHM_DIRECT_MIN_BYTES", rank == 0 ? "1048576" : "2097152");
  blinkComm_t comm = nullptr;
  EXPECT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkInvalidUsage);
  EXPECT_NE(std::string(blinkGetLastError()).find("BLINK_SHM_DIRECT_MIN_BYTES differs"),
            std::string::npos)
      << blinkGetLastError();
}

TEST(ShmDirect, APeerThatNeverArrivesIsNamed) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  DirectFromSmallSizes settings;
  ScopedEnv timeout("BLINK_TIMEOUT_S", "1");
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  const int absent = n - 1;
  std::vector<float> a(4096, 1.0f), b(4096);
  // The path is set up at the first call, by everyone; then one rank stays away.
  ASSERT_EQ(blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm),
            blinkSuccess);
  if (rank != absent) {
    blinkResult_t rc = blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm);
    std::string msg = blinkGetLastError();
    EXPECT_EQ(rc, blinkTimeout) << msg;
    EXPECT_NE(msg.find("direct shared-memory path"), std::string::npos) << msg;
    EXPECT_NE(msg.find("waiting for rank " + std::to_string(absent)), std::string::npos) << msg;
    // The call counts are lost: the communicator refuses further work.
    EXPECT_EQ(blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm),
              blinkInvalidUsage);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

}  // namespace
