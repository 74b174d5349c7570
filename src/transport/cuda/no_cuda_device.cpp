// Builds without CUDA: there is no GPU device (the emulated one still is).
#include "transport/cuda/cuda_device.hpp"

namespace blink::device {

std::unique_ptr<Device> makeCudaDevice(int /*local_rank*/, std::string& why_not) {
  why_not = "this build of Blink has no CUDA (BLINK_ENABLE_CUDA)";
  return nullptr;
}

}  // namespace blink::device
