#include "runtime/memory_type.hpp"

#include <dlfcn.h>

namespace blink::runtime {
namespace {

// The slice of the CUDA driver ABI used here, as cuda.h declares it (CUresult and
// the enums are ints, CUdeviceptr is unsigned long long on 64-bit systems). These
// entry points have had one version since CUDA 4, so the plain names are right.
constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorInvalidValue = 1;  // not a pointer the driver knows: host memory
constexpr int kCudaErrorNotInitialized = 3;
constexpr int kCudaErrorDeinitialized = 4;
constexpr int kCudaErrorInvalidContext = 201;
constexpr int kPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kPointerAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kMemoryTypeHost = 1;         // CU_MEMORYTYPE_HOST
constexpr unsigned kMemoryTypeDevice = 2;       // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemoryTypeArray = 3;        // CU_MEMORYTYPE_ARRAY
constexpr unsigned kMemoryTypeUnified = 4;      // CU_MEMORYTYPE_UNIFIED

using InitFn = int (*)(unsigned flags);
using DriverGetVersionFn = int (*)(int* version);
using GetErrorStringFn = int (*)(int error, const char** text);

// dlsym returns an object pointer; POSIX guarantees it converts to a function pointer.
template <typename Function>
Function resolve(void* library, const char* symbol) {
  return reinterpret_cast<Function>(dlsym(library, symbol));
}

std::string cudaErrorText(void* library, int rc) {
  std::string text = "CUDA error " + std::to_string(rc);
  const char* message = nullptr;
  if (auto error_string = resolve<GetErrorStringFn>(library, "cuGetErrorString");
      error_string != nullptr && error_string(rc, &message) == kCudaSuccess && message != nullptr) {
    text += std::string(": ") + message;
  }
  return text;
}

}  // namespace

const char* describe(MemoryType type) {
  switch (type) {
    case MemoryType::Host:
      return "host memory";
    case MemoryType::CudaHostRegistered:
      return "CUDA-registered (pinned) host memory";
    case MemoryType::CudaDevice:
      return "CUDA device memory";
    case MemoryType::CudaManaged:
      return "CUDA managed memory";
    case MemoryType::CudaUnknown:
      return "memory the CUDA driver could not classify";
  }
  return "?";
}

bool hostAccessible(MemoryType type) {
  // Managed memory is readable by the CPU on most systems, but not while a kernel
  // uses it on GPUs without concurrent managed access: it waits for a device path.
  return type == MemoryType::Host || type == MemoryType::CudaHostRegistered;
}

CudaDriver CudaDriver::load(const std::string& library) {
  CudaDriver driver;
  driver.library_ = library;
  // Never closed: the CUDA runtime may hold the same library, and unloading a
  // driver that was initialised is not supported.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    driver.why_not_ = error != nullptr ? error : library + ": cannot be loaded";
    return driver;
  }
  auto init = resolve<InitFn>(handle, "cuInit");
  auto pointer_attribute = resolve<PointerAttributeFn>(handle, "cuPointerGetAttribute");
  if (init == nullptr || pointer_attribute == nullptr) {
    driver.why_not_ = library + " lacks cuInit or cuPointerGetAttribute";
    return driver;
  }
  if (int rc = init(0); rc != kCudaSuccess) {
    driver.why_not_ = "cuInit failed (" + cudaErrorText(handle, rc) + ")";
    return driver;
  }
  if (auto get_version = resolve<DriverGetVersionFn>(handle, "cuDriverGetVersion")) {
    if (get_version(&driver.version_) != kCudaSuccess) driver.version_ = 0;
  }
  driver.pointer_attribute_ = pointer_attribute;
  return driver;
}

const CudaDriver& CudaDriver::process() {
  static const CudaDriver driver = load("libcuda.so.1");
  return driver;
}

std::string CudaDriver::describe() const {
  if (!usable()) return "no CUDA driver (" + why_not_ + ")";
  std::string text = "CUDA driver";
  if (version_ > 0) {
    text += " " + std::to_string(version_ / 1000) + "." + std::to_string(version_ % 1000 / 10);
  }
  return text + " (" + library_ + ")";
}

MemoryType CudaDriver::classify(const void* p) const {
  if (!usable() || p == nullptr) return MemoryType::Host;
  const auto address = reinterpret_cast<unsigned long long>(p);
  unsigned memory_type = 0;
  const int rc = pointer_attribute_(&memory_type, kPointerAttributeMemoryType, address);
  if (rc == kCudaErrorInvalidValue || rc == kCudaErrorNotInitialized ||
      rc == kCudaErrorDeinitialized || rc == kCudaErrorInvalidContext) {
    return MemoryType::Host;  // no CUDA allocation holds it
  }
  if (rc != kCudaSuccess) return MemoryType::CudaUnknown;
  // A bool in the driver's documentation: read into a zeroed int, any width fits.
  unsigned managed = 0;
  if (pointer_attribute_(&managed, kPointerAttributeIsManaged, address) == kCudaSuccess &&
      managed != 0) {
    return MemoryType::CudaManaged;
  }
  switch (memory_type) {
    case kMemoryTypeHost:
      return MemoryType::CudaHostRegistered;
    case kMemoryTypeDevice:
    case kMemoryTypeArray:
      return MemoryType::CudaDevice;
    case kMemoryTypeUnified:
      return MemoryType::CudaManaged;
    default:
      return MemoryType::CudaUnknown;
  }
}

}  // namespace blink::runtime
