// The symbolic executor: runs a Plan on symbolic data and proves that it computes
// its collective. The buffer is cut into atoms at every boundary a step range or a
// segment uses; every atom of every rank holds either "undefined" or, for each rank,
// how many times that rank's input has been combined into it. Execution follows the
// semantics in plan.hpp (deps, position-matched messages per (sender, receiver,
// channel)) in one deterministic, event-driven order, and the final state is
// compared with what the collective promises: every contribution exactly once, in
// its place (atoms also remember how far a Copy moved their data).
//
// What it rejects, with the first problem named precisely (rank, step, byte range,
// expected vs got): a structural problem (validateStructure), message counts that
// differ between the two ends of a (sender, receiver, channel), a message whose
// range differs from the receiving step's, a Send of undefined data, a RecvReduce
// into undefined data or of data from different places, a deadlock (steps left,
// none can run: the first blocked step of each rank and what it waits for),
// messages never received, and a final buffer that is not the collective's result
// (a contribution missing or counted twice).
//
// It does not look for races between steps that the plan leaves unordered (the
// order it picks is one valid order, eager in list order).
#pragma once

#include <cstddef>
#include <string>

#include "plan/plan.hpp"

namespace blink::plan {

struct SymbolicResult {
  bool ok = false;
  std::string error;  // the first problem; empty when ok
  std::size_t steps_run = 0;
};

// Runs `plan` on symbolic data and checks that every rank ends with exactly the
// result its collective promises, every contribution exactly once.
SymbolicResult runSymbolic(const Plan& plan);

}  // namespace blink::plan
