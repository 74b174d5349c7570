// What the files of Communicator share (communicator.cpp: construction;
// communicator_plan_cache.cpp: the decisions; communicator_collectives.cpp: the calls).
// Not part of any interface.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace blink::runtime::communicator_detail {

// Collective: if any rank failed, every rank throws (the failing ones their own
// error, the others a pointer to it), so no rank walks on into a collective alone.
void agree(MPI_Comm comm, const Error* failure, const std::string& stage, double timeout_s);

// The same on every rank for the same text (unlike std::hash, by definition).
inline std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace blink::runtime::communicator_detail
