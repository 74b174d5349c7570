// The planner decides how every call runs (runtime/algorithm_choice.hpp), and the
// decision is what runs: checked through the communicator's per-algorithm call
// counts, with every result equal to PMPI_* on the same inputs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "mpi_test_support.hpp"
#include "runtime/communicator.hpp"

namespace {

using blink::runtime::Algorithm;
using blink::runtime::Communicator;
using blink::test::ScopedEnv;
using blink::test::worldRank;
using blink::test::worldSize;

enum class Coll { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter };
constexpr Coll kAll[] = {Coll::AllReduce, Coll::Broadcast, Coll::Reduce, Coll::AllGather,
                         Coll::ReduceScatter};

const char* name(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return "allreduce";
    case Coll::Broadcast:
      return "broadcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::AllGather:
      return "allgather";
    case Coll::ReduceScatter:
      return "reducescatter";
  }
  return "?";
}

std::uint64_t totalCalls(const Communicator& comm) {
  std::uint64_t n = 0;
  for (int a = 0; a < blink::runtime::kNumAlgorithms; ++a) {
    n += comm.callsWith(static_cast<Algorithm>(a));
  }
  return n;
}

std::vector<std::int32_t> input(int rank, int call, std::size_t count) {
  std::vector<std::int32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = static_cast<std::int32_t>((rank * 7919 + call * 104729 + static_cast<int>(i)) % 1000);
  }
  return v;
}

// One call of `c` moving `count` int32 per rank (the whole buffer for AllReduce,
// Broadcast, Reduce; one block for AllGather, ReduceScatter), root `root`,
// compared with PMPI_* on the same inputs.
void checkAgainstPmpi(Communicator& comm, Coll c, std::size_t count, int root, int call) {
  const int rank = worldRank(), n = worldSize();
  const auto un = static_cast<std::size_t>(n);
  const int icount = static_cast<int>(count);
  std::vector<std::int32_t> got, want;
  switch (c) {
    case Coll::AllReduce: {
      auto in = input(rank, call, count);
      got.assign(count, -1);
      want.assign(count, -2);
      comm.allReduce(in.data(), got.data(), count, blinkInt32, blinkSum);
      PMPI_Allreduce(in.data(), want.data(), icount, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
      break;
    }
    case Coll::Broadcast: {
      got = rank == root ? input(root, call, count) : std::vector<std::int32_t>(count, -1);
      want = input(root, call, count);
      comm.broadcast(got.data(), got.data(), count, blinkInt32, root);
      break;
    }
    case Coll::Reduce: {
      auto in = input(rank, call, count);
      got.assign(count, -1);
      want.assign(count, -1);
      comm.reduce(in.data(), got.data(), count, blinkInt32, blinkSum, root);
      PMPI_Reduce(in.data(), want.data(), icount, MPI_INT32_T, MPI_SUM, root, MPI_COMM_WORLD);
      if (rank != root) got = want;  // only the root's result is defined
      break;
    }
    case Coll::AllGather: {
      auto in = input(rank, call, count);
      got.assign(count * un, -1);
      want.assign(count * un, -2);
      comm.allGather(in.data(), got.data(), count, blinkInt32);
      PMPI_Allgather(in.data(), icount, MPI_INT32_T, want.data(), icount, MPI_INT32_T,
                     MPI_COMM_WORLD);
      break;
    }
    case Coll::ReduceScatter: {
      auto in = input(rank, call, count * un);
      got.assign(count, -1);
      want.assign(count, -2);
      comm.reduceScatter(in.data(), got.data(), count, blinkInt32, blinkSum);
      PMPI_Reduce_scatter_block(in.data(), want.data(), icount, MPI_INT32_T, MPI_SUM,
                                MPI_COMM_WORLD);
      break;
    }
  }
  ASSERT_EQ(got, want) << name(c) << " of " << count << " int32, root " << root << ", call "
                       << call;
}

// On a reference machine (BLINK_TOPO, set by the ctest variants), calls of 1 MiB
// and more run the planner's plans, not the shared-memory shortcuts, and Blink's
// trees among them wherever they are predicted fastest.
TEST(AlgorithmChoice, LargeCallsOnAReferenceMachineRunPlans) {
  if (std::getenv("BLINK_TOPO") == nullptr) GTEST_SKIP() << "needs BLINK_TOPO";
  Communicator comm(MPI_COMM_WORLD);
  const int n = worldSize();
  int call = 0;
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{4} << 20}) {
    for (Coll c : kAll) {
      const std::uint64_t before_plans =
          totalCalls(comm) - comm.callsWith(Algorithm::Board) - comm.callsWith(Algorithm::Direct);
      const bool blocks = c == Coll::AllGather || c == Coll::ReduceScatter;
      const std::size_t count = bytes / 4 / (blocks ? static_cast<std::size_t>(n) : 1);
      checkAgainstPmpi(comm, c, count, call % n, call);
      ++call;
      const std::uint64_t plans =
          totalCalls(comm) - comm.callsWith(Algorithm::Board) - comm.callsWith(Algorithm::Direct);
      EXPECT_EQ(plans, before_plans + 1) << name(c) << " of " << bytes << " bytes:\n"
                                         << comm.explain();
    }
  }
  EXPECT_EQ(comm.callsWith(Algorithm::Board) + comm.callsWith(Algorithm::Direct), 0u);
  // Blink's own trees win somewhere on every reference topology the suite runs.
  EXPECT_GT(comm.callsWith(Algorithm::Trees), 0u) << comm.explain();
  if (worldRank() == 0) {
    std::printf("[ calls ] trees=%llu ring=%llu dbt=%llu on %s\n",
                static_cast<unsigned long long>(comm.callsWith(Algorithm::Trees)),
                static_cast<unsigned long long>(comm.callsWith(Algorithm::Ring)),
                static_cast<unsigned long long>(comm.callsWith(Algorithm::DoubleBinaryTree)),
                std::getenv("BLINK_TOPO"));
  }
}

// Whether BLINK_ALGO's `algorithm` can serve `c` on this communicator.
bool applies(Algorithm algorithm, Coll c, bool multi_node) {
  switch (algorithm) {
    case Algorithm::Board:
    case Algorithm::Direct:
      return !multi_node;
    case Algorithm::Hierarchical:
    case Algorithm::Leaders:
      return multi_node;
    case Algorithm::DoubleBinaryTree:
      return c != Coll::AllGather && c != Coll::ReduceScatter;
    case Algorithm::Trees:
    case Algorithm::Ring:
      return true;
  }
  return false;
}

// Every algorithm forced for every collective it serves: the counts show it ran,
// and the results equal PMPI. Elsewhere the planner's own choice runs instead.
void forceEveryAlgorithm(bool multi_node) {
  const int n = worldSize();
  for (int a = 0; a < blink::runtime::kNumAlgorithms; ++a) {
    const auto algorithm = static_cast<Algorithm>(a);
    for (Coll c : kAll) {
      const std::string setting =
          std::string(name(c)) + ":" + std::string(blink::runtime::toString(algorithm));
      ScopedEnv algo("BLINK_ALGO", setting);
      Communicator comm(MPI_COMM_WORLD);
      const bool blocks = c == Coll::AllGather || c == Coll::ReduceScatter;
      // The board holds 32 KiB; the direct path starts at 32 KiB.
      std::vector<std::size_t> totals = {4096, 65536 + 52, (std::size_t{1} << 20) + 4 * 13};
      if (algorithm == Algorithm::Board || algorithm == Algorithm::Leaders) totals = {1024, 4096};
      if (algorithm == Algorithm::Direct) totals = {65536 + 52, (std::size_t{1} << 20) + 4 * 13};
      int call = 0;
      for (std::size_t total : totals) {
        std::size_t count = total / 4 / (blocks ? static_cast<std::size_t>(n) : 1);
        if (count == 0) count = 1;
        checkAgainstPmpi(comm, c, count, (call + 1) % n, call);
        ++call;
      }
      if (applies(algorithm, c, multi_node)) {
        EXPECT_EQ(comm.callsWith(algorithm), totals.size()) << setting << ":\n" << comm.explain();
      } else {
        EXPECT_EQ(comm.callsWith(algorithm), 0u) << setting;
        EXPECT_NE(
            comm.explain().find("BLINK_ALGO's " + std::string(blink::runtime::toString(algorithm)) +
                                " does not apply"),
            std::string::npos)
            << setting << ":\n"
            << comm.explain();
      }
    }
  }
}

TEST(AlgorithmChoice, ForcedAlgorithmsMatchPmpiOnOneNode) {
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO fixes the nodes";
  forceEveryAlgorithm(false);
}

TEST(AlgorithmChoice, ForcedAlgorithmsMatchPmpiOnTwoEmulatedNodes) {
  const int rank = worldRank();
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  if (std::getenv("BLINK_TOPO") != nullptr) GTEST_SKIP() << "BLINK_TOPO fixes the nodes";
  ScopedEnv node("BLINK_NODE_ID", rank % 2 == 0 ? "node-even" : "node-odd");
  forceEveryAlgorithm(true);
}

TEST(AlgorithmChoice, AnUnknownAlgorithmIsAnErrorOnEveryRank) {
  ScopedEnv algo("BLINK_ALGO", "allreduce:fastest");
  blinkComm_t comm = nullptr;
  EXPECT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkInvalidInput);
  EXPECT_NE(std::string(blinkGetLastError()).find("unknown algorithm 'fastest'"), std::string::npos)
      << blinkGetLastError();
}

TEST(AlgorithmChoice, EveryStreamCanTakeThePmpiTransport) {
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks";
  ScopedEnv transport("BLINK_TRANSPORT", "pmpi");
  ScopedEnv algo("BLINK_ALGO", "trees");
  Communicator comm(MPI_COMM_WORLD);
  for (Coll c : kAll) checkAgainstPmpi(comm, c, 70001, 0, 1);
  EXPECT_EQ(comm.callsWith(Algorithm::Trees), 5u);
  EXPECT_NE(comm.explain().find("Streams of plans: pmpi within a node, pmpi between nodes"),
            std::string::npos)
      << comm.explain();
}

}  // namespace
