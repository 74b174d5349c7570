#include "common/error.hpp"

#include <string>

namespace blink {
namespace {
thread_local std::string lastError;  // NOLINT: per-thread by design
thread_local int lastKind = 0;       // NOLINT: per-thread by design
}  // namespace

blinkResult_t setLastError(blinkResult_t status, const std::string& message, int kind) {
  lastError = message;
  lastKind = kind;
  return status;
}

int lastFailureKind() {
  return lastKind;
}

}  // namespace blink

extern "C" const char* blinkGetLastError(void) {
  return blink::lastError.c_str();
}

extern "C" const char* blinkGetErrorString(blinkResult_t result) {
  switch (result) {
    case blinkSuccess:
      return "success";
    case blinkInvalidArgument:
      return "invalid argument";
    case blinkInvalidUsage:
      return "invalid usage";
    case blinkSystemError:
      return "system error";
    case blinkInternalError:
      return "internal error (a bug in Blink; please report it)";
    case blinkTimeout:
      return "timed out waiting for a peer";
    case blinkUnsupported:
      return "unsupported by this build or machine";
    case blinkInvalidInput:
      return "invalid input (topology file or environment variable)";
    case blinkNumResults:
      break;
  }
  return "unknown result code";
}
