// The device emulated on the host: each stream is a thread running its queue in
// order, events are counters the streams advance, memory is POSIX shared memory
// (so that a peer process can open it by name, as CUDA IPC opens a GPU buffer), and
// copies and reductions are memcpy and the host kernels. It keeps CUDA's ordering
// rules and no more: work on different streams is unordered unless events order it,
// and with a random delay per operation (BLINK_DEVICE_EMULATION_DELAY_US) a rule
// broken by the code above shows up as wrong bytes or a hang in tests.
#pragma once

#include <memory>

#include "transport/cuda/device.hpp"

namespace blink::device {

// The host's reduction kernels (runtime/reduce_cpu.hpp, a layer above), which the
// emulated streams run: the emulation is bit for bit the host path by construction.
struct HostKernels {
  void (*reduce_into)(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                      blinkRedOp_t op);
  void (*divide_by)(void* buf, std::size_t count, blinkDataType_t type, int divisor);
  std::size_t (*element_size)(blinkDataType_t type);
};

struct EmulationOptions {
  int max_delay_us = 0;  // each stream operation first sleeps a random time up to this
  int gpu = 0;           // the GPU it plays (the local rank): its peer id
  // GPUs i and j reach each other peer to peer only when i / peer_group == j /
  // peer_group (e.g. 4: a PCIe machine whose two sockets' GPUs cannot); 0: all
  // pairs. Opening the memory of a GPU out of reach fails, as CUDA IPC does.
  int peer_group = 0;
  // Every openMemory fails, as a CUDA IPC error would (tests of the fallback).
  bool fail_ipc = false;
};

std::unique_ptr<Device> makeEmulatedDevice(EmulationOptions options, HostKernels kernels);

}  // namespace blink::device
