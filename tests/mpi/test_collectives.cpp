// Blink's collectives through the C API, checked against PMPI_* on the same inputs
// (or, where MPI has no twin, an exact oracle): every collective, datatype and op,
// awkward counts, in-place, roots, several communicators, the plan cache, bad
// arguments and a peer that never arrives.
//
// Inputs are small integers (|x| <= 8; products over at most 8 ranks of
// {-2,-1,1,2}), so every sum, product, min and max is exact in every floating
// type whatever the reduction order: floating results can be compared exactly.
// RandomFloatsWithinOrderBound checks arbitrary floats against the bound that a
// different reduction order allows.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "collective_checks.hpp"
#include "common/build_config.h"
#include "mpi_test_support.hpp"
#include "runtime/communicator.hpp"
#include "runtime/reduce_cpu.hpp"

namespace {

using namespace collective_checks;  // NOLINT(google-build-using-namespace): the suite's own helpers

TEST(AllReduce, EveryTypeAndOp) {
  Comm comm(MPI_COMM_WORLD);
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1009}}) {
    for (blinkDataType_t t : kTypes) {
      for (blinkRedOp_t op : kOps) {
        if (op == blinkAvg && !isFloat(t)) continue;
        checkAllReduce(comm, t, op, count, false);
      }
    }
  }
}

TEST(AllReduce, CountsThatDivideNothing) {
  Comm comm(MPI_COMM_WORLD);
  // A prime count not divisible by the ranks, the chunk or the FIFO slot.
  for (blinkDataType_t t : {blinkInt32, blinkFloat64, blinkFloat16, blinkUint8}) {
    checkAllReduce(comm, t, blinkSum, 100003, false);
    checkAllReduce(comm, t, blinkMax, 100003, true);
  }
  checkAllReduce(comm, blinkFloat32, blinkSum, 0, false);
}

TEST(AllReduce, InPlace) {
  Comm comm(MPI_COMM_WORLD);
  for (blinkDataType_t t : kTypes) checkAllReduce(comm, t, blinkSum, 513, true);
  checkAllReduce(comm, blinkFloat32, blinkAvg, 513, true);
}

TEST(AllReduce, SixtyFourMebibytes) {
  Comm comm(MPI_COMM_WORLD);
  checkAllReduce(comm, blinkFloat32, blinkSum, std::size_t{16} << 20, false);
}

TEST(AllReduce, RandomFloatsWithinOrderBound) {
  Comm comm(MPI_COMM_WORLD);
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  const std::size_t count = 4099;
  std::vector<float> send(count), recv(count), ref(count), abs_in(count), abs_sum(count);
  std::srand(static_cast<unsigned>(rank) * 7919u + 1u);
  for (std::size_t i = 0; i < count; ++i) {
    send[i] = static_cast<float>(std::rand() % 100000) / 500.0f - 100.0f;
    abs_in[i] = std::fabs(send[i]);
  }
  ASSERT_EQ(blinkAllReduce(send.data(), recv.data(), count, blinkFloat32, blinkSum, comm.get()),
            blinkSuccess);
  PMPI_Allreduce(send.data(), ref.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                 MPI_COMM_WORLD);
  PMPI_Allreduce(abs_in.data(), abs_sum.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                 MPI_COMM_WORLD);
  // Any two summation orders of n terms differ by at most 2 (n - 1) eps sum|x|.
  const float eps = std::numeric_limits<float>::epsilon();
  for (std::size_t i = 0; i < count; ++i) {
    ASSERT_LE(std::fabs(recv[i] - ref[i]),
              2.0f * static_cast<float>(n - 1) * eps * abs_sum[i] * 1.01f)
        << "index " << i;
  }
  // Every rank holds the same bits.
  std::vector<float> first(recv);
  PMPI_Bcast(first.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
  ASSERT_EQ(std::memcmp(first.data(), recv.data(), count * sizeof(float)), 0);
}

TEST(Broadcast, EveryRootAndSize) {
  Comm comm(MPI_COMM_WORLD);
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  for (int root : {0, n - 1, n / 2}) {
    for (blinkDataType_t t : {blinkInt8, blinkFloat16, blinkFloat64}) {
      for (std::size_t count : {std::size_t{1}, std::size_t{1009}, std::size_t{300007}}) {
        std::vector<std::byte> data = inputs(root, count, t, blinkSum);
        std::vector<std::byte> got(data.size(), std::byte{0});
        if (rank == root) got = data;
        ASSERT_EQ(blinkBroadcast(got.data(), got.data(), count, t, root, comm.get()), blinkSuccess)
            << blinkGetLastError();
        ASSERT_EQ(got, data) << "root " << root << " " << label(t, blinkSum, count);
        // Out of place: the root's sendbuff is copied to every recvbuff.
        std::vector<std::byte> out(data.size(), std::byte{0});
        ASSERT_EQ(blinkBroadcast(rank == root ? data.data() : nullptr, out.data(), count, t, root,
                                 comm.get()),
                  blinkSuccess)
            << blinkGetLastError();
        ASSERT_EQ(out, data);
      }
    }
  }
}

TEST(Reduce, EveryRootAndOp) {
  Comm comm(MPI_COMM_WORLD);
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  for (int root : {0, n - 1}) {
    for (blinkDataType_t t : {blinkInt32, blinkUint64, blinkFloat32, blinkBfloat16}) {
      for (blinkRedOp_t op : kOps) {
        if (op == blinkAvg && !isFloat(t)) continue;
        const std::size_t count = 10007;
        std::vector<std::byte> send = inputs(rank, count, t, op);
        std::vector<std::byte> recv(send.size(), std::byte{0});
        ASSERT_EQ(blinkReduce(send.data(), rank == root ? recv.data() : nullptr, count, t, op, root,
                              comm.get()),
                  blinkSuccess)
            << blinkGetLastError();
        std::vector<std::byte> expected(send.size());
        if (needsOracle(t, op)) {
          expected = oracle(n, count, t, op);
        } else {
          PMPI_Reduce(send.data(), expected.data(), static_cast<int>(count), mpiType(t), mpiOp(op),
                      root, MPI_COMM_WORLD);
        }
        if (rank == root) {
          ASSERT_EQ(recv, expected) << "root " << root << " " << label(t, op, count);
        }
        // The send buffer is left alone.
        ASSERT_EQ(send, inputs(rank, count, t, op));
      }
    }
  }
}

TEST(AllGather, MatchesPmpi) {
  Comm comm(MPI_COMM_WORLD);
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  for (blinkDataType_t t : {blinkUint8, blinkInt16, blinkFloat64}) {
    for (std::size_t count :
         {std::size_t{1}, std::size_t{3}, std::size_t{10007}, std::size_t{262147}}) {
      std::vector<std::byte> send = inputs(rank, count, t, blinkSum);
      const std::size_t block = send.size();
      std::vector<std::byte> recv(block * static_cast<std::size_t>(n), std::byte{0});
      ASSERT_EQ(blinkAllGather(send.data(), recv.data(), count, t, comm.get()), blinkSuccess)
          << blinkGetLastError();
      std::vector<std::byte> expected(recv.size());
      PMPI_Allgather(send.data(), static_cast<int>(block), MPI_BYTE, expected.data(),
                     static_cast<int>(block), MPI_BYTE, MPI_COMM_WORLD);
      ASSERT_EQ(recv, expected) << label(t, blinkSum, count);
      // In place: the contribution already sits in its block.
      std::vector<std::byte> inplace(recv.size(), std::byte{0});
      std::memcpy(inplace.data() + static_cast<std::size_t>(rank) * block, send.data(), block);
      ASSERT_EQ(blinkAllGather(inplace.data() + static_cast<std::size_t>(rank) * block,
                               inplace.data(), count, t, comm.get()),
                blinkSuccess);
      ASSERT_EQ(inplace, expected) << "in place " << label(t, blinkSum, count);
    }
  }
}

TEST(ReduceScatter, MatchesPmpi) {
  Comm comm(MPI_COMM_WORLD);
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  for (blinkDataType_t t : {blinkInt64, blinkFloat32, blinkFloat16}) {
    for (blinkRedOp_t op : {blinkSum, blinkMax, blinkAvg}) {
      if (op == blinkAvg && !isFloat(t)) continue;
      for (std::size_t count : {std::size_t{1}, std::size_t{5003}}) {
        const std::size_t total = count * static_cast<std::size_t>(n);
        std::vector<std::byte> send = inputs(rank, total, t, op);
        const std::size_t block = count * blinkDataTypeSize(t);
        std::vector<std::byte> recv(block, std::byte{0});
        ASSERT_EQ(blinkReduceScatter(send.data(), recv.data(), count, t, op, comm.get()),
                  blinkSuccess)
            << blinkGetLastError();
        std::vector<std::byte> expected(block);
        if (needsOracle(t, op)) {
          expected = oracle(n, count, t, op, static_cast<std::size_t>(rank) * count);
        } else {
          PMPI_Reduce_scatter_block(send.data(), expected.data(), static_cast<int>(count),
                                    mpiType(t), mpiOp(op), MPI_COMM_WORLD);
        }
        ASSERT_EQ(recv, expected) << label(t, op, count);
        // In place: recvbuff is the rank's own block of sendbuff.
        std::vector<std::byte> inplace = send;
        std::byte* mine = inplace.data() + static_cast<std::size_t>(rank) * block;
        ASSERT_EQ(blinkReduceScatter(inplace.data(), mine, count, t, op, comm.get()), blinkSuccess);
        ASSERT_EQ(std::memcmp(mine, expected.data(), block), 0)
            << "in place " << label(t, op, count);
      }
    }
  }
}

TEST(Communicators, SplitAndDupAliveTogether) {
  const int rank = commRank(MPI_COMM_WORLD);
  MPI_Comm half = MPI_COMM_NULL, dup = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);  // reversed order inside each half
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  {
    Comm world(MPI_COMM_WORLD), h(half), d(dup);
    for (int round = 0; round < 3; ++round) {
      checkAllReduce(h, blinkInt32, blinkSum, 4099, false);
      checkAllReduce(world, blinkFloat64, blinkMin, 777, false);
      checkAllReduce(d, blinkUint16, blinkMax, 4099, round % 2 == 1);
    }
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
}

// Ranks of one machine grouped as two nodes: streams between them take the
// default transport, ucx where it is built (pmpi otherwise).
TEST(Communicators, EmulatedNodesStreamBetweenThem) {
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO fixes the nodes";
  blink::test::ScopedEnv node("BLINK_NODE_ID", rank % 2 == 0 ? "node-even" : "node-odd");
  Comm comm(MPI_COMM_WORLD);
  char text[4096];
  size_t length = 0;
  ASSERT_EQ(blinkCommExplain(comm.get(), text, sizeof(text), &length), blinkSuccess);
  EXPECT_NE(std::string(text).find("2 node(s)"), std::string::npos) << text;
  if (std::getenv("BLINK_TRANSPORT") == nullptr) {
    const std::string between = BLINK_HAVE_UCX ? "ucx between nodes" : "pmpi between nodes";
    EXPECT_NE(std::string(text).find(between), std::string::npos) << text;
  }
  checkAllReduce(comm, blinkFloat32, blinkSum, 100003, false);
  checkAllReduce(comm, blinkInt64, blinkProd, 1009, true);
}

// Every collective at 0..4 KiB, in place and not, against PMPI: on one node the
// board serves these sizes, across nodes (emulated hosts, or BLINK_NODE_ID below)
// the board on each node with rounds between the node leaders, which the cost model
// must prefer to the plans at these sizes for AllReduce, Broadcast, Reduce and Barrier.
void checkSmallCalls(blink::runtime::Communicator& comm) {
  using blink::runtime::Algorithm;
  const int rank = comm.rank(), n = comm.size();
  const auto un = static_cast<std::size_t>(n);
  const auto me = static_cast<std::size_t>(rank);
  std::uint64_t calls = 0;
  for (std::size_t total_bytes :
       {std::size_t{0}, std::size_t{4}, std::size_t{60}, std::size_t{1000}, std::size_t{4096}}) {
    for (blinkDataType_t t : {blinkInt32, blinkFloat32}) {
      const std::size_t count = total_bytes / 4;
      const std::string what = label(t, blinkSum, count);
      for (bool in_place : {false, true}) {
        for (blinkRedOp_t op : {blinkSum, blinkMax}) {
          std::vector<std::byte> send = inputs(rank, count, t, op), got(send.size());
          if (in_place) got = send;
          comm.allReduce(in_place ? got.data() : send.data(), got.data(), count, t, op);
          std::vector<std::byte> want(send.size());
          PMPI_Allreduce(send.data(), want.data(), static_cast<int>(count), mpiType(t), mpiOp(op),
                         MPI_COMM_WORLD);
          ASSERT_EQ(got, want) << "AllReduce " << what << (in_place ? " in place" : "");
          calls += count > 0 ? 1 : 0;
        }
        for (int root = 0; root < n; ++root) {
          // Broadcast: in place on the root is the only form.
          std::vector<std::byte> data = inputs(root + 3, count, t, blinkSum);
          std::vector<std::byte> got = rank == root ? data : std::vector<std::byte>(data.size());
          comm.broadcast(got.data(), got.data(), count, t, root);
          ASSERT_EQ(got, data) << "Broadcast root " << root << " " << what;
          // Reduce, the result on the root only.
          std::vector<std::byte> send = inputs(rank, count, t, blinkSum), out(send.size());
          if (in_place && rank == root) out = send;
          comm.reduce(in_place && rank == root ? out.data() : send.data(),
                      rank == root ? out.data() : nullptr, count, t, blinkSum, root);
          std::vector<std::byte> want(send.size());
          PMPI_Reduce(send.data(), want.data(), static_cast<int>(count), mpiType(t), MPI_SUM, root,
                      MPI_COMM_WORLD);
          if (rank == root) {
            ASSERT_EQ(out, want) << "Reduce root " << root << " " << what;
          }
          calls += count > 0 ? 2 : 0;
        }
        // AllGather and ReduceScatter: `total_bytes` for the whole buffer.
        const std::size_t block_count = count / un;
        const std::size_t block = block_count * 4;
        std::vector<std::byte> mine = inputs(rank, block_count, t, blinkSum);
        std::vector<std::byte> gathered(block * un), want(block * un);
        if (in_place) std::memcpy(gathered.data() + me * block, mine.data(), block);
        comm.allGather(in_place ? gathered.data() + me * block : mine.data(), gathered.data(),
                       block_count, t);
        PMPI_Allgather(mine.data(), static_cast<int>(block), MPI_BYTE, want.data(),
                       static_cast<int>(block), MPI_BYTE, MPI_COMM_WORLD);
        ASSERT_EQ(gathered, want) << "AllGather " << label(t, blinkSum, block_count);
        std::vector<std::byte> all = inputs(rank, block_count * un, t, blinkSum);
        std::vector<std::byte> scattered(block), expected(block);
        std::vector<std::byte> inplace = all;
        comm.reduceScatter(in_place ? inplace.data() : all.data(),
                           in_place ? inplace.data() : scattered.data(), block_count, t, blinkSum);
        if (in_place) std::memcpy(scattered.data(), inplace.data(), block);
        PMPI_Reduce_scatter_block(all.data(), expected.data(), static_cast<int>(block_count),
                                  mpiType(t), MPI_SUM, MPI_COMM_WORLD);
        ASSERT_EQ(scattered, expected) << "ReduceScatter " << label(t, blinkSum, block_count);
      }
    }
  }
  comm.barrier();
  ++calls;
  // AllGather and ReduceScatter may take a plan where nodes differ in size (a plan's
  // ranks cross nodes in parallel, one board phase fewer on the model's clock).
  if (comm.layout().num_nodes > 1) {
    EXPECT_GE(comm.callsWith(Algorithm::Leaders), calls) << comm.explain();
  }
}

TEST(SmallCalls, EveryCollectiveUpToFourKibibytes) {
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  checkSmallCalls(comm);
}

// Nodes of unequal rank counts (ranks 0 and n-1 on one node, the others on the
// other) where the machine's hosts do not make nodes (multihost.sh runs the test
// above across emulated hosts instead).
TEST(SmallCalls, OnNodesEmulatedByNodeId) {
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO fixes the nodes";
  blink::test::ScopedEnv node("BLINK_NODE_ID",
                              rank == 0 || rank == n - 1 ? "node-ends" : "node-middle");
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  ASSERT_EQ(comm.layout().num_nodes, n > 2 ? 2 : 1);
  checkSmallCalls(comm);
}

TEST(PlanCache, RepeatedCallsReuseThePlan) {
  const blink::test::ScopedEnv no_board("BLINK_ONE_SHOT_MAX_BYTES", "0");     // small calls too
  const blink::test::ScopedEnv no_direct("BLINK_SHM_DIRECT_MIN_BYTES", "0");  // and large ones
  blink::runtime::Communicator comm(MPI_COMM_WORLD);
  const int n = commSize(MPI_COMM_WORLD);
  std::vector<float> a(50000, 1.0f), b(50000);
  for (int i = 0; i < 5; ++i) comm.allReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum);
  for (int i = 0; i < 5; ++i) comm.allReduce(a.data(), b.data(), 1000, blinkFloat32, blinkSum);
  const std::size_t expected = n > 1 ? 2 : 0;
  EXPECT_EQ(comm.plansBuilt(), expected);
  EXPECT_EQ(b[0], static_cast<float>(n));
  // Same size, another type of the same width: the same plan serves it.
  std::vector<std::int32_t> c(1000, 2), d(1000);
  comm.allReduce(c.data(), d.data(), c.size(), blinkInt32, blinkSum);
  EXPECT_EQ(comm.plansBuilt(), expected);
  EXPECT_EQ(d[999], 2 * n);
}

TEST(Arguments, BadOnesAreErrorsNotCrashes) {
  Comm comm(MPI_COMM_WORLD);
  const int n = commSize(MPI_COMM_WORLD);
  float x[4] = {1, 2, 3, 4}, y[4];
  EXPECT_EQ(blinkAllReduce(nullptr, y, 4, blinkFloat32, blinkSum, comm.get()),
            blinkInvalidArgument);
  EXPECT_EQ(blinkAllReduce(x, nullptr, 4, blinkFloat32, blinkSum, comm.get()),
            blinkInvalidArgument);
  EXPECT_EQ(blinkAllReduce(nullptr, nullptr, 0, blinkFloat32, blinkSum, comm.get()), blinkSuccess);
  EXPECT_EQ(blinkAllReduce(x, y, 4, static_cast<blinkDataType_t>(blinkNumTypes + 3), blinkSum,
                           comm.get()),
            blinkInvalidArgument);
  EXPECT_EQ(
      blinkAllReduce(x, y, 4, blinkFloat32, static_cast<blinkRedOp_t>(blinkNumOps + 1), comm.get()),
      blinkInvalidArgument);
  EXPECT_EQ(blinkAllReduce(x, y, 4, blinkInt32, blinkAvg, comm.get()), blinkInvalidArgument);
  EXPECT_EQ(blinkBroadcast(x, y, 4, blinkFloat32, n, comm.get()), blinkInvalidArgument);
  EXPECT_EQ(blinkBroadcast(x, y, 4, blinkFloat32, -1, comm.get()), blinkInvalidArgument);
  EXPECT_EQ(blinkReduce(x, y, 4, blinkFloat32, blinkSum, n + 3, comm.get()), blinkInvalidArgument);
  EXPECT_EQ(blinkAllReduce(x, y, 4, blinkFloat32, blinkSum, nullptr), blinkInvalidArgument);
  EXPECT_NE(std::string(blinkGetLastError()), "");
  blinkComm_t gone = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&gone, MPI_COMM_WORLD), blinkSuccess);
  ASSERT_EQ(blinkCommDestroy(gone), blinkSuccess);
  EXPECT_EQ(blinkAllReduce(x, y, 4, blinkFloat32, blinkSum, gone), blinkInvalidUsage);
  EXPECT_EQ(blinkCommDestroy(gone), blinkInvalidUsage);
  EXPECT_EQ(blinkCommInitFromMPI(nullptr, MPI_COMM_WORLD), blinkInvalidArgument);
  blinkComm_t none = nullptr;
  EXPECT_EQ(blinkCommInitFromMPI(&none, MPI_COMM_NULL), blinkInvalidArgument);
  int count = 0, rank = -1;
  EXPECT_EQ(blinkCommCount(comm.get(), &count), blinkSuccess);
  EXPECT_EQ(count, n);
  EXPECT_EQ(blinkCommUserRank(comm.get(), &rank), blinkSuccess);
  EXPECT_EQ(rank, commRank(MPI_COMM_WORLD));
}

// Counts are size_t end to end: beyond 2^31 elements nothing truncates them (a
// one-rank communicator in place moves no data, so the test needs no 2 GiB), and a
// count whose bytes do not fit 64 bits is a clear error before anything moves.
TEST(Arguments, CountsBeyondTwoToTheThirtyOneAreSizeT) {
  blinkComm_t self = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&self, MPI_COMM_SELF), blinkSuccess);
  std::vector<std::uint8_t> one(16, 7);
  const std::size_t huge = (std::size_t{1} << 33) + 5;
  EXPECT_EQ(blinkBroadcast(one.data(), one.data(), huge, blinkUint8, 0, self), blinkSuccess)
      << blinkGetLastError();
  EXPECT_EQ(blinkAllReduce(one.data(), one.data(), huge, blinkUint8, blinkSum, self), blinkSuccess)
      << blinkGetLastError();
  const std::size_t too_many = std::numeric_limits<std::size_t>::max() / 4;
  EXPECT_EQ(blinkAllReduce(one.data(), one.data(), too_many, blinkFloat64, blinkSum, self),
            blinkInvalidArgument);
  EXPECT_NE(std::string(blinkGetLastError()).find("count is too large"), std::string::npos)
      << blinkGetLastError();
  Comm comm(MPI_COMM_WORLD);
  if (commSize(MPI_COMM_WORLD) > 1) {
    // size * sendcount overflows although sendcount * element size does not.
    const std::size_t block = std::numeric_limits<std::size_t>::max() / 2 + 1;
    EXPECT_EQ(blinkAllGather(one.data(), one.data(), block, blinkUint8, comm.get()),
              blinkInvalidArgument);
    EXPECT_NE(std::string(blinkGetLastError()).find("count is too large"), std::string::npos)
        << blinkGetLastError();
  }
  EXPECT_EQ(blinkCommDestroy(self), blinkSuccess);
}

TEST(Timeout, APeerThatNeverArrivesIsNamed) {
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  setenv("BLINK_TIMEOUT_S", "2", 1);
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  unsetenv("BLINK_TIMEOUT_S");
  const int absent = n - 1;
  const bool agreement = blink::test::callsAgreeOnMemoryTypes();
  std::vector<float> a(100000, 1.0f), b(100000);
  // Everyone builds the plan together (plan building is collective); then one rank
  // stays away from the next call.
  ASSERT_EQ(blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm),
            blinkSuccess);
  if (rank != absent) {
    blinkResult_t rc = blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm);
    std::string msg = blinkGetLastError();
    EXPECT_EQ(rc, blinkTimeout) << msg;
    if (agreement) {
      EXPECT_NE(msg.find("agreeing on the memory types of the buffers"), std::string::npos) << msg;
    } else {
      EXPECT_NE(msg.find("no progress"), std::string::npos) << msg;
      EXPECT_NE(msg.find("rank "), std::string::npos) << msg;
    }
    // The streams stopped mid-message: the communicator refuses further work.
    EXPECT_EQ(blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat32, blinkSum, comm),
              blinkInvalidUsage);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

TEST(Timeout, APeerThatNeverComesToBuildThePlan) {
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  setenv("BLINK_TIMEOUT_S", "1", 1);
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess);
  unsetenv("BLINK_TIMEOUT_S");
  std::vector<double> a(777, 1.0), b(777);
  if (rank != 0) {
    // A size never seen: building its plan needs every rank, and rank 0 stays away.
    blinkResult_t rc = blinkAllReduce(a.data(), b.data(), a.size(), blinkFloat64, blinkSum, comm);
    std::string msg = blinkGetLastError();
    EXPECT_EQ(rc, blinkTimeout) << msg;
    EXPECT_NE(msg.find("BLINK_TIMEOUT_S"), std::string::npos) << msg;
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

}  // namespace

using namespace collective_checks;  // NOLINT(google-build-using-namespace): the suite's own helpers

// ---- The barrier ----------------------------------------------------------------------

// The barrier: every rank writes its slot of a shared window, then waits; afterwards
// every slot must show the round number (a rank that left early could read an old one).
TEST(Barrier, NoRankLeavesBeforeEveryRankArrived) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  const int rank = commRank(node), n = commSize(node);
  {
    Comm comm(node);
    int* base = nullptr;
    MPI_Win win = MPI_WIN_NULL;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(sizeof(int)), sizeof(int), MPI_INFO_NULL, node,
                            &base, &win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    std::vector<volatile int*> slots(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      MPI_Aint size = 0;
      int unit = 0;
      int* p = nullptr;
      MPI_Win_shared_query(win, r, &size, &unit, &p);
      slots[static_cast<std::size_t>(r)] = p;
    }
    *slots[static_cast<std::size_t>(rank)] = 0;
    ASSERT_EQ(blinkBarrier(comm.get()), blinkSuccess) << blinkGetLastError();
    for (int round = 1; round <= 50; ++round) {
      *slots[static_cast<std::size_t>(rank)] = round;
      MPI_Win_sync(win);
      ASSERT_EQ(blinkBarrier(comm.get()), blinkSuccess) << blinkGetLastError();
      MPI_Win_sync(win);
      for (int r = 0; r < n; ++r) {
        ASSERT_GE(*slots[static_cast<std::size_t>(r)], round) << "rank " << r << " round " << round;
      }
      // Nobody writes the next round before everyone has read this one.
      ASSERT_EQ(blinkBarrier(comm.get()), blinkSuccess) << blinkGetLastError();
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
  }
  MPI_Comm_free(&node);
}
