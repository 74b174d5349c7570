// Which kind of memory a buffer handed to a collective is: pageable host memory,
// CUDA device memory, CUDA managed memory or host memory registered with CUDA
// (pinned). The node algorithms and host transports move host memory only, with
// memcpy and shared memory; a device pointer must never reach those (device memory
// takes the device path, communicator.hpp).
//
// The CUDA driver (libcuda.so.1) is loaded with dlopen, never linked: where no
// driver exists, or it cannot initialise (no device), nothing is loaded and every
// pointer is host memory, at no cost after the first check. The few driver
// declarations needed are written out in memory_type.cpp (no cuda.h here).
#pragma once

#include <string>

#include "common/error.hpp"

namespace blink::runtime {

enum class MemoryType {
  Host,                // pageable, or unknown to CUDA
  CudaHostRegistered,  // cudaMallocHost / cudaHostRegister: host memory, pinned
  CudaDevice,
  CudaManaged,
  CudaUnknown,  // the driver failed to say (treated as memory the CPU must not touch)
};

// "host memory", "CUDA device memory", ... for messages.
const char* describe(MemoryType type);

// Whether the CPU paths (memcpy, shared memory, cross-memory attach) may move it.
bool hostAccessible(MemoryType type);

// The CUDA driver as loaded by this process (or not).
class CudaDriver {
 public:
  // Opens `library` (a soname or path), resolves the entry points and calls cuInit.
  // Never throws: a driver that is absent, incomplete or fails cuInit is not usable.
  static CudaDriver load(const std::string& library);

  // The process-wide driver: libcuda.so.1, loaded on the first call (thread-safe).
  static const CudaDriver& process();

  bool usable() const { return pointer_attribute_ != nullptr; }
  // Why the driver is not usable ("" when it is), e.g. "libcuda.so.1: cannot open ...".
  const std::string& whyNot() const { return why_not_; }
  // cuDriverGetVersion, e.g. 12040 for CUDA 12.4 (0 when unknown or not usable).
  int version() const { return version_; }
  // "CUDA driver 12.4 (libcuda.so.1)" or "no CUDA driver (why)".
  std::string describe() const;

  // Host when the driver is not usable or does not know the pointer.
  MemoryType classify(const void* p) const;

 private:
  using PointerAttributeFn = int (*)(void* data, int attribute, unsigned long long pointer);
  PointerAttributeFn pointer_attribute_ = nullptr;
  std::string library_;
  std::string why_not_;
  int version_ = 0;
};

// Thrown together on every rank of a communicator when some rank passed memory the
// runtime cannot move (before any data moves). The interposer hands such a call to
// the MPI library (fallback reason memory_type), the C API returns its status.
class MemoryTypeError : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
  int kind() const noexcept override { return 2; }
};

}  // namespace blink::runtime
