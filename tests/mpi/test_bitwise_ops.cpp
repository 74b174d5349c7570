// The bitwise and logical ops (MPI_BAND .. MPI_LXOR) through the C API, against
// PMPI_Allreduce and PMPI_Reduce bit for bit, and refused on floating types.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "blink/blink.h"
#include "collective_checks.hpp"

using namespace collective_checks;  // NOLINT(google-build-using-namespace): the suite's own helpers

const blinkRedOp_t kBitOps[] = {blinkBand, blinkBor, blinkBxor, blinkLand, blinkLor, blinkLxor};

// Every integer type and bitwise/logical op, on the board (small), the direct path
// and plans (large), out of place and in place, and on a split communicator: equal
// to PMPI_Allreduce bit for bit. Inputs are -8..8, so the logical ops see zeros.
TEST(AllReduce, BitwiseAndLogicalOpsMatchPmpi) {
  const int world_rank = commRank(MPI_COMM_WORLD);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, -world_rank, &half);
  {
    Comm world(MPI_COMM_WORLD);
    Comm split(half);
    for (blinkDataType_t t : kTypes) {
      if (isFloat(t)) continue;
      for (blinkRedOp_t op : kBitOps) {
        for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1009}}) {
          checkAllReduce(world, t, op, count, false);
          checkAllReduce(world, t, op, count, true);
          checkAllReduce(split, t, op, count, false);
        }
      }
    }
    for (blinkRedOp_t op : {blinkBand, blinkBor, blinkLxor}) {
      checkAllReduce(world, blinkInt64, op, 300007, false);
      checkAllReduce(world, blinkUint32, op, std::size_t{1} << 20, true);
    }
  }
  MPI_Comm_free(&half);
}

TEST(Reduce, BitwiseOpsMatchPmpi) {
  Comm comm(MPI_COMM_WORLD);
  const int rank = commRank(MPI_COMM_WORLD), n = commSize(MPI_COMM_WORLD);
  const int root = n - 1;
  for (blinkRedOp_t op : kBitOps) {
    const std::size_t count = 10007;
    std::vector<std::byte> send = inputs(rank, count, blinkInt64, op);
    std::vector<std::byte> recv(send.size(), std::byte{0});
    ASSERT_EQ(blinkReduce(send.data(), rank == root ? recv.data() : nullptr, count, blinkInt64, op,
                          root, comm.get()),
              blinkSuccess)
        << blinkGetLastError();
    std::vector<std::byte> expected(send.size());
    PMPI_Reduce(send.data(), expected.data(), static_cast<int>(count), MPI_INT64_T, mpiOp(op), root,
                MPI_COMM_WORLD);
    if (rank == root) {
      ASSERT_EQ(recv, expected) << label(blinkInt64, op, count);
    }
  }
}

TEST(AllReduce, BitwiseOpsRefuseFloatingTypes) {
  Comm comm(MPI_COMM_WORLD);
  float x[4] = {}, y[4] = {};
  for (blinkRedOp_t op : kBitOps) {
    EXPECT_EQ(blinkAllReduce(x, y, 4, blinkFloat32, op, comm.get()), blinkInvalidArgument);
  }
  // Refused together, before any data moved: the communicator stays usable.
  checkAllReduce(comm, blinkUint16, blinkBor, 17, false);
}
