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
// rank. The wall clock is only a safety net (kSafetyFactor times the budget) for a
// machine so overloaded that the units run far slower than measured; when it fires
// the result may differ between ranks, and the log says so. It counts only the
// time spent inside packings (an ActiveSpan each), not the lowering and simulation
// a planner does between the packings that share one budget.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

namespace blink::treegen {

class Budget {
 public:
  // Work units per millisecond of budget (see above; perf/treegen measures it).
  static constexpr std::int64_t kWorkPerMilli = 50'000;
  // The wall-clock safety net fires at this multiple of the budget.
  static constexpr double kSafetyFactor = 2.0;
  // Work units between two reads of the clock.
  static constexpr std::int64_t kClockStride = 20'000;

  // A budget of `millis` (> 0).
  explicit Budget(double millis);
  // A budget of exactly `work` units (tests), with the safety net of `millis`.
  Budget(std::int64_t work, double millis);

  // While alive, the wall clock of the safety net runs (nesting is fine).
  class ActiveSpan {
   public:
    explicit ActiveSpan(Budget& budget);
    ~ActiveSpan();
    ActiveSpan(const ActiveSpan&) = delete;
    ActiveSpan& operator=(const ActiveSpan&) = delete;

   private:
    Budget& budget_;
  };

  // Charges `work` units; false once the budget is exhausted (and from then on).
  bool spend(std::int64_t work);
  bool exhausted() const { return exhausted_; }
  // Whether the wall clock ended it rather than the work count (not deterministic).
  bool byClock() const { return by_clock_; }
  std::int64_t spent() const { return spent_; }
  std::int64_t limit() const { return limit_; }
  double millis() const { return millis_; }

 private:
  using Clock = std::chrono::steady_clock;
  double millis_;
  std::int64_t limit_;
  std::int64_t spent_ = 0;
  std::int64_t next_clock_check_ = kClockStride;
  Clock::duration allowed_;                         // wall time the safety net allows
  Clock::duration used_ = Clock::duration::zero();  // in finished spans
  Clock::time_point span_start_;
  int open_spans_ = 0;
  bool exhausted_ = false;
  bool by_clock_ = false;
};

// The budget when none is given: BLINK_PLAN_BUDGET_MS.
double defaultBudgetMillis();

// A shared budget, so that the packings of one planning call draw on one account.
using SharedBudget = std::shared_ptr<Budget>;
SharedBudget makeBudget(double millis);

}  // namespace blink::treegen
