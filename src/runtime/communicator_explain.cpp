// Communicator::explain: what a communicator knows and decided, as text, for
// blinkCommExplain and the tests. Apart from the collectives, so that each file
// holds one idea.
#include <algorithm>
#include <sstream>

#include "common/env.hpp"
#include "plan/tree_cache.hpp"
#include "runtime/communicator.hpp"
#include "topology/topology_text.hpp"
#include "transport/cuda/device_transport.hpp"

namespace blink::runtime {

std::string Communicator::alternativesNote() const {
  std::string names;
  for (const Transport* t : rounds_alternatives_) names += (names.empty() ? "" : ", ") + t->name();
  return " (when they are set up, an 8-byte AllReduce through them is timed over it and over " +
         names + "; the fastest takes their rounds, " + between_nodes_->name() +
         " counted 5% slower)";
}

std::string Communicator::explain() const {
  std::ostringstream out;
  out << "Blink communicator: rank " << layout_.rank << " of " << layout_.size << ", "
      << layout_.num_nodes << " node(s) by "
      << (env::get("BLINK_NODE_ID") ? "BLINK_NODE_ID" : "host name")
      << ", verified to share shared memory within each\n";
  for (int n = 0; n < layout_.num_nodes; ++n) {
    const auto count = std::count(layout_.node_of_rank.begin(), layout_.node_of_rank.end(), n);
    out << "  node " << n << " (" << layout_.node_names[static_cast<std::size_t>(n)]
        << "): " << count << " rank(s):";
    for (int r = 0; r < layout_.size; ++r) {
      if (layout_.node_of_rank[static_cast<std::size_t>(r)] == n) out << ' ' << r;
    }
    out << '\n';
  }
  out << "Topology: " << job_.source << "\n" << topo::describeTopology(job_.topology);
  out << "Rank -> GPU of the topology:";
  for (int r = 0; r < layout_.size; ++r) {
    const int p = job_.plan_rank_of[static_cast<std::size_t>(r)];
    out << ' ' << r << "->"
        << job_.topology.device(job_.topology.gpus()[static_cast<std::size_t>(p)]).id;
  }
  out << "\nThis rank's device: " << gpu_note_;
  out << "\nDevice buffers: "
      << (device_path_
              ? "the planner's plans on " + device_->describe() +
                    ", streams of the device transport (cuda), each step of a plan "
                    "priced at " +
                    std::to_string(static_cast<int>(transport::kDeviceStepOverheadUs)) + " us"
              : "no GPU data path (" + device_off_ + ")");
  out << "\nStreams of plans: " << transports_.describe() << between_note_ << "\n";
  out << "Memory: " << memory_.describe() << "\n";
  out << "Algorithms: every call takes the fastest predicted of the planner's plans (trees, "
         "hierarchical, ring, dbt) and the node algorithms below"
      << (forced_text_.empty() ? "" : ", except where BLINK_ALGO=" + forced_text_ + " applies")
      << "\n";
  if (node_.board_capacity > 0) {
    out << "  board: the one-shot shared-memory board for up to " << node_.board_capacity
        << " bytes (every rank posts its input, reads the others'; BLINK_ONE_SHOT_MAX_BYTES)"
        << (layout_.num_nodes > 1 ? ", within each node (under leaders)" : "")
        << (one_shot_ ? "" : ", not set up yet") << "\n";
  } else {
    out << "  board: off (" << node_.board_off << ")\n";
  }
  if (node_.leaders) {
    out << "  leaders: across nodes, calls up to " << node_.board_capacity
        << " bytes: the board on each node, then each collective's shape between the "
        << layout_.num_nodes
        << " node leaders (one round, log rounds or via the first leader; on three nodes or "
           "more the cheapest under a round's and a message's cost measured at set-up; or, where "
           "BLINK_LEADERS_MPI allows and it measures no more than 5% slower at set-up, MPI's own "
           "collective "
           "among the leaders) over "
        << (leaders_between_ != nullptr ? leaders_between_->name() : between_nodes_->name())
        << (leaders_note_.empty() ? "" : " (" + leaders_note_ + ")")
        << (!rounds_alternatives_.empty() && !leaders_ ? alternativesNote() : "")
        << ", then the board again" << (leaders_ ? "" : ", not set up yet") << "\n";
  } else {
    out << "  leaders: off (" << node_.leaders_off << ")\n";
  }
  if (node_.direct_min > 0) {
    out << "  direct: the direct path from " << node_.direct_min
        << " bytes (BLINK_SHM_DIRECT_MIN_BYTES): "
        << (direct_ ? direct_->describe()
                    : std::string(staging_max_ > 0 ? "through a staging area in shared memory"
                                                   : "by cross-memory attach") +
                          ", not set up yet")
        << "\n";
  } else {
    out << "  direct: off (" << node_.direct_off << ")\n";
  }
  out << "Calls by algorithm:";
  for (int a = 0; a < kNumAlgorithms; ++a) {
    out << ' ' << toString(static_cast<Algorithm>(a)) << '=' << calls_[static_cast<std::size_t>(a)];
  }
  const plan::TreeCacheStats trees = plan::treeCacheStats();
  out << "\nPlanning: first decision " << std::max(first_planning_seconds_, 0.0) * 1e3
      << " ms, all " << plans_built_ << " decisions " << planning_seconds_ * 1e3
      << " ms; trees packed " << trees.misses << " times (" << trees.packing_seconds * 1e3
      << " ms) and reused " << trees.hits << " times in this process\n";
  out << "Decisions cached: " << cache_.size() << "\n";
  for (const PlanKey& key : lru_) {
    const CachedChoice& cp = cache_.at(key);
    out << "- " << cp.why << "\n";
    if (!runsPlan(cp.algorithm)) continue;
    out << "    plan " << cp.plan.algorithm << ", element " << cp.plan.element_size
        << " bytes, chunk " << cp.plan.chunk_bytes << " bytes, " << cp.program.steps.size()
        << " steps on this rank, hash " << std::hex << cp.plan.hash() << std::dec << "\n";
    for (const auto& note : cp.plan.notes) out << "    " << note << "\n";
  }
  return out.str();
}

}  // namespace blink::runtime
