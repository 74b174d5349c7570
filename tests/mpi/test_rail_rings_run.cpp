// AllReduce's rail variants of the hierarchical plan (plan::lowerRailRings, a ring per
// rail, and plan::lowerRailHalving, recursive halving and doubling per rail) run by
// the executor on host ranks: each MPI rank is one GPU of a small H100 cluster (nodes
// of one and two GPUs, so rails cross nodes of unequal sizes: np 2 and 3 make 2 nodes,
// np 4 makes 3, where the halving folds a node in, np 5 makes 4), the messages over
// the PMPI transport, int32 sums against PMPI_Allreduce, with small chunks (many
// chunks in flight) and with the chunk rule.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_test_support.hpp"
#include "plan/hierarchical.hpp"
#include "runtime/executor.hpp"
#include "runtime/reduce_cpu.hpp"
#include "topology/zoo.hpp"
#include "transport/pmpi/pmpi_transport.hpp"

namespace {

using blink::test::worldRank;
using blink::test::worldSize;

const blink::Combine kSum = [](std::byte* inout, const std::byte* in, std::size_t bytes) {
  blink::runtime::reduceInto(inout, in, bytes / 4, blinkInt32, blinkSum);
};

// `ranks` GPUs on H100 nodes of one and two GPUs in turn.
blink::topo::Topology cluster(int ranks) {
  std::vector<int> gpus;
  int nodes = 0;
  for (int left = ranks; left > 0; ++nodes) {
    const int here = std::min(left, 1 + nodes % 2);
    for (int g = 0; g < here; ++g) gpus.push_back(8 * nodes + g);
    left -= here;
  }
  return blink::topo::makeZooTopology("hgx-h100:" + std::to_string(nodes),
                                      blink::topo::LinkTable::builtin())
      .restrictToGpus(gpus);
}

using Lower = blink::plan::Plan (*)(const blink::topo::Topology&, std::uint64_t,
                                    const blink::plan::LowerOptions&,
                                    const blink::treegen::PackOptions&, std::size_t);

void expectMatchesPmpiAllreduce(Lower lower, const std::string& name) {
  namespace rt = blink::runtime;
  const int n = worldSize(), rank = worldRank();
  const auto t = cluster(n);
  blink::transport::PmpiTransport transport(MPI_COMM_WORLD);
  for (std::uint64_t chunk : {std::uint64_t{64}, std::uint64_t{0}}) {
    for (std::size_t count : {std::size_t{3}, std::size_t{1000}, std::size_t{100003}}) {
      blink::plan::LowerOptions options;
      options.element_size = 4;
      options.chunk_bytes = chunk;
      const auto plan = lower(t, count * 4, options, {}, blink::plan::kHierarchicalMaxTransfers);
      const rt::Program program = rt::compileProgram(plan, rank, [&](int peer) {
        return rt::PeerRoute{peer, &transport};
      });
      const rt::StreamNeeds needs = rt::streamNeeds(program, &transport);
      transport.ensureStreams(needs.sends, needs.recvs);
      std::vector<std::int32_t> buffer(count), expected(count);
      for (std::size_t i = 0; i < count; ++i) {
        buffer[i] =
            static_cast<std::int32_t>((i * 7 + static_cast<std::size_t>(rank) * 131) % 1009);
      }
      ASSERT_EQ(PMPI_Allreduce(buffer.data(), expected.data(), static_cast<int>(count), MPI_INT32_T,
                               MPI_SUM, MPI_COMM_WORLD),
                MPI_SUCCESS);
      rt::RunOptions run;
      run.timeout_seconds = 60;
      run.what = name + " allreduce of " + std::to_string(count * 4) + " bytes";
      rt::execute(program, reinterpret_cast<std::byte*>(buffer.data()), nullptr, kSum, run);
      EXPECT_EQ(buffer, expected) << run.what << ", chunks " << chunk << ", rank " << rank;
    }
  }
}

TEST(RailRingsRun, MatchesPmpiAllreduce) {
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks (two nodes)";
  expectMatchesPmpiAllreduce(blink::plan::lowerRailRings, "rail rings");
}

TEST(RailHalvingRun, MatchesPmpiAllreduce) {
  if (worldSize() < 2) GTEST_SKIP() << "needs two ranks (two nodes)";
  expectMatchesPmpiAllreduce(blink::plan::lowerRailHalving, "rail halving");
}

}  // namespace
