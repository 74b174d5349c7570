#include "topology/nvml_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <memory>

#include "common/log.hpp"

namespace blink::topo {

namespace {

// The slice of the NVML ABI Blink uses, declared here because no nvml.h is
// installed where Blink is built. These must match NVML's C declarations exactly.
using nvmlReturn_t = int;  // an enum in nvml.h; NVML_SUCCESS is 0
constexpr nvmlReturn_t kNvmlSuccess = 0;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEnableState_t = int;  // NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1
constexpr nvmlEnableState_t kNvmlFeatureEnabled = 1;
constexpr unsigned kNvmlNvLinkMaxLinks = 18;        // NVML_NVLINK_MAX_LINKS
constexpr unsigned kNvmlDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

struct nvmlPciInfo_t {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id << 16 | vendor id
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:06:00.0"
};

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*errorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*deviceGetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*deviceGetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*deviceGetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*deviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*deviceGetNvLinkState)(nvmlDevice_t, unsigned int, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*deviceGetNvLinkRemotePciInfo)(nvmlDevice_t, unsigned int,
                                               nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*deviceGetNvLinkVersion)(nvmlDevice_t, unsigned int, unsigned int*) = nullptr;

  std::string describe(nvmlReturn_t rc) const {
    std::string text = "NVML error " + std::to_string(rc);
    if (errorString != nullptr) {
      if (const char* message = errorString(rc)) text += std::string(" (") + message + ")";
    }
    return text;
  }
};

struct LibraryCloser {
  void operator()(void* handle) const { dlclose(handle); }
};
using LibraryHandle = std::unique_ptr<void, LibraryCloser>;

// dlsym returns an object pointer; POSIX guarantees it converts to a function pointer.
template <typename Function>
void resolve(void* library, const char* symbol, Function*& out) {
  out = reinterpret_cast<Function*>(dlsym(library, symbol));
}

// Several NVML entry points were versioned over the years; take the newest present.
template <typename Function>
void resolveFirst(void* library, std::initializer_list<const char*> symbols, Function*& out) {
  out = nullptr;
  for (const char* symbol : symbols) {
    resolve(library, symbol, out);
    if (out != nullptr) return;
  }
}

// The bus id of a PCI info record, normalised; from the numeric fields when the string
// is unusable. Those sit at the same offsets in the older record that pre-_v2 entry
// points fill (16-byte busId first, reserved words where busId is now), so a zeroed
// record read through either layout yields the right bus. NVML does not report the
// function number there; it is 0 for GPUs.
std::string busIdOf(const nvmlPciInfo_t& info) {
  char bounded[sizeof info.busId + 1] = {};
  std::copy(std::begin(info.busId), std::end(info.busId), bounded);
  std::string id = normalizePciBusId(bounded);
  if (!id.empty()) return id;
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", info.domain, info.bus, info.device);
  return text;
}

NvmlGpu readGpu(const NvmlApi& api, unsigned index, nvmlDevice_t device) {
  NvmlGpu gpu;
  gpu.index = static_cast<int>(index);
  char name[kNvmlDeviceNameBufferSize] = {};
  if (api.deviceGetName != nullptr &&
      api.deviceGetName(device, name, sizeof name) == kNvmlSuccess) {
    gpu.name = name;
  }
  nvmlPciInfo_t pci{};
  if (nvmlReturn_t rc = api.deviceGetPciInfo(device, &pci); rc == kNvmlSuccess) {
    gpu.pci_bus_id = busIdOf(pci);
  } else {
    BLINK_LOG(Info, "NVML: GPU " << index << ": no PCI info (" << api.describe(rc) << ")");
  }
  if (api.deviceGetNvLinkState == nullptr || api.deviceGetNvLinkRemotePciInfo == nullptr) {
    return gpu;
  }
  // Links past the GPU's own count answer "not supported" or "invalid argument":
  // keep asking up to the NVML maximum, GPUs do not number their links densely.
  for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
    nvmlEnableState_t state = 0;
    if (api.deviceGetNvLinkState(device, link, &state) != kNvmlSuccess) continue;
    if (state != kNvmlFeatureEnabled) continue;
    nvmlPciInfo_t remote{};
    if (nvmlReturn_t rc = api.deviceGetNvLinkRemotePciInfo(device, link, &remote);
        rc != kNvmlSuccess) {
      BLINK_LOG(Info, "NVML: GPU " << index << " link " << link
                                   << " is active but its far end is unknown (" << api.describe(rc)
                                   << "); link ignored");
      continue;
    }
    NvmlNvLink nvlink;
    nvlink.remote_pci_bus_id = busIdOf(remote);
    unsigned version = 0;
    if (api.deviceGetNvLinkVersion != nullptr &&
        api.deviceGetNvLinkVersion(device, link, &version) == kNvmlSuccess) {
      nvlink.version = version;
    }
    gpu.nvlink.push_back(std::move(nvlink));
  }
  return gpu;
}

}  // namespace

std::string normalizePciBusId(std::string_view raw) {
  while (!raw.empty() && std::isspace(static_cast<unsigned char>(raw.front())))
    raw.remove_prefix(1);
  while (!raw.empty() && std::isspace(static_cast<unsigned char>(raw.back()))) raw.remove_suffix(1);
  // "[domain:]bus:device.function", every field hexadecimal.
  auto parseHex = [](std::string_view text, unsigned& value) {
    auto [next, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    return !text.empty() && ec == std::errc() && next == text.data() + text.size();
  };
  const auto dot = raw.rfind('.');
  if (dot == std::string_view::npos) return "";
  unsigned function = 0;
  if (!parseHex(raw.substr(dot + 1), function)) return "";
  std::vector<unsigned> fields;
  std::string_view head = raw.substr(0, dot);
  while (true) {
    const auto colon = head.find(':');
    unsigned value = 0;
    if (!parseHex(head.substr(0, colon), value)) return "";
    fields.push_back(value);
    if (colon == std::string_view::npos) break;
    head.remove_prefix(colon + 1);
  }
  if (fields.size() == 2) fields.insert(fields.begin(), 0u);  // no domain: domain 0
  if (fields.size() != 3) return "";
  const unsigned domain = fields[0], bus = fields[1], device = fields[2];
  if (bus > 0xff || device > 0x1f || function > 0x7) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return text;
}

std::string nvlinkGenerationOf(unsigned nvml_version) {
  // nvmlNvlinkVersion_t: 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0.
  // Older drivers returned the bare major version (A100: 3, H100: 4); read with this
  // table they land on a generation of the same per-link bandwidth.
  switch (nvml_version) {
    case 1:
      return "nvlink1";
    case 2:
    case 3:
      return "nvlink2";
    case 4:
    case 5:
      return "nvlink3";
    case 6:
      return "nvlink4";
    case 7:
      return "nvlink5";
    default:
      return "";
  }
}

NvmlView queryNvml(const std::string& library_path) {
  NvmlView view;
  const std::string path = library_path.empty() ? kDefaultNvmlLibrary : library_path;
  // RTLD_LOCAL: NVML's symbols must not leak into the program that loaded Blink.
  LibraryHandle library(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    const char* why = dlerror();
    view.why_none = "NVML not loaded: " + std::string(why != nullptr ? why : path);
    return view;
  }

  NvmlApi api;
  void* lib = library.get();
  resolveFirst(lib, {"nvmlInit_v2", "nvmlInit"}, api.init);
  resolve(lib, "nvmlShutdown", api.shutdown);
  resolve(lib, "nvmlErrorString", api.errorString);
  resolveFirst(lib, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, api.deviceGetCount);
  resolveFirst(lib, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
               api.deviceGetHandleByIndex);
  resolve(lib, "nvmlDeviceGetName", api.deviceGetName);
  resolveFirst(lib, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, api.deviceGetPciInfo);
  resolve(lib, "nvmlDeviceGetNvLinkState", api.deviceGetNvLinkState);
  resolveFirst(lib, {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"},
               api.deviceGetNvLinkRemotePciInfo);
  resolve(lib, "nvmlDeviceGetNvLinkVersion", api.deviceGetNvLinkVersion);

  if (api.init == nullptr || api.shutdown == nullptr || api.deviceGetCount == nullptr ||
      api.deviceGetHandleByIndex == nullptr || api.deviceGetPciInfo == nullptr) {
    view.why_none =
        "NVML at " + path + " lacks a required entry point (init, count, handle or PCI info)";
    return view;
  }
  if (api.deviceGetNvLinkState == nullptr || api.deviceGetNvLinkRemotePciInfo == nullptr) {
    BLINK_LOG(Info, "NVML at " << path << " has no NVLink queries: NVLinks will not be seen");
  }

  if (nvmlReturn_t rc = api.init(); rc != kNvmlSuccess) {
    view.why_none = "NVML init failed: " + api.describe(rc);
    return view;
  }
  unsigned count = 0;
  if (nvmlReturn_t rc = api.deviceGetCount(&count); rc != kNvmlSuccess) {
    view.why_none = "NVML device count failed: " + api.describe(rc);
    api.shutdown();
    return view;
  }
  for (unsigned index = 0; index < count; ++index) {
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t rc = api.deviceGetHandleByIndex(index, &device); rc != kNvmlSuccess) {
      // E.g. a GPU this process may not touch: skip it rather than lose the others.
      BLINK_LOG(Info, "NVML: GPU " << index << " skipped (" << api.describe(rc) << ")");
      continue;
    }
    view.gpus.push_back(readGpu(api, index, device));
  }
  api.shutdown();
  if (view.gpus.empty()) view.why_none = "NVML reports no GPUs";
  return view;
}

}  // namespace blink::topo
