// What the symbolic executor (symbolic_executor.hpp) stores in an atom of a buffer:
// which ranks' inputs were combined into it, how many times each, and from where the
// data came; interned, so that an atom is one small id and reductions are memoised.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace blink::plan::symbolic {

using Id = std::uint32_t;  // an interned contribution vector; 0 is "undefined"
inline constexpr Id kUndefined = 0;

// Interned atom values: per-rank contribution counts plus the displacement of the
// data (where in the buffer it came from, minus where it is now; only a Copy moves
// data), with memoised reduction.
class Contributions {
 public:
  explicit Contributions(int num_ranks) : n_(static_cast<std::size_t>(num_ranks)) {
    values_.emplace_back();  // id 0: undefined
  }

  Id intern(const std::vector<std::uint16_t>& counts, std::int64_t shift = 0) {
    auto [it, inserted] =
        index_.emplace(std::make_pair(counts, shift), static_cast<Id>(values_.size()));
    if (inserted) values_.push_back({counts, shift});
    return it->second;
  }

  Id single(int rank) {
    std::vector<std::uint16_t> c(n_, 0);
    c[static_cast<std::size_t>(rank)] = 1;
    return intern(c);
  }

  Id all() { return intern(std::vector<std::uint16_t>(n_, 1)); }

  std::int64_t shift(Id id) const { return values_[id].shift; }

  // a and b must both be defined, with the same displacement.
  Id reduce(Id a, Id b) {
    const std::uint64_t key = (static_cast<std::uint64_t>(std::min(a, b)) << 32) | std::max(a, b);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    std::vector<std::uint16_t> c = values_[a].counts;
    const auto& other = values_[b].counts;
    for (std::size_t i = 0; i < n_; ++i) {
      const unsigned sum = static_cast<unsigned>(c[i]) + other[i];
      c[i] = static_cast<std::uint16_t>(std::min(sum, 0xffffu));  // saturate, never wrap to 1
    }
    const Id id = intern(c, values_[a].shift);
    memo_.emplace(key, id);
    return id;
  }

  // The value after moving the data by `delta` bytes (a Copy from s to d: d - s).
  Id moved(Id id, std::int64_t delta) {
    if (id == kUndefined || delta == 0) return id;
    auto [it, inserted] = moved_.emplace(std::make_pair(id, delta), kUndefined);
    if (inserted) it->second = intern(values_[id].counts, values_[id].shift - delta);
    return it->second;
  }

  std::string describe(Id id) const {
    if (id == kUndefined) return "undefined";
    std::string s = "{";
    bool first = true;
    for (std::size_t i = 0; i < n_; ++i) {
      const auto count = values_[id].counts[i];
      if (count == 0) continue;
      if (!first) s += ", ";
      first = false;
      s += "rank " + std::to_string(i);
      if (count != 1) s += " x" + std::to_string(count);
    }
    s += "}";
    if (values_[id].shift != 0) {
      const std::int64_t d = values_[id].shift;
      s += " from " + std::to_string(d > 0 ? d : -d) + " bytes " +
           (values_[id].shift > 0 ? "further on" : "earlier");
    }
    return s;
  }

 private:
  struct Value {
    std::vector<std::uint16_t> counts;
    std::int64_t shift = 0;
  };
  std::size_t n_;
  std::vector<Value> values_;
  std::map<std::pair<std::vector<std::uint16_t>, std::int64_t>, Id> index_;
  std::unordered_map<std::uint64_t, Id> memo_;
  std::map<std::pair<Id, std::int64_t>, Id> moved_;
};

}  // namespace blink::plan::symbolic
