// What the files of Communicator share (communicator.cpp: construction;
// communicator_plan_cache.cpp: the decisions; communicator_collectives.cpp: the calls).
// Not part of any interface.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace blink::runtime::communicator_detail {

// The same on every rank for the same text (unlike std::hash, by definition).
inline std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace blink::runtime::communicator_detail
