// Process-wide state of the interposition layer.
#pragma once

#include <atomic>

namespace blink::glue {

struct GlueState {
  // False when the configuration is invalid; collectives then go to PMPI_*.
  std::atomic<bool> enabled{true};
};

GlueState& state();

}  // namespace blink::glue
