#include "runtime/interposer_support.h"

#include <string>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

extern "C" {

blinkFailureKind_t blinkLastFailureKind(void) {
  return static_cast<blinkFailureKind_t>(blink::lastFailureKind());
}

int blinkLogEnabled(int level) {
  return blink::log::enabled(static_cast<blink::log::Level>(level)) ? 1 : 0;
}

void blinkLogWrite(int level, const char* message) {
  blink::log::write(static_cast<blink::log::Level>(level), message != nullptr ? message : "");
}

void blinkLogSetRank(int rank) {
  blink::log::setRankLabel(rank);
}

blinkResult_t blinkValidateEnvironment(void) {
  return blink::guardCApi([] { blink::env::validateAll(); });
}

const char* blinkEnvDefault(const char* name) {
  if (name == nullptr) return "";
  for (const auto& var : blink::env::registry()) {
    if (var.name == name) return var.default_value.data();  // literals: NUL-terminated
  }
  return "";
}

}  // extern "C"
