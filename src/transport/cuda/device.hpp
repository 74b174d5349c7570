// A GPU as the runtime drives it: memory, streams, events, copies and reductions,
// and memory shared between processes (IPC). The executor, its scratch buffers and
// the CUDA transport use only this interface, so every rule of the GPU data path
// (what runs on which stream, which event orders what, when a slot may be reused)
// is exercised by the emulated device on machines without a GPU; only the thin
// calls into the CUDA runtime (cuda_device.cpp) need one.
//
// Ordering rules, as CUDA's: work queued on a stream runs in queue order and
// asynchronously to the caller; record(event, stream) marks the point reached by the
// stream's queue so far, done(event) says whether the stream has passed it (the
// last record), and wait(stream, event) holds the stream's later work until then.
// Work on different streams is unordered unless events order it. Copies and
// reductions read and write device memory: this process's allocations or a peer's
// opened by openMemory.
//
// Two implementations: cuda_device.cpp (the CUDA runtime) and emulated_device.cpp
// (threads as streams, for machines without a GPU). runtime/process_device.hpp picks
// one per process (BLINK_DEVICE).
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "blink/blink.h"
#include "common/combine.hpp"

namespace blink::device {

// Opaque bytes that name an allocation to another process of the node.
struct IpcHandle {
  std::array<char, 128> bytes{};
};

class Device {
 public:
  using Stream = int;
  using Event = int;

  virtual ~Device() = default;
  // "CUDA device 0 (NVIDIA H200)", "emulated device (3 streams)".
  virtual std::string describe() const = 0;
  virtual bool emulated() const = 0;

  // Memory of this device, zero-filled. Throws blink::Error(blinkSystemError).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  // Whether p points into memory of this device (an allocation of this process or
  // one opened from a peer). Never throws.
  virtual bool owns(const void* p) const = 0;

  // Streams and events, until destroyed (their numbers may then be reused). A stream
  // is destroyed once its work has run (the caller synchronizes first).
  virtual Stream createStream() = 0;
  virtual Event createEvent() = 0;
  virtual void destroyStream(Stream stream) noexcept = 0;
  virtual void destroyEvent(Event event) noexcept = 0;

  // Queued on `stream`. dst and src must not overlap unless equal; either may be
  // host memory (pinned: registerHost) instead of device memory.
  virtual void copy(void* dst, const void* src, std::size_t bytes, Stream stream) = 0;
  // dst[i] = op(a[i], b[i]) for count elements, a the accumulated operand; bit for bit
  // what the host kernels give (runtime/reduce_cpu.hpp). dst may alias a or b.
  virtual void reduce(void* dst, const void* a, const void* b, std::size_t count,
                      Reduction reduction, Stream stream) = 0;
  // data[i] /= divisor for floating types (the last step of avg), as divideBy does.
  virtual void divide(void* data, std::size_t count, blinkDataType_t type, int divisor,
                      Stream stream) = 0;

  virtual void record(Event event, Stream stream) = 0;
  virtual void wait(Stream stream, Event event) = 0;
  // Never blocks.
  virtual bool done(Event event) = 0;
  // Blocks until everything queued on `stream` has run.
  virtual void synchronize(Stream stream) = 0;
  // Blocks until work the caller queued on this device before the call (e.g. the
  // kernel that wrote a collective's input) has run; once per collective.
  virtual void synchronizeCaller() = 0;

  // Peer access between the GPUs of a node. peerId() names this device to other
  // processes ("0000:3b:00.0", its PCI bus id; "emulated GPU 2"); canAccessPeer says
  // whether this device can map the memory of the device so named (openMemory
  // works, copies go peer to peer over NVLink or PCIe). Where it cannot, the device
  // transport stages copies through pinned host memory. Never throw.
  virtual std::string peerId() const = 0;
  virtual bool canAccessPeer(const std::string& peer_id) const = 0;
  // Pins host memory (e.g. shared memory) for asynchronous copies to and from this
  // device (cudaHostRegister); copies work on unpinned memory too, synchronously.
  virtual void registerHost(void* p, std::size_t bytes) = 0;
  virtual void unregisterHost(void* p) noexcept = 0;

  // `base` must be the start of an allocation of this device.
  virtual IpcHandle exportMemory(void* base) = 0;
  // Maps a peer's allocation into this process (the same memory, not a copy).
  virtual void* openMemory(const IpcHandle& handle) = 0;
  virtual void closeMemory(void* p) noexcept = 0;
};

}  // namespace blink::device
