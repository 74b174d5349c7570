// The emulated device keeps CUDA's ordering rules (transport/cuda/device.hpp) under
// random delays, and its kernels are the host's bit for bit: the ground the GPU data
// path's tests without a GPU stand on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "runtime/reduce_cpu.hpp"
#include "transport/cuda/emulated_device.hpp"

namespace {

using blink::device::Device;

void reduceIntoKernel(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                      blinkRedOp_t op) {
  blink::runtime::reduceInto(inout, in, count, type, op);
}

std::unique_ptr<Device> makeDevice(int delay_us, int gpu = 0, int peer_group = 0) {
  return blink::device::makeEmulatedDevice(
      {delay_us, gpu, peer_group},
      {&reduceIntoKernel, &blink::runtime::divideBy, &blink::runtime::elementSize});
}

struct Allocation {
  Device& device;
  std::byte* p;
  Allocation(Device& d, std::size_t bytes)
      : device(d), p(static_cast<std::byte*>(d.allocate(bytes))) {}
  ~Allocation() { device.release(p); }
};

// Device memory is not host memory (as on a GPU): bytes go in and out by copies.
std::vector<std::byte> toHost(Device& device, const void* p, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  const Device::Stream s = device.createStream();
  device.copy(out.data(), p, bytes, s);
  device.synchronize(s);
  device.destroyStream(s);
  return out;
}
void fromHost(Device& device, void* p, const void* host, std::size_t bytes) {
  const Device::Stream s = device.createStream();
  device.copy(p, host, bytes, s);
  device.synchronize(s);
  device.destroyStream(s);
}

TEST(EmulatedDeviceDeathTest, HostCodeThatTouchesDeviceMemoryCrashesAsOnAGpu) {
  auto device = makeDevice(0);
  Allocation a(*device, 4096);
  EXPECT_DEATH(*reinterpret_cast<volatile char*>(a.p + 17) = 1, "");
}

TEST(EmulatedDevice, WorkOnOneStreamRunsInOrderAndAfterTheCallReturns) {
  auto device = makeDevice(200);
  const std::size_t n = 4096;
  Allocation a(*device, n), b(*device, n), c(*device, n);
  std::vector<std::byte> pattern(n);
  for (std::size_t i = 0; i < n; ++i) pattern[i] = static_cast<std::byte>(i * 7 + 1);
  const Device::Stream s = device->createStream();
  const Device::Event e = device->createEvent();
  for (int round = 0; round < 20; ++round) {
    pattern[0] = static_cast<std::byte>(round);
    device->copy(a.p, pattern.data(), n, s);
    device->copy(b.p, a.p, n, s);  // must see the copy before it
    device->copy(c.p, b.p, n, s);
    device->record(e, s);
    while (!device->done(e)) {
    }
    ASSERT_EQ(toHost(*device, c.p, n), pattern) << "round " << round;
  }
}

TEST(EmulatedDevice, AnEventOrdersWorkOnTwoStreams) {
  auto device = makeDevice(300);
  const std::size_t n = 1 << 16;
  Allocation x(*device, n), y(*device, n);
  const Device::Stream producer = device->createStream(), consumer = device->createStream();
  const Device::Event written = device->createEvent(), read = device->createEvent();
  std::vector<std::byte> value(n);
  for (int round = 1; round <= 30; ++round) {
    std::memset(value.data(), round, n);
    device->wait(producer, read);  // x is free again once the consumer read it
    device->copy(x.p, value.data(), n, producer);
    device->record(written, producer);
    device->wait(consumer, written);
    device->copy(y.p, x.p, n, consumer);
    device->record(read, consumer);
    device->synchronize(consumer);
    EXPECT_TRUE(device->done(read));
    ASSERT_EQ(toHost(*device, y.p, n), value) << "round " << round;
  }
}

TEST(EmulatedDevice, AnEventNeverRecordedIsDoneAndARecordedOneOnceItsStreamPassedIt) {
  auto device = makeDevice(100);
  const Device::Stream s = device->createStream();
  const Device::Event e = device->createEvent();
  EXPECT_TRUE(device->done(e));
  device->record(e, s);
  device->synchronize(s);
  EXPECT_TRUE(device->done(e));
}

TEST(EmulatedDevice, ADestroyedStreamRunsItsWorkAndItsNumberIsReused) {
  auto device = makeDevice(100);
  Allocation a(*device, 4096);
  std::vector<std::byte> value(4096, std::byte{7});
  const Device::Stream s = device->createStream();
  device->copy(a.p, value.data(), value.size(), s);
  device->destroyStream(s);  // after the copy has run
  EXPECT_EQ(toHost(*device, a.p, value.size()), value);
  const Device::Event e = device->createEvent();
  device->destroyEvent(e);
  EXPECT_EQ(device->createEvent(), e);
  EXPECT_THROW(device->record(e + 1, s + 1000), blink::Error);  // neither exists
}

TEST(EmulatedDevice, ReductionsAndDivisionAreTheHostKernelsBitForBit) {
  auto device = makeDevice(0);
  const Device::Stream s = device->createStream();
  const blinkDataType_t types[] = {blinkInt8,    blinkUint8,    blinkInt16,   blinkUint16,
                                   blinkInt32,   blinkUint32,   blinkInt64,   blinkUint64,
                                   blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
  const blinkRedOp_t ops[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};
  const std::size_t count = 1001;
  std::mt19937 random(7);
  for (blinkDataType_t type : types) {
    const std::size_t bytes = count * blink::runtime::elementSize(type);
    std::vector<std::byte> a(bytes), b(bytes);
    for (auto& x : a) x = static_cast<std::byte>(random());
    for (auto& x : b) x = static_cast<std::byte>(random());
    for (blinkRedOp_t op : ops) {
      if (op == blinkAvg && !blink::runtime::isFloating(type)) continue;
      const blinkRedOp_t combine = op == blinkAvg ? blinkSum : op;
      std::vector<std::byte> expected = a;
      blink::runtime::reduceInto(expected.data(), b.data(), count, type, combine);
      Allocation da(*device, bytes), db(*device, bytes), out(*device, bytes);
      fromHost(*device, da.p, a.data(), bytes);
      fromHost(*device, db.p, b.data(), bytes);
      device->reduce(out.p, da.p, db.p, count, {type, op}, s);     // three operands
      device->reduce(db.p, da.p, db.p, count, {type, op}, s);      // dst aliases the incoming
      device->reduce(da.p, da.p, b.data(), count, {type, op}, s);  // dst aliases the first
      device->synchronize(s);
      const std::string what = blink::runtime::toString(type) + " " + blink::runtime::toString(op);
      EXPECT_EQ(toHost(*device, out.p, bytes), expected) << what;
      EXPECT_EQ(toHost(*device, db.p, bytes), expected) << what;
      EXPECT_EQ(toHost(*device, da.p, bytes), expected) << what;
      if (op == blinkAvg) {
        blink::runtime::divideBy(expected.data(), count, type, 3);
        device->divide(out.p, count, type, 3, s);
        device->synchronize(s);
        EXPECT_EQ(toHost(*device, out.p, bytes), expected) << what << " divided";
      }
    }
  }
}

TEST(EmulatedDevice, OpenedMemoryIsTheSameMemoryAndCountsAsTheDevices) {
  auto exporter = makeDevice(0), importer = makeDevice(0);
  Allocation a(*exporter, 8192);
  const blink::device::IpcHandle handle = exporter->exportMemory(a.p);
  auto* opened = static_cast<std::byte*>(importer->openMemory(handle));
  ASSERT_NE(opened, nullptr);
  EXPECT_TRUE(importer->owns(opened + 100));
  EXPECT_FALSE(importer->owns(a.p) && opened != a.p);
  const std::byte answer{42};
  fromHost(*exporter, a.p + 8191, &answer, 1);
  EXPECT_EQ(toHost(*importer, opened + 8191, 1)[0], answer);
  EXPECT_TRUE(exporter->owns(a.p + 8191));
  EXPECT_FALSE(exporter->owns(a.p + 8192 + 4096));
  int on_the_stack = 0;
  EXPECT_FALSE(exporter->owns(&on_the_stack));
  importer->closeMemory(opened);
  EXPECT_THROW(exporter->exportMemory(a.p + 64), blink::Error);
}

}  // namespace

// GPUs out of each other's peer reach (another socket's, on a PCIe machine) cannot
// map each other's memory, as CUDA IPC cannot; within reach they can.
TEST(EmulatedDevice, PeerAccessFollowsThePeerGroups) {
  auto gpu0 = makeDevice(0, 0, 2), gpu1 = makeDevice(0, 1, 2), gpu2 = makeDevice(0, 2, 2);
  EXPECT_TRUE(gpu0->canAccessPeer(gpu1->peerId()));
  EXPECT_FALSE(gpu0->canAccessPeer(gpu2->peerId()));
  EXPECT_FALSE(gpu2->canAccessPeer(gpu1->peerId()));
  EXPECT_FALSE(gpu0->canAccessPeer("0000:3b:00.0"));
  Allocation on2(*gpu2, 256);
  const blink::device::IpcHandle handle = gpu2->exportMemory(on2.p);
  EXPECT_THROW(gpu0->openMemory(handle), blink::Error);
  Allocation on1(*gpu1, 256);
  void* mapped = gpu0->openMemory(gpu1->exportMemory(on1.p));
  EXPECT_TRUE(gpu0->owns(mapped));
  gpu0->closeMemory(mapped);
  auto everyone = makeDevice(0, 7, 0);
  EXPECT_TRUE(everyone->canAccessPeer(gpu0->peerId()));
}
