#include "glue_state.hpp"

namespace blink::glue {

GlueState& state() {
  static GlueState instance;
  return instance;
}

}  // namespace blink::glue
