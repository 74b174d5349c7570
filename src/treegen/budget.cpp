#include "treegen/budget.hpp"

#include <algorithm>
#include <cmath>

#include "common/env.hpp"
#include "common/error.hpp"

namespace blink::treegen {
namespace {

std::chrono::steady_clock::duration safetyNet(double millis) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(millis * Budget::kSafetyFactor));
}

double checkedMillis(double millis) {
  if (!(millis > 0.0) || !std::isfinite(millis)) {
    throw Error(blinkInvalidArgument,
                "a planning budget must be a positive number of milliseconds, got " +
                    std::to_string(millis));
  }
  return millis;
}

}  // namespace

Budget::Budget(double millis)
    : Budget(static_cast<std::int64_t>(std::min(checkedMillis(millis) * kWorkPerMilli, 9e18)),
             millis) {}

Budget::Budget(std::int64_t work, double millis)
    : millis_(checkedMillis(millis)),
      limit_(std::max<std::int64_t>(work, 1)),
      allowed_(safetyNet(millis)) {}

Budget::ActiveSpan::ActiveSpan(Budget& budget) : budget_(budget) {
  if (budget_.open_spans_++ == 0) budget_.span_start_ = Clock::now();
}

Budget::ActiveSpan::~ActiveSpan() {
  if (--budget_.open_spans_ == 0) budget_.used_ += Clock::now() - budget_.span_start_;
}

bool Budget::spend(std::int64_t work) {
  if (exhausted_) return false;
  spent_ += std::max<std::int64_t>(work, 0);
  if (spent_ > limit_) exhausted_ = true;
  if (spent_ >= next_clock_check_) {
    next_clock_check_ = spent_ + kClockStride;
    Clock::duration used = used_;
    if (open_spans_ > 0) used += Clock::now() - span_start_;
    if (used > allowed_) exhausted_ = by_clock_ = true;
  }
  return !exhausted_;
}

double defaultBudgetMillis() {
  return static_cast<double>(env::getInt("BLINK_PLAN_BUDGET_MS"));
}

SharedBudget makeBudget(double millis) {
  return std::make_shared<Budget>(millis);
}

}  // namespace blink::treegen
