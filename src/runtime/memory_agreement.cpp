#include "runtime/memory_agreement.hpp"

#include <cstdint>
#include <limits>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "runtime/memory_type.hpp"

namespace blink::runtime {
namespace {

constexpr const char* kNoDevicePath =
    "); this communicator has no device data path (a rank has no Blink device, or the "
    "ranks' devices differ: see blinkCommExplain), so Blink moves host memory only";

// A rank's verdict as one number, so that a MIN reduction yields the lowest rank
// with a buffer it may not pass, and which buffer and type, identically everywhere.
constexpr std::int64_t kTypes = 8;
constexpr std::int64_t kMaxBuffers = 4;
constexpr std::int64_t kAllHost = std::numeric_limits<std::int64_t>::max();

std::int64_t encode(int rank, std::size_t buffer, MemoryType type) {
  return (static_cast<std::int64_t>(rank) * kMaxBuffers + static_cast<std::int64_t>(buffer)) *
             kTypes +
         static_cast<std::int64_t>(type);
}

}  // namespace

MemoryAgreement::MemoryAgreement(MPI_Comm comm, double timeout_seconds, device::Device* device)
    : comm_(comm), timeout_seconds_(timeout_seconds), device_(device) {
  PMPI_Comm_rank(comm, &rank_);
  // {any rank has a driver or device, some rank has no device, some rank has an
  // emulated one, some rank a real one} in one reduction: a device path needs a
  // device of the same kind on every rank (an emulated one cannot open a GPU's IPC).
  const bool emulated = device != nullptr && device->emulated();
  const int mine[4] = {CudaDriver::process().usable() || device != nullptr ? 1 : 0,
                       device == nullptr ? 1 : 0, emulated ? 1 : 0,
                       device != nullptr && !emulated ? 1 : 0};
  int any[4] = {0, 0, 0, 0};
  allreduceWithin(mine, any, 4, MPI_INT, MPI_MAX, comm, timeout_seconds,
                  "agreeing whether any rank has a CUDA driver");
  cuda_anywhere_ = any[0] != 0;
  device_everywhere_ = any[1] == 0 && !(any[2] != 0 && any[3] != 0);
  if (rank_ == 0) {
    BLINK_LOG(Info,
              "memory: " << describe() << " (rank 0: " << CudaDriver::process().describe() << ")");
  }
}

void MemoryAgreement::requireHostMemory(std::initializer_list<Buffer> buffers) const {
  if (!cuda_anywhere_) return;
  if (buffers.size() > static_cast<std::size_t>(kMaxBuffers)) {
    throw Error(blinkInternalError, "requireHostMemory: too many buffers");
  }
  const CudaDriver& driver = CudaDriver::process();
  std::int64_t mine = kAllHost;
  std::size_t index = 0;
  for (const Buffer& buffer : buffers) {
    const MemoryType type = driver.classify(buffer.pointer);
    if (!hostAccessible(type)) {
      mine = encode(rank_, index, type);
      break;
    }
    ++index;
  }
  std::int64_t lowest = kAllHost;
  allreduceWithin(&mine, &lowest, 1, MPI_INT64_T, MPI_MIN, comm_, timeout_seconds_,
                  "agreeing on the memory types of the buffers");
  if (lowest == kAllHost) return;
  const auto type = static_cast<MemoryType>(lowest % kTypes);
  const auto buffer = static_cast<std::size_t>(lowest / kTypes % kMaxBuffers);
  const auto rank = lowest / kTypes / kMaxBuffers;
  const char* name = buffer < buffers.size() ? buffers.begin()[buffer].name : "a buffer";
  throw MemoryTypeError(blinkInvalidUsage, "rank " + std::to_string(rank) + " passed " +
                                               runtime::describe(type) + " (" + name +
                                               kNoDevicePath);
}

bool MemoryAgreement::onDevice(std::initializer_list<Buffer> buffers, bool device_path,
                               const std::function<void()>& prepare) const {
  if (!cuda_anywhere_) return false;
  if (buffers.size() > static_cast<std::size_t>(kMaxBuffers)) {
    throw Error(blinkInternalError, "onDevice: too many buffers");
  }
  const CudaDriver& driver = CudaDriver::process();
  // {the lowest bad buffer's code, -(any device buffer), -(any host buffer), -(a
  // device failed to prepare)}: one MIN.
  std::int64_t mine[4] = {kAllHost, 0, 0, 0};
  std::size_t index = 0;
  for (const Buffer& buffer : buffers) {
    if (buffer.pointer != nullptr) {
      if (device_ != nullptr && device_->owns(buffer.pointer)) {
        mine[1] = -1;
      } else if (const MemoryType type = driver.classify(buffer.pointer); hostAccessible(type)) {
        mine[2] = -1;
      } else if (mine[0] == kAllHost) {
        mine[0] = encode(rank_, index, type);
      }
    }
    ++index;
  }
  std::string prepare_failure;
  if (prepare && device_path && mine[0] == kAllHost && mine[1] != 0 && mine[2] == 0) {
    try {
      prepare();
    } catch (const Error& e) {
      prepare_failure = e.what();
      mine[3] = -1;
    }
  }
  std::int64_t all[4] = {kAllHost, 0, 0, 0};
  allreduceWithin(mine, all, 4, MPI_INT64_T, MPI_MIN, comm_, timeout_seconds_,
                  "agreeing on the memory types of the buffers");
  if (all[0] != kAllHost) {
    const auto type = static_cast<MemoryType>(all[0] % kTypes);
    const auto buffer = static_cast<std::size_t>(all[0] / kTypes % kMaxBuffers);
    const auto rank = all[0] / kTypes / kMaxBuffers;
    const char* name = buffer < buffers.size() ? buffers.begin()[buffer].name : "a buffer";
    throw MemoryTypeError(
        blinkInvalidUsage,
        "rank " + std::to_string(rank) + " passed " + runtime::describe(type) + " (" + name +
            (device_everywhere_ ? ") that is not memory of its Blink device (BLINK_DEVICE); Blink "
                                  "moves host memory and its device's memory only"
                                : kNoDevicePath));
  }
  const bool any_device = all[1] != 0, any_host = all[2] != 0;
  if (!any_device) return false;
  if (any_host) {
    throw MemoryTypeError(blinkInvalidUsage,
                          "the buffers of this call mix host and device memory (across the "
                          "ranks or within one); Blink needs all of one kind");
  }
  if (!device_path) {
    throw MemoryTypeError(blinkInvalidUsage,
                          "device buffers, but this communicator has no GPU data path (it needs "
                          "a device on every rank and all ranks on one node)");
  }
  if (all[3] != 0) {
    throw MemoryTypeError(blinkSystemError,
                          prepare_failure.empty()
                              ? "another rank's device failed before the call (see its error)"
                              : "the device failed before the call: " + prepare_failure);
  }
  return true;
}

std::string MemoryAgreement::describe() const {
  std::string text = device_everywhere_
                         ? "host memory (pageable or CUDA-registered) and device memory of every "
                           "rank's Blink device; "
                         : "host memory only (pageable or CUDA-registered); ";
  if (cuda_anywhere_) {
    return text +
           (device_everywhere_
                ? "every rank has a device, so every call first agrees on the kind of all its "
                  "buffers, and refuses other memory on every rank alike"
                : "a rank has a CUDA driver, so every call first agrees that all its buffers are "
                  "host memory, and refuses device or managed memory on every rank alike");
  }
  return text + "no rank has a usable CUDA driver, so buffers are not checked";
}

}  // namespace blink::runtime
