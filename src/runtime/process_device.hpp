// The device this process runs collectives on GPU buffers with, as BLINK_DEVICE
// chooses: AUTO (CUDA where this process sees a usable GPU, else none), CUDA,
// EMULATED (transport/cuda/emulated_device.hpp: the GPU data path on host threads,
// for tests; BLINK_DEVICE_EMULATION_DELAY_US adds random delays), OFF.
#pragma once

#include <string>

#include "transport/cuda/device.hpp"

namespace blink::runtime {

// Made at the first call (thread-safe) and kept for the life of the process;
// `local_rank` picks the GPU then (local rank modulo the GPUs this process sees,
// after CUDA_VISIBLE_DEVICES). nullptr when there is none.
device::Device* processDevice(int local_rank);
// What processDevice() gave, or why there is none (after the first call).
std::string processDeviceNote();

}  // namespace blink::runtime
