// The node leaders' algorithm (algorithms/node_leaders.hpp) on its own: ranks grouped
// into emulated nodes (rank % k: nodes of unequal sizes, ranks of a node not
// contiguous), each node's board over shared memory, the leaders' messages over the
// PMPI transport, both as it moves a round (every message its own request, one poll
// for all: PmpiTransport::moveAllAtOnce) and through its streams one by one (as
// over UCX). Every shape between the leaders runs (on 2 to 7 nodes with NP 7): one
// round, the log rounds (recursive doubling with the fix-up for a node count that is
// not a power of two, binomial trees) and via the first leader (where it applies); and
// MPI's own collectives among the leaders (PMPI_* on their communicator; a Reduce
// whose root is no leader, and so not served that way, takes one round).
// Every collective, in place and not, every root, against PMPI_*.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/node_leaders.hpp"
#include "algorithms/shm_one_shot.hpp"
#include "common/backoff.hpp"
#include "mpi_test_support.hpp"
#include "runtime/reduce_cpu.hpp"
#include "transport/pmpi/pmpi_transport.hpp"

namespace {

using blink::algorithms::NodeLeaders;
using blink::test::callValues;
using blink::test::worldRank;
using blink::test::worldSize;

constexpr std::size_t kCapacity = 8192;
constexpr double kTimeout = 60.0;

const NodeLeaders::MpiReduction kMpiSum{MPI_INT32_T, MPI_SUM, 4};

const blink::Combine kSum = [](std::byte* inout, const std::byte* in, std::size_t bytes) {
  blink::runtime::reduceInto(inout, in, bytes / 4, blinkInt32, blinkSum);
};

// A transport's streams without its round-at-once path: the leaders then drive
// the streams one by one, as they do over UCX.
class StreamsOnly final : public blink::transport::Transport {
 public:
  explicit StreamsOnly(blink::transport::Transport& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name() + " (streams only)"; }
  void ensureStreams(const std::vector<blink::transport::StreamKey>& sends,
                     const std::vector<blink::transport::StreamKey>& recvs) override {
    inner_.ensureStreams(sends, recvs);
  }
  blink::transport::SendStream& sendStream(blink::transport::StreamKey key) override {
    return inner_.sendStream(key);
  }
  blink::transport::RecvStream& recvStream(blink::transport::StreamKey key) override {
    return inner_.recvStream(key);
  }

 private:
  blink::transport::Transport& inner_;
};

// Everything one layout needs: rank r on node r % nodes.
class EmulatedNodes {
 public:
  // mpi_on_all: MPI's own collective on every rank (useMpiOnAll) instead of `shape`.
  EmulatedNodes(int nodes, NodeLeaders::Shape shape, bool streams_only, bool mpi_on_all = false) {
    const int rank = worldRank(), n = worldSize();
    NodeLeaders::Layout layout;
    layout.rank = rank;
    for (int r = 0; r < n; ++r) {
      layout.node_of_rank.push_back(r % nodes);
      layout.local_rank_of_rank.push_back(r / nodes);
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank % nodes, rank, &node_comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    int local_size = 0;
    MPI_Comm_size(node_comm_, &local_size);
    if (local_size > 1) {
      board_ = std::make_unique<blink::algorithms::ShmOneShot>(node_comm_, kCapacity, kTimeout);
    }
    transport_ = std::make_unique<blink::transport::PmpiTransport>(comm_);
    streams_only_ = std::make_unique<StreamsOnly>(*transport_);
    blink::transport::Transport& between =
        streams_only ? static_cast<blink::transport::Transport&>(*streams_only_) : *transport_;
    leaders_ = std::make_unique<NodeLeaders>(board_.get(), between, layout, kCapacity, kTimeout);
    MPI_Comm_split(MPI_COMM_WORLD, rank / nodes == 0 ? 0 : MPI_UNDEFINED, rank % nodes,
                   &leaders_comm_);
    leaders_->setLeadersComm(leaders_comm_);
    leaders_->setWholeComm(comm_);
    for (auto collective :
         {blink::plan::Collective::Broadcast, blink::plan::Collective::Reduce,
          blink::plan::Collective::AllGather, blink::plan::Collective::ReduceScatter,
          blink::plan::Collective::AllReduce}) {
      const auto applies = NodeLeaders::shapesFor(collective);
      // Via the first leader is one round for the rooted ones.
      const bool fits = std::find(applies.begin(), applies.end(), shape) != applies.end();
      leaders_->setShape(collective, fits ? shape : NodeLeaders::Shape::OneRound);
      if (shape == NodeLeaders::Shape::Mpi) leaders_->useMpi(collective, true);
      leaders_->useMpiOnAll(collective, mpi_on_all);
    }
    const auto keys = leaders_->streamsNeeded();
    between.ensureStreams(keys, keys);
  }
  ~EmulatedNodes() {
    leaders_.reset();
    streams_only_.reset();
    transport_.reset();
    board_.reset();
    MPI_Comm_free(&comm_);
    MPI_Comm_free(&node_comm_);
    if (leaders_comm_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_comm_);
  }
  NodeLeaders& leaders() { return *leaders_; }

 private:
  MPI_Comm node_comm_ = MPI_COMM_NULL, comm_ = MPI_COMM_NULL, leaders_comm_ = MPI_COMM_NULL;
  std::unique_ptr<blink::algorithms::ShmOneShot> board_;
  std::unique_ptr<blink::transport::PmpiTransport> transport_;
  std::unique_ptr<StreamsOnly> streams_only_;
  std::unique_ptr<NodeLeaders> leaders_;
};

std::byte* bytesOf(std::vector<std::int32_t>& v) {
  return reinterpret_cast<std::byte*>(v.data());
}

void checkEveryCollective(NodeLeaders& leaders, const std::string& what) {
  const int rank = worldRank(), n = worldSize();
  const auto un = static_cast<std::size_t>(n);
  int call = 0;
  for (std::size_t count : {std::size_t{1}, std::size_t{5}, std::size_t{kCapacity / 4 / un}}) {
    const std::size_t bytes = count * 4;
    for (bool in_place : {false, true}) {
      const std::string at =
          what + ", " + std::to_string(count) + " int32" + (in_place ? " in place" : "");
      ++call;
      std::vector<std::int32_t> in = callValues(rank, call, count), out(count, -7), want(count);
      if (in_place) out = in;
      leaders.allReduce(bytesOf(in_place ? out : in), bytesOf(out), bytes, kSum, kMpiSum);
      MPI_Allreduce(in.data(), want.data(), static_cast<int>(count), MPI_INT32_T, MPI_SUM,
                    MPI_COMM_WORLD);
      ASSERT_EQ(out, want) << "AllReduce, " << at;
      for (int root = 0; root < n; ++root) {
        ++call;
        std::vector<std::int32_t> data = callValues(root, call, count);
        std::vector<std::int32_t> got = rank == root ? data : std::vector<std::int32_t>(count);
        std::vector<std::int32_t> src = data;
        leaders.broadcast(bytesOf(in_place || rank != root ? got : src), bytesOf(got), bytes, root);
        ASSERT_EQ(got, data) << "Broadcast root " << root << ", " << at;
        std::vector<std::int32_t> mine = callValues(rank, call, count), sum(count, -7);
        if (in_place && rank == root) sum = mine;
        leaders.reduce(bytesOf(in_place && rank == root ? sum : mine), bytesOf(sum), bytes, kSum,
                       root, kMpiSum);
        std::vector<std::int32_t> expected(count);
        MPI_Reduce(mine.data(), expected.data(), static_cast<int>(count), MPI_INT32_T, MPI_SUM,
                   root, MPI_COMM_WORLD);
        if (rank == root) {
          ASSERT_EQ(sum, expected) << "Reduce root " << root << ", " << at;
        }
      }
      ++call;
      std::vector<std::int32_t> block = callValues(rank, call, count), all(count * un, -7),
                                expected(count * un);
      if (in_place) std::copy(block.begin(), block.end(), all.begin() + rank * count);
      leaders.allGather(in_place ? bytesOf(all) + rank * bytes : bytesOf(block), bytesOf(all),
                        bytes);
      MPI_Allgather(block.data(), static_cast<int>(count), MPI_INT32_T, expected.data(),
                    static_cast<int>(count), MPI_INT32_T, MPI_COMM_WORLD);
      ASSERT_EQ(all, expected) << "AllGather, " << at;
      ++call;
      std::vector<std::int32_t> whole = callValues(rank, call, count * un), part(count, -7),
                                want_part(count);
      std::vector<std::int32_t> inplace = whole;
      leaders.reduceScatter(in_place ? bytesOf(inplace) : bytesOf(whole),
                            in_place ? bytesOf(inplace) : bytesOf(part), bytes, kSum, kMpiSum);
      if (in_place) part.assign(inplace.begin(), inplace.begin() + static_cast<long>(count));
      MPI_Reduce_scatter_block(whole.data(), want_part.data(), static_cast<int>(count), MPI_INT32_T,
                               MPI_SUM, MPI_COMM_WORLD);
      ASSERT_EQ(part, want_part) << "ReduceScatter, " << at;
    }
  }
}

TEST(NodeLeaders, EveryShapeMatchesPmpi) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  for (int nodes = 2; nodes <= n; ++nodes) {
    for (auto shape : {NodeLeaders::Shape::OneRound, NodeLeaders::Shape::LogRounds,
                       NodeLeaders::Shape::ViaFirstLeader, NodeLeaders::Shape::Mpi}) {
      for (bool streams_only : {false, true}) {
        EmulatedNodes emulated(nodes, shape, streams_only);
        checkEveryCollective(emulated.leaders(),
                             std::to_string(nodes) + " nodes, " + NodeLeaders::toString(shape) +
                                 (streams_only ? ", stream by stream" : ", a round at once"));
      }
    }
  }
}

// MPI's own collective on every rank, the ranks not in node order (rank r on node
// r % nodes): the caller's buffers and roots are the comm's, in place too.
TEST(NodeLeaders, MpiOnEveryRankMatchesPmpi) {
  const int n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  for (int nodes = 1; nodes <= n; ++nodes) {
    EmulatedNodes emulated(nodes, NodeLeaders::Shape::OneRound, false, true);
    checkEveryCollective(emulated.leaders(), std::to_string(nodes) + " nodes, MPI on every rank");
  }
}

// A round at once over PMPI whose peer never sends: the wait ends at the deadline
// naming that message, and the receive it cancelled takes nothing that comes later
// (the next round on the same stream gets the peer's next message).
TEST(NodeLeaders, PmpiRoundAtOnceTimesOutAndCancels) {
  const int rank = worldRank(), n = worldSize();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (rank > 1) {
    MPI_Barrier(MPI_COMM_WORLD);
    return;
  }
  {
    blink::transport::PmpiTransport pmpi(pair);
    const int peer = 1 - rank;
    const blink::transport::StreamKey key{peer, NodeLeaders::kChannel};
    pmpi.ensureStreams({key}, {key});
    ASSERT_TRUE(pmpi.movesAllAtOnce(64));
    std::int32_t got = -1;
    if (rank == 0) {  // rank 1 sends nothing in this round
      const blink::transport::WholeMessage lonely{key, nullptr, reinterpret_cast<std::byte*>(&got),
                                                  sizeof got};
      blink::Backoff short_wait(0.2);
      EXPECT_EQ(pmpi.moveAllAtOnce(&lonely, 1, short_wait), 0);
    }
    MPI_Barrier(pair);
    // Both ways at once: each rank sends its rank + 100, receives the other's.
    const std::int32_t mine = rank + 100;
    const blink::transport::WholeMessage both[2] = {
        {key, reinterpret_cast<const std::byte*>(&mine), nullptr, sizeof mine},
        {key, nullptr, reinterpret_cast<std::byte*>(&got), sizeof got}};
    blink::Backoff wait(kTimeout);
    EXPECT_EQ(pmpi.moveAllAtOnce(both, 2, wait), -1);
    EXPECT_EQ(got, peer + 100);
  }
  MPI_Comm_free(&pair);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
