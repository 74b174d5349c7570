// The device on a real GPU: thin calls into the CUDA runtime (compiled only in
// builds with CUDA; every rule about what runs where lives in the callers and is
// tested on the emulated device).
#pragma once

#include <memory>
#include <string>

#include "transport/cuda/device.hpp"

namespace blink::device {

// GPU `local_rank` modulo the GPUs this process sees (CUDA_VISIBLE_DEVICES applies),
// or nullptr with `why_not` set where there is none or the build has no CUDA.
std::unique_ptr<Device> makeCudaDevice(int local_rank, std::string& why_not);

}  // namespace blink::device
