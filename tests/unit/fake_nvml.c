/* A stand-in for libnvidia-ml.so.1 that describes a DGX-1 with V100s: eight GPUs at
 * the bus ids of tests/data/hwloc-dgx1-like.xml, six NVLink 2 lanes each, in the
 * hybrid cube-mesh (two fully connected quads, GPU i joined to GPU i+4, eight of the
 * pairs doubled). Only the entry points Blink's loader resolves are provided.
 *
 * Environment, read by nvmlInit_v2:
 *   FAKE_NVML_INIT_RESULT=<n>  nvmlInit_v2 fails with NVML error n
 *   FAKE_NVML_NVSWITCH=1       every lane goes to an NVSwitch (a DGX-2-like fabric)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ABI as in nvml.h. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlEnableState_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3
};
enum { kGpus = 8, kLinksPerGpu = 6, kMaxLinks = 18, kNvLinkVersion2 = 2 };

struct nvmlDevice_st {
  unsigned index;
  unsigned bus;
  int peer_of_link[kLinksPerGpu]; /* GPU index, or -1 for an NVSwitch */
  int links_used;
};

static struct nvmlDevice_st devices[kGpus];
static int initialised;
static const unsigned kGpuBus[kGpus] = {0x06, 0x07, 0x0a, 0x0b, 0x85, 0x86, 0x8a, 0x8b};
static const unsigned kNvSwitchBus = 0xc0;

static void joinGpus(int a, int b, int lanes) {
  for (int lane = 0; lane < lanes; ++lane) {
    devices[a].peer_of_link[devices[a].links_used++] = b;
    devices[b].peer_of_link[devices[b].links_used++] = a;
  }
}

static void buildCubeMesh(void) {
  /* Doubled pairs first so link numbers stay the same from run to run. */
  static const int doubled[][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}};
  static const int single[][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}};
  for (size_t i = 0; i < sizeof doubled / sizeof doubled[0]; ++i) {
    joinGpus(doubled[i][0], doubled[i][1], 2);
  }
  for (size_t i = 0; i < sizeof single / sizeof single[0]; ++i) {
    joinGpus(single[i][0], single[i][1], 1);
  }
}

static void fillPciInfo(unsigned bus, nvmlPciInfo_t* info) {
  memset(info, 0, sizeof *info);
  info->domain = 0;
  info->bus = bus;
  info->device = 0;
  info->pciDeviceId = 0x1db110deu;
  info->pciSubSystemId = 0x121210deu;
  /* NVML writes an 8-digit domain in upper case. */
  snprintf(info->busId, sizeof info->busId, "%08X:%02X:00.0", 0u, bus);
  snprintf(info->busIdLegacy, sizeof info->busIdLegacy, "%04X:%02X:00.0", 0u, bus);
}

nvmlReturn_t nvmlInit_v2(void) {
  const char* forced = getenv("FAKE_NVML_INIT_RESULT");
  if (forced != NULL && atoi(forced) != NVML_SUCCESS) return atoi(forced);
  memset(devices, 0, sizeof devices);
  for (unsigned i = 0; i < kGpus; ++i) {
    devices[i].index = i;
    devices[i].bus = kGpuBus[i];
  }
  const char* nvswitch = getenv("FAKE_NVML_NVSWITCH");
  if (nvswitch != NULL && strcmp(nvswitch, "1") == 0) {
    for (unsigned i = 0; i < kGpus; ++i) {
      for (int lane = 0; lane < kLinksPerGpu; ++lane) devices[i].peer_of_link[lane] = -1;
      devices[i].links_used = kLinksPerGpu;
    }
  } else {
    buildCubeMesh();
  }
  initialised = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  initialised = 0;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    default:
      return "Unknown Error (fake)";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = kGpus;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (index >= kGpus || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || name == NULL || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  snprintf(name, length, "%s", "Tesla V100-SXM2-16GB");
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  fillPciInfo(device->bus, pci);
  return NVML_SUCCESS;
}

/* Links past the GPU's own ones exist in the API but not on the chip. */
static nvmlReturn_t checkLink(nvmlDevice_t device, unsigned int link) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || link >= kMaxLinks) return NVML_ERROR_INVALID_ARGUMENT;
  if ((int)link >= device->links_used) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* is_active) {
  nvmlReturn_t rc = checkLink(device, link);
  if (rc != NVML_SUCCESS) return rc;
  if (is_active == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *is_active = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  nvmlReturn_t rc = checkLink(device, link);
  if (rc != NVML_SUCCESS) return rc;
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  int peer = device->peer_of_link[link];
  fillPciInfo(peer < 0 ? kNvSwitchBus : devices[peer].bus, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link,
                                        unsigned int* version) {
  nvmlReturn_t rc = checkLink(device, link);
  if (rc != NVML_SUCCESS) return rc;
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *version = kNvLinkVersion2;
  return NVML_SUCCESS;
}
