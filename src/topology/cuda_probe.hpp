// What the CUDA runtime says about the GPUs of this process. Built without CUDA,
// or run where no driver or device exists, it reports zero devices: a machine
// without GPUs is a normal machine for Blink, not an error.
#pragma once

#include <string>
#include <vector>

namespace blink::topo {

struct CudaDeviceInfo {
  int ordinal = -1;
  std::string name;
  std::string pci_bus_id;  // "0000:06:00.0", lower case, as hwloc writes it
};

struct CudaProbe {
  std::vector<CudaDeviceInfo> devices;
  // can_access_peer[i][j]: cudaDeviceCanAccessPeer(i, j) (false on the diagonal).
  std::vector<std::vector<bool>> can_access_peer;
  // Why there are no devices, when there are none ("" otherwise), for BLINK_DEBUG=INFO.
  std::string why_none;
};

// Queries the runtime once per call; cheap (about a millisecond) when no driver exists.
CudaProbe probeCuda();

}  // namespace blink::topo
