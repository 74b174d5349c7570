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

extern "C" const char* blinkGetBuildInfo(void) {
  static const std::string info = std::string("Blink ") + BLINK_VERSION_STRING + " (git " +
                                  BLINK_GIT_HASH + ", CUDA " + (BLINK_HAVE_CUDA ? "on" : "off") +
                                  ", UCX " + (BLINK_HAVE_UCX ? "on" : "off") + ", hwloc " +
                                  (BLINK_HAVE_HWLOC ? "on" : "off") + ")";
  return info.c_str();
}
