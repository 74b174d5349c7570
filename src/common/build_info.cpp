#include <string>

#include "blink/blink.h"
#include "common/build_config.h"

static_assert(BLINK_VERSION_CODE ==
              BLINK_VERSION_MAJOR * 10000 + BLINK_VERSION_MINOR * 100 + BLINK_VERSION_PATCH);

extern "C" blinkResult_t blinkGetVersion(int* version) {
  if (version == nullptr) return blinkInvalidArgument;
  *version = BLINK_VERSION_CODE;
  return blinkSuccess;
}

// What this build can run, not which CMake options were on: the runtime moves host
// memory through shared memory within a node and PMPI point-to-point between nodes
// (src/runtime/communicator.cpp); the CUDA kernels are built but no transport uses
// them; UCX may be found at configure time but nothing links it; hwloc and NVML
// discovery serve the tools (blink-topo, -plan, -sim), while communicators plan on BLINK_TOPO or
// host ranks. Update it in the same commit that makes one of these untrue.
extern "C" const char* blinkGetBuildInfo(void) {
  static const std::string info =
      std::string("Blink ") + BLINK_VERSION_STRING + " (git " + BLINK_GIT_HASH +
      ", transports: shm, pmpi; memory: host; " +
      (BLINK_HAVE_CUDA ? std::string("CUDA kernels compiled (") + BLINK_CUDA_ARCHITECTURES +
                             ") but no CUDA data path"
                       : std::string("CUDA: not built")) +
      "; UCX: not used; topology discovery (hwloc, NVML): tools only)";
  return info.c_str();
}
