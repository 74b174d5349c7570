// The memory types of a collective's buffers through the C API, with the fake CUDA
// driver of tests/unit/fake_cuda.c first on LD_LIBRARY_PATH: a buffer it reports as
// device or managed memory on one rank makes the call fail on every rank with the
// same blinkInvalidUsage and message before any data moves, and the communicator
// goes on with host buffers. Ranks that load no driver (the "mixed" run) still take
// part in the agreement. Run without the fake, it checks that a communicator checks
// buffers exactly when some rank has a usable driver.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "mpi_test_support.hpp"
#include "runtime/memory_type.hpp"

namespace {

using blink::test::worldRank;
using blink::test::worldSize;

constexpr int kUnmark = 0, kDevice = 1, kManaged = 2, kRegistered = 3;  // fake_cuda_mark kinds
using MarkFn = int (*)(const void*, std::size_t, int);

// fake_cuda_mark of the libcuda.so.1 this process loads, or nullptr (no driver, or a real one).
MarkFn fakeMark() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return driver == nullptr ? nullptr : reinterpret_cast<MarkFn>(dlsym(driver, "fake_cuda_mark"));
}

bool anyRank(bool mine) {
  int local = mine ? 1 : 0, any = 0;
  PMPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

std::string explain(blinkComm_t comm) {
  std::size_t length = 0;
  EXPECT_EQ(blinkCommExplain(comm, nullptr, 0, &length), blinkSuccess);
  std::string text(length + 1, '\0');
  EXPECT_EQ(blinkCommExplain(comm, text.data(), text.size(), &length), blinkSuccess);
  text.resize(length);
  return text;
}

std::vector<std::int32_t> inputOf(int rank, std::size_t count) {
  std::vector<std::int32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = static_cast<std::int32_t>((i * 7 + static_cast<std::size_t>(rank) * 3) % 9) - 4;
  }
  return v;
}

class MemoryTypes : public testing::Test {
 protected:
  void SetUp() override {
    rank_ = worldRank();
    size_ = worldSize();
    mark_ = fakeMark();
    // The "device" rank: the highest that loaded the fake (-1 if none did).
    int mine = mark_ != nullptr ? rank_ : -1;
    PMPI_Allreduce(&mine, &victim_, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ASSERT_EQ(blinkCommInitFromMPI(&comm_, MPI_COMM_WORLD), blinkSuccess) << blinkGetLastError();
  }
  void TearDown() override { EXPECT_EQ(blinkCommDestroy(comm_), blinkSuccess); }

  // Marks `p` as `kind` where this rank is the victim.
  void markOnVictim(const void* p, std::size_t bytes, int kind) {
    if (rank_ == victim_) {
      ASSERT_EQ(mark_(p, bytes, kind), 0);
    }
  }
  void unmark(const void* p) {
    if (mark_ != nullptr) mark_(p, 0, kUnmark);
  }
  static std::string refusal(int rank, const char* type, const char* buffer) {
    return "rank " + std::to_string(rank) + " passed " + type + " (" + buffer +
           "); this communicator has no device data path (a rank has no Blink device, or the "
           "ranks' devices differ: see blinkCommExplain), so Blink moves host memory only";
  }

  int rank_ = 0, size_ = 1, victim_ = -1;
  MarkFn mark_ = nullptr;
  blinkComm_t comm_ = nullptr;
};

// The tests that mark buffers: run with the fake (BLINK_TEST_FAKE_CUDA=1), skipped without.
class MemoryTypesWithFake : public MemoryTypes {
 protected:
  void SetUp() override {
    MemoryTypes::SetUp();
    if (std::getenv("BLINK_TEST_FAKE_CUDA") == nullptr) GTEST_SKIP() << "run without the fake";
    ASSERT_GE(victim_, 0) << "no rank loaded the fake libcuda.so.1 (LD_LIBRARY_PATH?)";
  }
};

TEST_F(MemoryTypes, ACommunicatorChecksBuffersExactlyWhenARankHasADriver) {
  const bool driver_anywhere = anyRank(blink::runtime::CudaDriver::process().usable());
  const std::string text = explain(comm_);
  EXPECT_NE(text.find("Memory: host memory only"), std::string::npos) << text;
  EXPECT_NE(text.find(driver_anywhere ? "a rank has a CUDA driver, so every call first agrees"
                                      : "no rank has a usable CUDA driver, so buffers are not "
                                        "checked"),
            std::string::npos)
      << text;
  if (std::getenv("BLINK_TEST_FAKE_CUDA") != nullptr) {
    EXPECT_TRUE(driver_anywhere) << "no rank loaded the fake libcuda.so.1";
  }
}

TEST_F(MemoryTypesWithFake, DeviceMemoryOnOneRankFailsEveryRankBeforeDataMovesThenHostWorks) {
  // 1 KiB takes the one-shot board, 1 MiB the direct path: both stay untouched.
  for (const std::size_t count : {std::size_t{256}, std::size_t{1} << 18}) {
    const std::vector<std::int32_t> in = inputOf(rank_, count);
    std::vector<std::int32_t> out(count, -7), want(count, 0);
    markOnVictim(out.data(), count * sizeof(std::int32_t), kDevice);
    EXPECT_EQ(blinkAllReduce(in.data(), out.data(), count, blinkInt32, blinkSum, comm_),
              blinkInvalidUsage);
    EXPECT_EQ(blinkGetLastError(), refusal(victim_, "CUDA device memory", "recvbuff"));
    EXPECT_EQ(out, std::vector<std::int32_t>(count, -7)) << "data moved before the refusal";
    unmark(out.data());

    ASSERT_EQ(blinkAllReduce(in.data(), out.data(), count, blinkInt32, blinkSum, comm_),
              blinkSuccess)
        << blinkGetLastError();
    PMPI_Allreduce(in.data(), want.data(), static_cast<int>(count), MPI_INT32_T, MPI_SUM,
                   MPI_COMM_WORLD);
    EXPECT_EQ(out, want);
  }
}

TEST_F(MemoryTypesWithFake, EveryCollectiveRefusesManagedOrDeviceInputs) {
  const std::size_t block = 1000;
  const auto total = block * static_cast<std::size_t>(size_);
  std::vector<std::int32_t> in = inputOf(rank_, total), out(total, -7);
  const std::size_t bytes = total * sizeof(std::int32_t);

  markOnVictim(in.data(), bytes, kManaged);
  EXPECT_EQ(blinkReduce(in.data(), out.data(), total, blinkInt32, blinkMax, 0, comm_),
            blinkInvalidUsage);
  EXPECT_EQ(blinkGetLastError(), refusal(victim_, "CUDA managed memory", "sendbuff"));
  EXPECT_EQ(blinkAllGather(in.data(), out.data(), block, blinkInt32, comm_), blinkInvalidUsage);
  EXPECT_EQ(blinkGetLastError(), refusal(victim_, "CUDA managed memory", "sendbuff"));
  EXPECT_EQ(blinkReduceScatter(in.data(), out.data(), block, blinkInt32, blinkSum, comm_),
            blinkInvalidUsage);
  EXPECT_EQ(blinkGetLastError(), refusal(victim_, "CUDA managed memory", "sendbuff"));
  unmark(in.data());

  // Broadcast reads sendbuff on the root only: the root's device buffer is refused...
  markOnVictim(in.data(), bytes, kDevice);
  EXPECT_EQ(blinkBroadcast(in.data(), out.data(), total, blinkInt32, victim_, comm_),
            blinkInvalidUsage);
  EXPECT_EQ(blinkGetLastError(), refusal(victim_, "CUDA device memory", "sendbuff"));
  EXPECT_EQ(out, std::vector<std::int32_t>(total, -7));
  // ... another rank's is not read, and the call runs.
  if (size_ > 1) {
    const int root = victim_ == 0 ? 1 : 0;
    ASSERT_EQ(blinkBroadcast(in.data(), out.data(), total, blinkInt32, root, comm_), blinkSuccess)
        << blinkGetLastError();
    EXPECT_EQ(out, inputOf(root, total));
  }
  unmark(in.data());
}

TEST_F(MemoryTypesWithFake, RegisteredHostMemoryIsHostMemory) {
  const std::size_t count = 5000;
  const std::vector<std::int32_t> in = inputOf(rank_, count);
  std::vector<std::int32_t> out(count, -7), want(count, 0);
  if (mark_ != nullptr) {
    ASSERT_EQ(mark_(in.data(), count * sizeof(std::int32_t), kRegistered), 0);
    ASSERT_EQ(mark_(out.data(), count * sizeof(std::int32_t), kRegistered), 0);
  }
  ASSERT_EQ(blinkAllReduce(in.data(), out.data(), count, blinkInt32, blinkMin, comm_), blinkSuccess)
      << blinkGetLastError();
  PMPI_Allreduce(in.data(), want.data(), static_cast<int>(count), MPI_INT32_T, MPI_MIN,
                 MPI_COMM_WORLD);
  EXPECT_EQ(out, want);
  unmark(in.data());
  unmark(out.data());
}

TEST_F(MemoryTypesWithFake, APeerThatNeverComesToTheAgreementBreaksTheCommunicator) {
  if (size_ < 2) GTEST_SKIP() << "needs two ranks";
  blink::test::ScopedEnv timeout("BLINK_TIMEOUT_S", "1");
  blinkComm_t comm = nullptr;
  ASSERT_EQ(blinkCommInitFromMPI(&comm, MPI_COMM_WORLD), blinkSuccess) << blinkGetLastError();
  std::vector<std::int32_t> in = inputOf(rank_, 64), out(64);
  if (rank_ != 0) {
    EXPECT_EQ(blinkAllReduce(in.data(), out.data(), in.size(), blinkInt32, blinkSum, comm),
              blinkTimeout);
    const std::string message = blinkGetLastError();
    EXPECT_NE(message.find("agreeing on the memory types of the buffers"), std::string::npos)
        << message;
    // Its reduction is still pending: the communicator refuses further work.
    EXPECT_EQ(blinkAllReduce(in.data(), out.data(), in.size(), blinkInt32, blinkSum, comm),
              blinkInvalidUsage);
    EXPECT_NE(std::string(blinkGetLastError()).find("failed earlier"), std::string::npos);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(blinkCommDestroy(comm), blinkSuccess);
}

}  // namespace
