// The GPU data path end to end: device buffers through the C API, every collective,
// datatype and op, checked against PMPI_* on host copies of the same inputs (and an
// exact oracle for fp16/bf16, which MPI lacks, and for avg). Run in the normal suite
// with BLINK_DEVICE=EMULATED (threads as streams, shared memory as "IPC"; small
// BLINK_DEVICE_SLOT_BYTES so that every message is cut into chunks that reuse the
// slots), with random stream delays in one variant; on a GPU machine
// scripts/gpu-check.sh runs the same binary with BLINK_DEVICE=CUDA.
//
// Inputs are small integers, so every result is exact in every type whatever the
// reduction order, and results compare bit for bit.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "mpi_test_support.hpp"
#include "plan/plan.hpp"
#include "runtime/executor.hpp"
#include "runtime/process_device.hpp"
#include "runtime/reduce_cpu.hpp"
#include "transport/cuda/device_transport.hpp"

namespace {

using blink::device::Device;

const blinkDataType_t kTypes[] = {blinkInt8,    blinkUint8,    blinkInt16,   blinkUint16,
                                  blinkInt32,   blinkUint32,   blinkInt64,   blinkUint64,
                                  blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
const blinkRedOp_t kOps[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};

using blink::test::mpiOp;
using blink::test::mpiType;

bool isUnsigned(blinkDataType_t t) {
  return t == blinkUint8 || t == blinkUint16 || t == blinkUint32 || t == blinkUint64;
}

void store(std::byte* p, blinkDataType_t t, double v) {
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t) {
    case blinkInt8:
      return put(static_cast<std::int8_t>(v));
    case blinkUint8:
      return put(static_cast<std::uint8_t>(v));
    case blinkInt16:
      return put(static_cast<std::int16_t>(v));
    case blinkUint16:
      return put(static_cast<std::uint16_t>(v));
    case blinkInt32:
      return put(static_cast<std::int32_t>(v));
    case blinkUint32:
      return put(static_cast<std::uint32_t>(v));
    case blinkInt64:
      return put(static_cast<std::int64_t>(v));
    case blinkUint64:
      return put(static_cast<std::uint64_t>(v));
    case blinkFloat16:
      return put(blink::runtime::floatToHalf(static_cast<float>(v)));
    case blinkBfloat16:
      return put(blink::runtime::floatToBfloat16(static_cast<float>(v)));
    case blinkFloat32:
      return put(static_cast<float>(v));
    case blinkFloat64:
      return put(v);
    default:
      return;
  }
}

// Rank r's input: small integers (products of {-2,-1,1,2} for prod), varied by `seed`.
std::vector<std::byte> input(int rank, std::size_t count, blinkDataType_t t, blinkRedOp_t op,
                             unsigned seed = 0) {
  const std::size_t es = blinkDataTypeSize(t);
  std::vector<std::byte> out(count * es);
  for (std::size_t i = 0; i < count; ++i) {
    const auto h = (i * 2654435761u + static_cast<std::size_t>(rank) * 97u + seed * 31u) % 17u;
    double v;
    if (op == blinkProd) {
      static const double f[] = {1, 2, -1, 1, -2, 1, 1};
      v = f[h % 7];
      if (isUnsigned(t) && v < 0) v = -v;
    } else {
      v = static_cast<double>(h) - 8.0;
      if (isUnsigned(t)) v += 8.0;
    }
    store(out.data() + i * es, t, v);
  }
  return out;
}

// The reduction of every rank's `mine` (count elements), on the host: PMPI_Allreduce
// where MPI has the type and op, else every input gathered and reduced in rank order
// with the host kernels (exact: small integers).
std::vector<std::byte> reference(const std::vector<std::byte>& mine, std::size_t count,
                                 blinkDataType_t t, blinkRedOp_t op, int size) {
  std::vector<std::byte> out(mine.size());
  const blinkRedOp_t combine = op == blinkAvg ? blinkSum : op;
  if (mpiType(t) != MPI_DATATYPE_NULL) {
    EXPECT_EQ(PMPI_Allreduce(mine.data(), out.data(), static_cast<int>(count), mpiType(t),
                             mpiOp(combine), MPI_COMM_WORLD),
              MPI_SUCCESS);
  } else {
    std::vector<std::byte> all(mine.size() * static_cast<std::size_t>(size));
    PMPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                   static_cast<int>(mine.size()), MPI_BYTE, MPI_COMM_WORLD);
    std::memcpy(out.data(), all.data(), mine.size());
    for (int r = 1; r < size; ++r) {
      blink::runtime::reduceInto(out.data(), all.data() + static_cast<std::size_t>(r) * mine.size(),
                                 count, t, combine);
    }
  }
  if (op == blinkAvg) blink::runtime::divideBy(out.data(), count, t, size);
  return out;
}

int localRank() {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int r = 0;
  MPI_Comm_rank(local, &r);
  MPI_Comm_free(&local);
  return r;
}

class DeviceCollectives : public ::testing::Test {
 protected:
  void SetUp() override {
    rank_ = blink::test::worldRank();
    size_ = blink::test::worldSize();
    device_ = blink::runtime::processDevice(localRank());
    int have = device_ != nullptr ? 1 : 0, all = 0;
    PMPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all == 0) GTEST_SKIP() << "no device on some rank (BLINK_DEVICE=EMULATED or a GPU)";
    stream_ = device_->createStream();
    ASSERT_EQ(blinkCommInitFromMPI(&comm_, MPI_COMM_WORLD), blinkSuccess) << blinkGetLastError();
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(blinkCommDestroy(comm_), blinkSuccess);
    }
    for (void* p : allocations_) device_->release(p);
  }

  std::byte* deviceCopy(const std::vector<std::byte>& host) {
    auto* p = static_cast<std::byte*>(device_->allocate(host.size()));
    allocations_.push_back(p);
    device_->copy(p, host.data(), host.size(), stream_);
    device_->synchronize(stream_);
    return p;
  }
  std::vector<std::byte> hostCopy(const std::byte* p, std::size_t bytes) {
    std::vector<std::byte> out(bytes);
    device_->copy(out.data(), p, bytes, stream_);
    device_->synchronize(stream_);
    return out;
  }

  // Every collective on device buffers for one type and op, against the references.
  void checkAll(blinkDataType_t t, blinkRedOp_t op, std::size_t count, unsigned seed, int root) {
    const std::size_t es = blinkDataTypeSize(t);
    const std::string what = blink::runtime::toString(t) + " " + blink::runtime::toString(op) +
                             " count " + std::to_string(count) + " seed " + std::to_string(seed);
    const bool reduces = op != blinkAvg || blink::runtime::isFloating(t);
    if (reduces) {
      // AllReduce, out of place and in place.
      const std::vector<std::byte> mine = input(rank_, count, t, op, seed);
      const std::vector<std::byte> expected = reference(mine, count, t, op, size_);
      std::byte* send = deviceCopy(mine);
      std::byte* recv = deviceCopy(std::vector<std::byte>(mine.size()));
      ASSERT_EQ(blinkAllReduce(send, recv, count, t, op, comm_), blinkSuccess)
          << blinkGetLastError();
      EXPECT_EQ(hostCopy(recv, mine.size()), expected) << "AllReduce " << what;
      EXPECT_EQ(hostCopy(send, mine.size()), mine) << "AllReduce changed its input: " << what;
      ASSERT_EQ(blinkAllReduce(send, send, count, t, op, comm_), blinkSuccess)
          << blinkGetLastError();
      EXPECT_EQ(hostCopy(send, mine.size()), expected) << "AllReduce in place " << what;

      // Reduce to `root`.
      std::byte* send2 = deviceCopy(mine);
      std::byte* out = rank_ == root ? deviceCopy(std::vector<std::byte>(mine.size())) : nullptr;
      ASSERT_EQ(blinkReduce(send2, out, count, t, op, root, comm_), blinkSuccess)
          << blinkGetLastError();
      if (rank_ == root) {
        EXPECT_EQ(hostCopy(out, mine.size()), expected) << "Reduce " << what;
      }

      // ReduceScatter: the full reduction's block of this rank.
      const std::size_t block = count / static_cast<std::size_t>(size_) + 1;
      const std::size_t full = block * static_cast<std::size_t>(size_);
      const std::vector<std::byte> all_in = input(rank_, full, t, op, seed + 1);
      const std::vector<std::byte> reduced = reference(all_in, full, t, op, size_);
      std::byte* rs_send = deviceCopy(all_in);
      std::byte* rs_recv = deviceCopy(std::vector<std::byte>(block * es));
      ASSERT_EQ(blinkReduceScatter(rs_send, rs_recv, block, t, op, comm_), blinkSuccess)
          << blinkGetLastError();
      const auto at = reduced.begin() +
                      static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank_) * block * es);
      EXPECT_EQ(hostCopy(rs_recv, block * es),
                std::vector<std::byte>(at, at + static_cast<std::ptrdiff_t>(block * es)))
          << "ReduceScatter " << what;
    }
    if (op == blinkSum) {
      // Broadcast from `root` and AllGather: no reduction, once per type.
      std::vector<std::byte> data = input(rank_, count, t, op, seed + 2);
      std::vector<std::byte> expected = data;
      PMPI_Bcast(expected.data(), static_cast<int>(expected.size()), MPI_BYTE, root,
                 MPI_COMM_WORLD);
      std::byte* send = deviceCopy(data);
      std::byte* recv = deviceCopy(std::vector<std::byte>(data.size()));
      ASSERT_EQ(blinkBroadcast(rank_ == root ? send : nullptr, recv, count, t, root, comm_),
                blinkSuccess)
          << blinkGetLastError();
      EXPECT_EQ(hostCopy(recv, data.size()), expected) << "Broadcast " << what;

      std::vector<std::byte> gathered(data.size() * static_cast<std::size_t>(size_));
      PMPI_Allgather(data.data(), static_cast<int>(data.size()), MPI_BYTE, gathered.data(),
                     static_cast<int>(data.size()), MPI_BYTE, MPI_COMM_WORLD);
      std::byte* ag_recv = deviceCopy(std::vector<std::byte>(gathered.size()));
      ASSERT_EQ(blinkAllGather(send, ag_recv, count, t, comm_), blinkSuccess)
          << blinkGetLastError();
      EXPECT_EQ(hostCopy(ag_recv, gathered.size()), gathered) << "AllGather " << what;
    }
  }

  int rank_ = 0, size_ = 1;
  Device* device_ = nullptr;
  Device::Stream stream_ = -1;
  blinkComm_t comm_ = nullptr;
  std::vector<void*> allocations_;
};

TEST_F(DeviceCollectives, TheCommunicatorRunsDeviceBuffersOnItsDevice) {
  std::size_t length = 0;
  ASSERT_EQ(blinkCommExplain(comm_, nullptr, 0, &length), blinkSuccess);
  std::string text(length + 1, '\0');
  ASSERT_EQ(blinkCommExplain(comm_, text.data(), text.size(), &length), blinkSuccess);
  EXPECT_NE(text.find("Device buffers: the planner's plans on " + device_->describe()),
            std::string::npos)
      << text;
}

TEST_F(DeviceCollectives, EveryCollectiveTypeAndOp) {
  // Counts that cut messages into several chunks of BLINK_DEVICE_SLOT_BYTES (and a
  // partial last one), so the slots are reused within a message.
  int index = 0;
  for (blinkDataType_t t : kTypes) {
    for (blinkRedOp_t op : kOps) {
      checkAll(t, op, 3001, static_cast<unsigned>(index), index % size_);
      ++index;
    }
  }
}

TEST_F(DeviceCollectives, RepeatedCallsReuseTheStreamsAndSlots) {
  for (unsigned round = 0; round < 6; ++round) {
    checkAll(blinkFloat32, blinkSum, 20000 + round % 2, round, static_cast<int>(round) % size_);
    checkAll(blinkInt32, blinkMax, 777, round, 0);
  }
}

TEST_F(DeviceCollectives, HostAndDeviceBuffersOfOneCallAreRefusedOnEveryRank) {
  std::vector<std::byte> host(4096 * 4);
  std::byte* dev = deviceCopy(host);
  // Rank 0 passes a host receive buffer, the others device memory: every rank refuses.
  void* recv = rank_ == 0 ? static_cast<void*>(host.data()) : static_cast<void*>(dev);
  EXPECT_EQ(blinkAllReduce(dev, recv, 4096, blinkFloat32, blinkSum, comm_), blinkInvalidUsage);
  EXPECT_NE(std::string(blinkGetLastError()).find("mix host and device memory"), std::string::npos)
      << blinkGetLastError();
  // The communicator goes on, with host buffers and with device buffers.
  std::vector<float> h(1000, 1.0f), out(1000, 0.0f);
  ASSERT_EQ(blinkAllReduce(h.data(), out.data(), h.size(), blinkFloat32, blinkSum, comm_),
            blinkSuccess)
      << blinkGetLastError();
  EXPECT_EQ(out[999], static_cast<float>(size_));
  checkAll(blinkFloat64, blinkMin, 100, 3, 0);
}

// The executor's own rule on the device: a step that depends on a Copy step (here a
// Send, on another stream) starts only once the copy's event has passed. No planner
// lowering emits Copy steps yet, so a hand-made plan on the device transport checks it:
// rank 0 copies a range and sends the copy to rank 1, twenty times over fresh data.
TEST_F(DeviceCollectives, AStepAfterACopyOnTheDeviceSeesTheCopiedBytes) {
  namespace rt = blink::runtime;
  const std::size_t half = 64 * 1024;
  std::vector<int> node_rank_of(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) node_rank_of[static_cast<std::size_t>(r)] = r;
  blink::transport::DeviceTransportOptions options;
  options.slot_bytes = 4096;
  blink::transport::DeviceTransport transport(*device_, MPI_COMM_WORLD, node_rank_of, rank_,
                                              options);
  blink::plan::Plan plan;
  plan.collective = blink::plan::Collective::Broadcast;
  plan.num_ranks = size_;
  plan.bytes = 2 * half;
  plan.ranks.resize(static_cast<std::size_t>(size_));
  if (size_ >= 2) {
    using blink::plan::StepKind;
    plan.ranks[0].steps = {{StepKind::Copy, -1, 0, half, half, 0, -1, {}},
                           {StepKind::Send, 1, 0, half, half, 0, -1, {0}}};
    plan.ranks[1].steps = {{StepKind::Recv, 0, 0, half, half, 0, -1, {}}};
  }
  const rt::Program program = rt::compileProgram(plan, rank_, [&](int peer) {
    return rt::PeerRoute{peer, &transport};
  });
  const rt::StreamNeeds needs = rt::streamNeeds(program, &transport);
  transport.ensureStreams(needs.sends, needs.recvs);
  std::vector<Device::Event> events;
  rt::DeviceRun run{device_, device_->createStream(), &events, {blinkUint8, blinkSum}};
  rt::RunOptions run_options;
  run_options.device = &run;
  run_options.timeout_seconds = 60;
  for (int round = 0; round < 20; ++round) {
    std::vector<std::byte> host(2 * half);
    for (std::size_t i = 0; i < half; ++i) host[i] = static_cast<std::byte>(i * 13 + round);
    std::byte* buffer = deviceCopy(host);  // the first half fresh, the second zeros
    rt::execute(program, buffer, nullptr, blink::Combine{}, run_options);
    const std::vector<std::byte> got = hostCopy(buffer, 2 * half);
    if (rank_ <= 1 && size_ >= 2) {
      EXPECT_TRUE(
          std::equal(got.begin() + static_cast<std::ptrdiff_t>(half), got.end(), host.begin()))
          << "round " << round;
    }
  }
}

}  // namespace
