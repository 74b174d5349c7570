// What every plan builder (tree lowering, the baselines) does the same way: start
// an empty plan for a topology, intern routes, and append steps so that steps of
// one kind between the same pair on the same channel stay in list order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plan/plan.hpp"

namespace blink::plan {

// A plan with its header filled in and one empty program per GPU of `topology`.
// Throws blinkInvalidArgument when bytes is not a whole number of elements.
Plan emptyPlan(Collective collective, const std::string& algorithm, const topo::Topology& topology,
               std::uint64_t bytes, int element_size);

using ByteRange = std::pair<std::uint64_t, std::uint64_t>;  // offset, bytes

// `r` cut into `parts` contiguous near-equal pieces of whole elements of
// `element_size` bytes (the first ones one element longer where it does not divide).
std::vector<ByteRange> evenParts(ByteRange r, int parts, std::uint64_t element_size);

class PlanWriter {
 public:
  explicit PlanWriter(Plan& plan) : plan_(plan) {}

  // The index of `route` in plan.routes, adding it the first time.
  int route(const std::vector<topo::Vertex>& route);

  // Appends `step` to `rank`'s list and returns its index. Its deps gain the
  // previous step of the same kind (send or receive) between the same pair on the
  // same channel, so messages keep their order; -1 entries are dropped.
  int add(int rank, Step step);

 private:
  Plan& plan_;
  std::map<std::vector<topo::Vertex>, int> route_index_;
  // (rank, peer, channel, is a Send) -> the last such step; hashed: every step of a
  // plan looks it up (millions on 1024 GPUs).
  struct LaneHash {
    std::size_t operator()(const std::tuple<int, int, int, bool>& k) const {
      const auto [rank, peer, channel, send] = k;
      std::uint64_t h = static_cast<std::uint32_t>(rank);
      h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint32_t>(peer);
      h = h * 0x9E3779B97F4A7C15ULL + static_cast<std::uint32_t>(channel);
      h = h * 2 + (send ? 1 : 0);
      return static_cast<std::size_t>(h ^ (h >> 29));
    }
  };
  std::unordered_map<std::tuple<int, int, int, bool>, int, LaneHash> last_on_channel_;
};

}  // namespace blink::plan
