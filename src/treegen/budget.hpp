// How long tree generation may take. The runtime plans when a communicator first
// meets a collective, on every rank, and a packing on a large or odd graph can run
// for minutes (the exact packer's max-flows grow like n^5 on complete graphs): a
// start-up hang. So every packing runs under a Budget.
//
// Why work units and not a clock: every rank must build the SAME plan (plans are
// hashed and compared across ranks; a mismatch fails the communicator everywhere).
// A wall-clock cut-off lands at a different point on each rank, a loaded one
// earlier. So the budget in milliseconds is converted once into a count of work
// units (kWorkPerMilli, measured on a slow shared development machine so that a
// unit-count cut-off comes at or before the wall time asked for on real nodes), and
// the algorithms charge deterministic amounts: the arcs of every max-flow network
// they solve, the arcs an MWU oracle call scans, the coordinates a minimisation
// step touches. Equal inputs spend equal work and stop at the same point on every
// rank, however loaded the machine. There is deliberately no wall-clock fallback:
// one that fired on a busy rank only would split the ranks' plans (the planning
// then simply takes longer there, bounded by the same work).
#pragma once

#include <cstdint>
#include <memory>

namespace blink::treegen {

class Budget {
 public:
  // Work units per millisecond of budget (see above; perf/treegen measures it).
  static constexpr std::int64_t kWorkPerMilli = 50'000;

  // A budget of `millis` (> 0) of the slow machine kWorkPerMilli was measured on.
  explicit Budget(double millis);
  // A budget of exactly `work` units (tests and tools that count work).
  static Budget ofWork(std::int64_t work);

  // Charges `work` units; false once the budget is exhausted (and from then on).
  bool spend(std::int64_t work);
  bool exhausted() const { return exhausted_; }
  std::int64_t spent() const { return spent_; }
  std::int64_t limit() const { return limit_; }

 private:
  struct Work {
    std::int64_t units;
  };
  explicit Budget(Work work);

  std::int64_t limit_;
  std::int64_t spent_ = 0;
  bool exhausted_ = false;
};

// The budget when none is given: BLINK_PLAN_BUDGET_MS.
double defaultBudgetMillis();

// A shared budget, so that the packings of one planning call draw on one account.
using SharedBudget = std::shared_ptr<Budget>;
SharedBudget makeBudget(double millis);

}  // namespace blink::treegen
