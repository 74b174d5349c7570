// AllGatherV, Gather and ReduceScatterV through the C API (built on AllGather and
// ReduceScatter) with uneven counts and gaps, against PMPI_Allgatherv, PMPI_Gatherv and
// PMPI_Reduce_scatter, and their bad arguments refused.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "blink/blink.h"
#include "collective_checks.hpp"

using namespace collective_checks;  // NOLINT(google-build-using-namespace): the suite's own helpers

// Uneven counts (rank r: base + 3r; the last rank none), each block after a gap of 2.
struct VectorLayout {
  std::vector<std::size_t> counts, displs;
  std::vector<int> mpi_counts, mpi_displs;
  std::size_t extent = 0, total = 0;
};

VectorLayout vectorLayout(int n, std::size_t base) {
  VectorLayout v;
  for (int r = 0; r < n; ++r) {
    const std::size_t c = (r == n - 1 && n > 1) ? 0 : base + 3 * static_cast<std::size_t>(r);
    v.counts.push_back(c);
    v.displs.push_back(v.extent + 2);
    v.mpi_counts.push_back(static_cast<int>(c));
    v.mpi_displs.push_back(static_cast<int>(v.extent + 2));
    v.extent += c + 2;
    v.total += c;
  }
  return v;
}

void checkVectorCollectives(MPI_Comm mpi, std::size_t base) {
  Comm comm(mpi);
  const int rank = commRank(mpi), n = commSize(mpi);
  const VectorLayout v = vectorLayout(n, base);
  const std::size_t mine = v.counts[static_cast<std::size_t>(rank)];
  std::vector<std::int32_t> send(mine + 1);
  for (std::size_t i = 0; i < mine; ++i) send[i] = static_cast<std::int32_t>(i * 7 + 1000 * rank);
  // AllGatherV, out of place and in place, against PMPI_Allgatherv.
  std::vector<std::int32_t> got(v.extent + 1, -1), want(v.extent + 1, -1);
  ASSERT_EQ(blinkAllGatherV(send.data(), mine, got.data(), v.counts.data(), v.displs.data(),
                            blinkInt32, comm.get()),
            blinkSuccess)
      << blinkGetLastError();
  PMPI_Allgatherv(send.data(), static_cast<int>(mine), MPI_INT32_T, want.data(),
                  v.mpi_counts.data(), v.mpi_displs.data(), MPI_INT32_T, mpi);
  ASSERT_EQ(got, want) << "allgatherv base " << base;
  std::fill(got.begin(), got.end(), -1);
  std::copy(send.begin(), send.begin() + static_cast<std::ptrdiff_t>(mine),
            got.begin() + static_cast<std::ptrdiff_t>(v.displs[static_cast<std::size_t>(rank)]));
  ASSERT_EQ(blinkAllGatherV(got.data() + v.displs[static_cast<std::size_t>(rank)], mine, got.data(),
                            v.counts.data(), v.displs.data(), blinkInt32, comm.get()),
            blinkSuccess)
      << blinkGetLastError();
  ASSERT_EQ(got, want) << "allgatherv in place base " << base;
  // Gather of equal blocks to the first and the last rank.
  std::vector<std::int32_t> block(base + 1);
  for (std::size_t i = 0; i < base; ++i) block[i] = static_cast<std::int32_t>(i * 3 - 77 * rank);
  for (int root : {0, n - 1}) {
    std::vector<std::int32_t> all(base * static_cast<std::size_t>(n) + 1, 0), ref(all.size(), 0);
    ASSERT_EQ(blinkGather(block.data(), rank == root ? all.data() : nullptr, base, blinkInt32, root,
                          comm.get()),
              blinkSuccess)
        << blinkGetLastError();
    PMPI_Gather(block.data(), static_cast<int>(base), MPI_INT32_T, ref.data(),
                static_cast<int>(base), MPI_INT32_T, root, mpi);
    if (rank == root) {
      ASSERT_EQ(all, ref) << "gather root " << root << " base " << base;
    }
  }
  // ReduceScatterV (sum and max) against PMPI_Reduce_scatter, out of place and in place.
  std::vector<std::int64_t> in(v.total + 1);
  for (std::size_t i = 0; i < v.total; ++i) {
    in[i] = static_cast<std::int64_t>((i * 13 + static_cast<std::size_t>(rank) * 5) % 31) - 15;
  }
  for (blinkRedOp_t op : {blinkSum, blinkMax, blinkBxor}) {
    std::vector<std::int64_t> out(mine + 1, 0), ref(mine + 1, 0);
    ASSERT_EQ(
        blinkReduceScatterV(in.data(), out.data(), v.counts.data(), blinkInt64, op, comm.get()),
        blinkSuccess)
        << blinkGetLastError();
    PMPI_Reduce_scatter(in.data(), ref.data(), v.mpi_counts.data(), MPI_INT64_T, mpiOp(op), mpi);
    ASSERT_EQ(out, ref) << "reduce_scatter_v " << blink::runtime::toString(op) << " base " << base;
    std::vector<std::int64_t> inplace = in;
    ASSERT_EQ(blinkReduceScatterV(inplace.data(), inplace.data(), v.counts.data(), blinkInt64, op,
                                  comm.get()),
              blinkSuccess)
        << blinkGetLastError();
    ASSERT_TRUE(
        std::equal(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(mine), inplace.begin()))
        << "reduce_scatter_v in place " << blink::runtime::toString(op) << " base " << base;
  }
}

TEST(VectorCollectives, MatchPmpi) {
  const int n = commSize(MPI_COMM_WORLD), rank = commRank(MPI_COMM_WORLD);
  // 0, small, a board-sized and a 16 MiB gather in all.
  for (std::size_t base : {std::size_t{0}, std::size_t{1}, std::size_t{1009},
                           (std::size_t{4} << 20) / static_cast<std::size_t>(n)}) {
    checkVectorCollectives(MPI_COMM_WORLD, base);
  }
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  checkVectorCollectives(half, 5003);
  MPI_Comm_free(&half);
}

TEST(VectorCollectives, RefuseBadArguments) {
  Comm comm(MPI_COMM_WORLD);
  const int n = commSize(MPI_COMM_WORLD);
  std::vector<std::size_t> counts(static_cast<std::size_t>(n), 4), displs(counts.size(), 0);
  std::int32_t x[4] = {}, y[64] = {};
  EXPECT_EQ(blinkAllGatherV(x, 3, y, counts.data(), displs.data(), blinkInt32, comm.get()),
            blinkInvalidArgument);
  EXPECT_EQ(blinkAllGatherV(x, 4, y, nullptr, displs.data(), blinkInt32, comm.get()),
            blinkInvalidArgument);
  EXPECT_EQ(blinkGather(x, y, 4, blinkInt32, n, comm.get()), blinkInvalidArgument);
  EXPECT_EQ(blinkReduceScatterV(x, y, nullptr, blinkInt32, blinkSum, comm.get()),
            blinkInvalidArgument);
  EXPECT_EQ(blinkReduceScatterV(x, y, counts.data(), blinkFloat32, blinkBand, comm.get()),
            blinkInvalidArgument);
}
