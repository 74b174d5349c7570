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
// memory through shared memory within a node and, between nodes, UCX where it was
// found and every rank sets it up, PMPI point-to-point otherwise or when
// BLINK_TRANSPORT names it, plain TCP sockets for the node leaders' rounds where
// measured fastest (transport/registry.cpp, transport/ucx/, transport/socket/), and device memory
// within a node through the device transport on a CUDA device (built with CUDA) or
// the emulated one (always; see runtime/process_device.hpp); communicators plan on the
// topology discovered with hwloc and NVML (runtime/job_topology.cpp) or
// BLINK_TOPO, and choose among the algorithms of runtime/algorithm_choice.hpp. Update it in the
// same commit that makes one of these untrue.
extern "C" const char* blinkGetBuildInfo(void) {
  static const std::string info =
      std::string("Blink ") + BLINK_VERSION_STRING + " (git " + BLINK_GIT_HASH +
      ", transports: " + (BLINK_HAVE_UCX ? "ucx, " : "") +
      "shm, pmpi, sockets; memory: host, device within a node (BLINK_DEVICE); " +
      (BLINK_HAVE_CUDA ? std::string("CUDA kernels compiled (") + BLINK_CUDA_ARCHITECTURES + ")"
                       : std::string("CUDA: not built, emulated device only")) +
      (BLINK_HAVE_UCX ? "; UCX: the ucx transport, the default between nodes (pmpi where a "
                        "rank cannot set it up, or by BLINK_TRANSPORT)"
                      : "; UCX: not built, pmpi between nodes") +
      "; the node leaders' rounds: the fastest of the default, pmpi and sockets, timed at "
      "set-up; topology: discovered (hwloc, NVML) or BLINK_TOPO; algorithms: board, "
      "direct, leaders, trees, hierarchical, ring, dbt)";
  return info.c_str();
}
