// What NVML says about the GPUs of this machine and their NVLinks. NVML is loaded
// at run time with dlopen, so Blink builds and runs where no NVIDIA driver exists;
// there it reports no GPUs and says why, it never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace blink::topo {

struct NvmlNvLink {
  std::string remote_pci_bus_id;  // "0000:07:00.0" (lower case), a GPU or an NVSwitch
  unsigned version = 0;           // raw nvmlDeviceGetNvLinkVersion value (0 if unknown)
};

struct NvmlGpu {
  int index = -1;                  // NVML's index (PCI bus order on real drivers)
  std::string name;                // "Tesla V100-SXM2-16GB"
  std::string pci_bus_id;          // "0000:06:00.0", lower case, as hwloc writes it
  std::vector<NvmlNvLink> nvlink;  // one entry per ACTIVE link
};

struct NvmlView {
  std::vector<NvmlGpu> gpus;
  // Why there are no GPUs, when there are none ("" otherwise), for BLINK_DEBUG=INFO.
  std::string why_none;
};

inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";

// Loads `library_path` (empty = libnvidia-ml.so.1), initialises NVML, reads every
// GPU and its active NVLinks, shuts NVML down and unloads it again.
NvmlView queryNvml(const std::string& library_path = "");

// "00000000:8A:00.0" (NVML's 8-digit domain, upper case) or "8a:00.0" -> "0000:8a:00.0".
// Returns "" when `raw` is not a PCI bus id.
std::string normalizePciBusId(std::string_view raw);

// The link generation ("nvlink1".."nvlink5") of an nvmlDeviceGetNvLinkVersion value,
// or "" when the value is not one NVML defines.
std::string nvlinkGenerationOf(unsigned nvml_version);

}  // namespace blink::topo
