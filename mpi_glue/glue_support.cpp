#include "glue_support.hpp"

#include <cstdlib>

namespace blink::glue {

std::optional<std::string> setting(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;  // as the library reads them
  return std::string(value);
}

void validateSettings() {
  if (blinkValidateEnvironment() != blinkSuccess) {
    throw Error(blinkInvalidInput, blinkGetLastError());
  }
}

}  // namespace blink::glue
