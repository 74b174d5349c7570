#include "runtime/process_device.hpp"

#include <memory>
#include <mutex>

#include "common/env.hpp"
#include "runtime/reduce_cpu.hpp"
#include "transport/cuda/cuda_device.hpp"
#include "transport/cuda/emulated_device.hpp"

namespace blink::runtime {
namespace {

struct ProcessDevice {
  std::once_flag made;
  std::unique_ptr<device::Device> device;
  std::string note;
};

ProcessDevice& state() {
  // Never destroyed: collectives may run until exit, and the CUDA runtime may be
  // torn down before static destructors run.
  static auto* s = new ProcessDevice;
  return *s;
}

void reduceIntoKernel(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                      blinkRedOp_t op) {
  reduceInto(inout, in, count, type, op);
}

}  // namespace

device::Device* processDevice(int local_rank) {
  ProcessDevice& s = state();
  std::call_once(s.made, [&] {
    const std::string choice = env::getChoice("BLINK_DEVICE");
    if (choice == "OFF") {
      s.note = "no device (BLINK_DEVICE=OFF)";
      return;
    }
    if (choice == "EMULATED") {
      device::EmulationOptions options;
      options.max_delay_us = static_cast<int>(env::getInt("BLINK_DEVICE_EMULATION_DELAY_US"));
      options.gpu = local_rank;
      options.peer_group = static_cast<int>(env::getInt("BLINK_DEVICE_EMULATION_PEER_GROUP"));
      options.fail_ipc = env::getChoice("BLINK_DEVICE_EMULATION_FAIL_IPC") == "1";
      s.device = device::makeEmulatedDevice(options, {&reduceIntoKernel, &divideBy, &elementSize});
      s.note = s.device->describe() + " (BLINK_DEVICE=EMULATED)";
      return;
    }
    std::string why_not;
    s.device = device::makeCudaDevice(local_rank, why_not);
    s.note = s.device ? s.device->describe() : "no device: " + why_not;
    if (!s.device && choice == "CUDA") s.note += " (BLINK_DEVICE=CUDA)";
  });
  return s.device.get();
}

std::string processDeviceNote() {
  return state().note;
}

}  // namespace blink::runtime
