#include "treegen/budget.hpp"

#include <algorithm>
#include <cmath>

#include "common/env.hpp"
#include "common/error.hpp"

namespace blink::treegen {
namespace {

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
    : Budget(
          Work{static_cast<std::int64_t>(std::min(checkedMillis(millis) * kWorkPerMilli, 9e18))}) {}

Budget::Budget(Work work) : limit_(std::max<std::int64_t>(work.units, 1)) {}

Budget Budget::ofWork(std::int64_t work) {
  return Budget(Work{work});
}

bool Budget::spend(std::int64_t work) {
  if (exhausted_) return false;
  spent_ += std::max<std::int64_t>(work, 0);
  if (spent_ > limit_) exhausted_ = true;
  return !exhausted_;
}

double defaultBudgetMillis() {
  return static_cast<double>(env::getInt("BLINK_PLAN_BUDGET_MS"));
}

SharedBudget makeBudget(double millis) {
  return std::make_shared<Budget>(millis);
}

}  // namespace blink::treegen
