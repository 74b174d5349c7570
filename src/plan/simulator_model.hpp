// The simulator's static model of a plan (internal to simulator*.cpp): global step ids,
// dependency counts and their reverse lists, the Send/receive pairs (transfers) with their
// routes as hops of the topology, and each rank's copy rate. Built and validated once;
// the event loop (simulator.cpp) then only moves time forward over it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "plan/simulator.hpp"
#include "topology/topology.hpp"

namespace blink::plan::detail {

inline constexpr double kBytesPerGB = 1e9;

// blink::Error(blinkInvalidInput) naming the plan.
[[noreturn]] void failSimulation(const Plan& plan, const std::string& what);
std::string stepName(int rank, std::size_t index);

// simulate(), where self_messages lets a rank's Send and receive name the rank itself
// (see SimModel).
SimResult simulatePlan(const Plan& plan, const topo::Topology& topology, const SimOptions& options,
                       bool self_messages);

struct HopUse {
  int hop;    // index into SimModel::hops_
  int count;  // how often the route crosses it
};

struct RouteInfo {
  bool built = false;
  std::vector<HopUse> hops;
  double latency_s = 0.0;  // sum over the route's hops
};

struct Hop {
  double capacity = 0.0;   // bytes/s, all links u -> v together
  double latency_s = 0.0;  // the slowest of those links
  double carried = 0.0;    // bytes moved over it so far
};

struct Transfer {
  int send = -1;  // global step ids
  int recv = -1;
  int route = -1;
  double bytes = 0.0;
  double share = 1.0;  // its channel's share (Plan::channelShare)
  int ready_sides = 0;
  // While its bytes flow: `remaining` bytes at time `updated_at`, moving at `rate`
  // since then (updated lazily: only when its rate changes).
  double remaining = 0.0;
  double updated_at = 0.0;
  double rate = 0.0;
  std::uint64_t started = 0;  // start order, for a deterministic completion order
  std::uint32_t version = 0;  // invalidates older entries in the completion queue
  std::uint32_t visited = 0;  // the last rate computation that reached it
};

class SimModel {
 public:
  // self_messages: a Send may name its own rank as the peer (a node class's
  // representative, node_class_simulation.hpp: a message to a mirrored node is its
  // own receive from the mirror); never in a Plan a runtime executes.
  SimModel(const Plan& plan, const topo::Topology& topology, bool self_messages = false)
      : plan_(plan), topology_(topology), self_messages_(self_messages) {}

 protected:
  // Indexes the steps and matches every Send with its receive; throws on a malformed
  // plan (see simulator.hpp).
  void build() {
    index();
    match();
  }

  const Step& step(int g) const {
    const std::size_t gi = static_cast<std::size_t>(g);
    return plan_.ranks[static_cast<std::size_t>(step_rank_[gi])]
        .steps[static_cast<std::size_t>(step_index_[gi])];
  }

  // Global step ids, dependency counts and the reverse dependency lists (CSR).
  void index();

  // FIFO matching per (sender, receiver, channel): the k-th Send with the k-th receive.
  void match();

  void buildRoute(int route, int send);

  // A pair joined only by shared-memory links is one hop for both directions: a
  // process copies its own sends and receives with one CPU, so they take turns.
  bool sharedMemoryOnly(topo::Vertex u, topo::Vertex v) const;

  int hopId(topo::Vertex u, topo::Vertex v, const std::string& who);

  double copyRate(int rank);

  const Plan& plan_;
  const topo::Topology& topology_;
  bool self_messages_ = false;

  int num_steps_ = 0;
  std::vector<int> rank_base_;   // first global step id of each rank (+ the total)
  std::vector<int> step_rank_;   // per global step
  std::vector<int> step_index_;  // per global step: index in its rank's list
  std::vector<int> pending_;     // deps not yet complete
  std::vector<bool> completed_;
  std::vector<int> step_transfer_;  // Send/receive steps: their transfer; -1 for Copy
  std::vector<int> dependents_start_, dependents_;

  std::vector<Transfer> transfers_;
  std::vector<RouteInfo> routes_;
  std::map<std::pair<topo::Vertex, topo::Vertex>, int> hop_ids_;
  std::vector<Hop> hops_;
  std::vector<double> copy_rate_;
};

}  // namespace blink::plan::detail
