#include "topology/cuda_probe.hpp"

#include <algorithm>
#include <cctype>

#include "common/build_config.h"

#if BLINK_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace blink::topo {

CudaProbe probeCuda() {
  CudaProbe probe;
#if BLINK_HAVE_CUDA
  // cudaGetDeviceCount leaves the count unwritten on failure (e.g. error 35,
  // insufficient driver, on a machine without a GPU): start from 0.
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count <= 0) {
    probe.why_none = rc != cudaSuccess ? std::string("CUDA runtime: ") + cudaGetErrorString(rc)
                                       : std::string("CUDA runtime reports no devices");
    (void)cudaGetLastError();  // clear the sticky error for later callers
    return probe;
  }
  for (int i = 0; i < count; ++i) {
    CudaDeviceInfo info;
    info.ordinal = i;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) info.name = prop.name;
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) == cudaSuccess) {
      info.pci_bus_id = bus;
      std::transform(info.pci_bus_id.begin(), info.pci_bus_id.end(), info.pci_bus_id.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    probe.devices.push_back(std::move(info));
  }
  probe.can_access_peer.assign(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      int ok = 0;
      if (i != j && cudaDeviceCanAccessPeer(&ok, i, j) == cudaSuccess) {
        probe.can_access_peer[i][j] = ok != 0;
      }
    }
  }
#else
  probe.why_none = "built without CUDA (BLINK_ENABLE_CUDA=OFF or no nvcc)";
#endif
  return probe;
}

}  // namespace blink::topo
