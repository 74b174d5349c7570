// The ranks of a communicator agree on the memory types of a collective's buffers
// before any data moves, because a decision taken from local memory types alone
// could split them (rank 0 may pass a device pointer, rank 1 a host one).
//
// At creation the ranks agree, with one reduction, whether a usable CUDA driver
// exists on any rank. Only then does each collective classify its buffers and
// agree on "all host memory" with one more small reduction; without a driver
// anywhere a collective checks nothing and pays nothing.
#pragma once

#include <mpi.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "transport/cuda/device.hpp"

namespace blink::runtime {

class MemoryAgreement {
 public:
  struct Buffer {
    const void* pointer;  // nullptr where this rank does not use the buffer
    const char* name;     // "sendbuff", "recvbuff": the same list on every rank
  };

  MemoryAgreement() = default;  // checks nothing
  // Collective over `comm` (a communicator only Blink uses): one reduction.
  // `device`: this rank's device for collectives on GPU buffers (or none).
  MemoryAgreement(MPI_Comm comm, double timeout_seconds, device::Device* device = nullptr);

  bool checksBuffers() const { return cuda_anywhere_; }
  // Every rank has a device, all emulated or all real (so device buffers may take
  // the GPU data path).
  bool deviceEverywhere() const { return device_everywhere_; }

  // Collective when checksBuffers(). False when every rank's buffers are host
  // memory; true when they are all memory of the ranks' devices and
  // `device_path` (agreed by every rank: the path exists). Otherwise throws
  // MemoryTypeError(blinkInvalidUsage) on every rank alike, naming the lowest rank
  // with a buffer that cannot go, or saying that host and device buffers are mixed.
  // `prepare` runs where this rank's buffers are all device memory and the path
  // exists, before the agreement: if it throws (a CUDA error), every rank throws
  // MemoryTypeError alike.
  bool onDevice(std::initializer_list<Buffer> buffers, bool device_path,
                const std::function<void()>& prepare = {}) const;

  // Collective when checksBuffers(). Throws MemoryTypeError(blinkInvalidUsage) on
  // every rank alike when some rank's buffer is not host memory, naming the lowest
  // such rank, its buffer and its memory type.
  void requireHostMemory(std::initializer_list<Buffer> buffers) const;

  // What the communicator accepts and why it checks or not, for explain().
  std::string describe() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  double timeout_seconds_ = 0;
  int rank_ = 0;
  bool cuda_anywhere_ = false;
  device::Device* device_ = nullptr;
  bool device_everywhere_ = false;
};

}  // namespace blink::runtime
