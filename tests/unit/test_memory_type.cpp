// Buffer classification through the CUDA driver, with tests/unit/fake_cuda.c as
// the driver: it reports ranges of host memory the test marks as device, managed
// or registered memory.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "runtime/memory_type.hpp"

namespace {

using blink::runtime::CudaDriver;
using blink::runtime::MemoryType;

// The kinds of fake_cuda_mark.
constexpr int kUnmark = 0, kDevice = 1, kManaged = 2, kRegistered = 3;

using MarkFn = int (*)(const void*, std::size_t, int);

MarkFn fakeMark() {
  void* fake = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  if (fake == nullptr) return nullptr;
  return reinterpret_cast<MarkFn>(dlsym(fake, "fake_cuda_mark"));
}

TEST(MemoryType, WithoutADriverEveryPointerIsHost) {
  const CudaDriver driver = CudaDriver::load("libblink-no-such-driver.so.1");
  EXPECT_FALSE(driver.usable());
  EXPECT_NE(driver.whyNot().find("libblink-no-such-driver.so.1"), std::string::npos)
      << driver.whyNot();
  EXPECT_EQ(driver.describe().rfind("no CUDA driver (", 0), 0u) << driver.describe();
  int local = 0;
  EXPECT_EQ(driver.classify(&local), MemoryType::Host);
  EXPECT_EQ(driver.classify(nullptr), MemoryType::Host);
}

TEST(MemoryType, ALibraryWithoutTheDriverEntryPointsIsNoDriver) {
  const CudaDriver driver = CudaDriver::load(FAKE_NVML_PATH);
  EXPECT_FALSE(driver.usable());
  EXPECT_NE(driver.whyNot().find("lacks cuInit"), std::string::npos) << driver.whyNot();
}

TEST(MemoryType, ClassifiesHostDeviceManagedAndRegisteredPointers) {
  const CudaDriver driver = CudaDriver::load(FAKE_CUDA_PATH);
  ASSERT_TRUE(driver.usable()) << driver.whyNot();
  EXPECT_EQ(driver.version(), 12040);
  EXPECT_EQ(driver.describe(), std::string("CUDA driver 12.4 (") + FAKE_CUDA_PATH + ")");
  const MarkFn mark = fakeMark();
  ASSERT_NE(mark, nullptr);

  std::vector<char> device(4096), managed(64), registered(64), host(64);
  ASSERT_EQ(mark(device.data(), device.size(), kDevice), 0);
  ASSERT_EQ(mark(managed.data(), managed.size(), kManaged), 0);
  ASSERT_EQ(mark(registered.data(), registered.size(), kRegistered), 0);

  EXPECT_EQ(driver.classify(host.data()), MemoryType::Host);
  EXPECT_EQ(driver.classify(nullptr), MemoryType::Host);
  EXPECT_EQ(driver.classify(device.data()), MemoryType::CudaDevice);
  EXPECT_EQ(driver.classify(device.data() + 1000), MemoryType::CudaDevice);
  EXPECT_EQ(driver.classify(managed.data()), MemoryType::CudaManaged);
  EXPECT_EQ(driver.classify(registered.data()), MemoryType::CudaHostRegistered);

  EXPECT_TRUE(hostAccessible(MemoryType::Host));
  EXPECT_TRUE(hostAccessible(MemoryType::CudaHostRegistered));
  EXPECT_FALSE(hostAccessible(MemoryType::CudaDevice));
  EXPECT_FALSE(hostAccessible(MemoryType::CudaManaged));
  EXPECT_FALSE(hostAccessible(MemoryType::CudaUnknown));
  EXPECT_STREQ(describe(MemoryType::CudaDevice), "CUDA device memory");

  for (const auto* p : {device.data(), managed.data(), registered.data()}) {
    ASSERT_EQ(mark(p, 0, kUnmark), 0);
    EXPECT_EQ(driver.classify(p), MemoryType::Host);
  }
}

// No context means no CUDA allocation can hold the pointer; an error the driver does
// not explain leaves the memory unknown, and unknown memory is not moved by the CPU.
TEST(MemoryType, DriverErrorsOnAPointerAreHostOrUnknown) {
  const CudaDriver driver = CudaDriver::load(FAKE_CUDA_PATH);
  ASSERT_TRUE(driver.usable()) << driver.whyNot();
  const MarkFn mark = fakeMark();
  ASSERT_NE(mark, nullptr);
  std::vector<char> device(64);
  ASSERT_EQ(mark(device.data(), device.size(), kDevice), 0);
  const std::pair<const char*, MemoryType> cases[] = {
      {"201", MemoryType::Host},         // CUDA_ERROR_INVALID_CONTEXT
      {"3", MemoryType::Host},           // CUDA_ERROR_NOT_INITIALIZED
      {"4", MemoryType::Host},           // CUDA_ERROR_DEINITIALIZED
      {"700", MemoryType::CudaUnknown},  // CUDA_ERROR_ILLEGAL_ADDRESS
  };
  for (const auto& [result, type] : cases) {
    setenv("FAKE_CUDA_POINTER_RESULT", result, 1);
    EXPECT_EQ(driver.classify(device.data()), type) << "CUDA error " << result;
  }
  unsetenv("FAKE_CUDA_POINTER_RESULT");
  EXPECT_EQ(driver.classify(device.data()), MemoryType::CudaDevice);
  mark(device.data(), 0, kUnmark);
}

TEST(MemoryType, ADriverWhoseInitFailsIsNoDriver) {
  setenv("FAKE_CUDA_INIT_RESULT", "100", 1);  // CUDA_ERROR_NO_DEVICE
  const CudaDriver driver = CudaDriver::load(FAKE_CUDA_PATH);
  unsetenv("FAKE_CUDA_INIT_RESULT");
  EXPECT_FALSE(driver.usable());
  EXPECT_NE(driver.whyNot().find("cuInit failed (CUDA error 100: no CUDA-capable device"),
            std::string::npos)
      << driver.whyNot();
  const MarkFn mark = fakeMark();
  ASSERT_NE(mark, nullptr);
  std::vector<char> device(64);
  ASSERT_EQ(mark(device.data(), device.size(), kDevice), 0);
  EXPECT_EQ(driver.classify(device.data()), MemoryType::Host);  // nothing is asked
  mark(device.data(), 0, kUnmark);
}

}  // namespace
