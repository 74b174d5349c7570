// Dependencies of plan steps from the byte ranges they read and write on one rank.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "plan/plan_writer.hpp"

namespace blink::plan::detail {

// Per rank: for every byte, the last step that wrote it and the steps that read it
// since. A new step depends on the last writer of what it reads or writes, and (when
// it writes) on the readers since: read after write, write after read, write after
// write.
class RangeTracker {
 public:
  explicit RangeTracker(std::uint64_t bytes) {
    if (bytes > 0) segments_[0] = {bytes, -1, {}};
  }

  void dependencies(ByteRange r, bool writes, std::vector<int>& out) {
    forEach(r, [&](Segment& s) {
      if (s.writer >= 0) out.push_back(s.writer);
      if (writes) out.insert(out.end(), s.readers.begin(), s.readers.end());
    });
  }

  // dependencies() then record() of step `step`, in one pass over the range.
  void dependOnAndRecord(ByteRange r, bool writes, int step, std::vector<int>& out) {
    forEach(r, [&](Segment& s) {
      if (s.writer >= 0) out.push_back(s.writer);
      if (writes) {
        out.insert(out.end(), s.readers.begin(), s.readers.end());
        s.writer = step;
        s.readers.clear();
      } else {
        s.readers.push_back(step);
      }
    });
  }

  void record(ByteRange r, bool writes, int step) {
    forEach(r, [&](Segment& s) {
      if (writes) {
        s.writer = step;
        s.readers.clear();
      } else {
        s.readers.push_back(step);
      }
    });
  }

 private:
  struct Segment {
    std::uint64_t end = 0;
    int writer = -1;
    std::vector<int> readers;
  };

  void split(std::uint64_t at) {
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    Segment tail = it->second;
    it->second.end = at;
    segments_.emplace(at, std::move(tail));
  }

  template <typename F>
  void forEach(ByteRange r, F f) {
    if (r.second == 0) return;
    const std::uint64_t end = r.first + r.second;
    split(r.first);
    split(end);
    for (auto it = segments_.find(r.first); it != segments_.end() && it->first < end; ++it) {
      f(it->second);
    }
  }

  std::map<std::uint64_t, Segment> segments_;
};

}  // namespace blink::plan::detail
