#include "runtime/memory_agreement.hpp"

#include <cstdint>
#include <limits>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/mpi_wait.hpp"
#include "runtime/memory_type.hpp"

namespace blink::runtime {
namespace {

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

MemoryAgreement::MemoryAgreement(MPI_Comm comm, double timeout_seconds)
    : comm_(comm), timeout_seconds_(timeout_seconds) {
  PMPI_Comm_rank(comm, &rank_);
  const int mine = CudaDriver::process().usable() ? 1 : 0;
  int any = 0;
  allreduceWithin(&mine, &any, 1, MPI_INT, MPI_MAX, comm, timeout_seconds,
                  "agreeing whether any rank has a CUDA driver");
  cuda_anywhere_ = any != 0;
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
  throw MemoryTypeError(blinkInvalidUsage,
                        "rank " + std::to_string(rank) + " passed " + runtime::describe(type) +
                            " (" + name +
                            "); Blink has no data path for device memory yet (host memory only)");
}

std::string MemoryAgreement::describe() const {
  std::string text = "host memory only (pageable or CUDA-registered); ";
  if (cuda_anywhere_) {
    return text +
           "a rank has a CUDA driver, so every call first agrees that all its buffers are host "
           "memory, and refuses device or managed memory on every rank alike";
  }
  return text + "no rank has a usable CUDA driver, so buffers are not checked";
}

}  // namespace blink::runtime
