// The one place that decides how a collective runs. Every algorithm is a candidate
// with a predicted time on the job's topology graph: the node algorithms that run
// without a plan (the one-shot board and the direct path, src/algorithms/, priced by
// their host-memory cost model; across nodes, node leaders: the board on each node
// plus rounds between nodes) and the planner's plans (Blink's trees, the
// hierarchical composition, rings and double binary trees, priced by the
// simulator). The fastest wins; BLINK_ALGO can force one per collective, as
// NCCL_ALGO does. The choice is a pure function of its arguments, so every rank,
// given the same topology and settings, makes the same one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.hpp"
#include "plan/planner.hpp"
#include "topology/topology.hpp"

namespace blink::runtime {

// Leaders: the board within each node plus log rounds between node leaders
// (algorithms/node_leaders.hpp), for small calls across nodes.
enum class Algorithm { Board, Direct, Trees, Hierarchical, Ring, DoubleBinaryTree, Leaders };
constexpr int kNumAlgorithms = 7;

// "board", "direct", "trees", "hierarchical", "ring", "dbt", "leaders".
std::string_view toString(Algorithm algorithm);
std::optional<Algorithm> parseAlgorithm(std::string_view name);
// Whether the algorithm runs a plan through the executor (all but board, direct and
// leaders).
bool runsPlan(Algorithm algorithm);

// BLINK_ALGO: "NAME" for every collective, or "COLLECTIVE:NAME,..." with collectives
// allreduce, broadcast (or bcast), reduce, allgather, reducescatter (or
// reduce_scatter).
class ForcedAlgorithms {
 public:
  // Throws blink::Error(blinkInvalidInput) naming the bad part.
  static ForcedAlgorithms parse(std::string_view text);
  static ForcedAlgorithms fromEnvironment();
  std::optional<Algorithm> forced(plan::Collective collective) const;

 private:
  std::array<std::optional<Algorithm>, 5> per_collective_{};
};

// Whether the node algorithms can run on this communicator, and their limits.
struct NodeAlgorithms {
  std::size_t board_capacity = 0;  // 0: no board (board_off says why)
  std::string board_off;
  std::uint64_t direct_min = 0;  // 0: no direct path (direct_off says why)
  std::string direct_off;
  // Across nodes: each node's board (board_capacity) and streams between the leaders.
  bool leaders = false;  // false: leaders_off says why
  std::string leaders_off;
  // What a call through the leaders took when measured at their set-up, by
  // plan::Collective (seconds < 0: not measured): its fixed cost then comes from the
  // measurement, not from the route's table latency, which can be several times off
  // (a 1 Gbit/s class link is priced 10 us a message; between emulated hosts a whole
  // 8-byte AllReduce takes 5-7 us). Only the model's growth with the size is added.
  // A measurement above the model prices nothing: the plans, never measured, would
  // win for the machine's slowness alone.
  struct Measured {
    double seconds = -1.0;
    std::uint64_t bytes = 0;  // the call's size (AllGather, ReduceScatter: the whole buffer)
  };
  std::array<Measured, 5> leaders_measured{};
};

struct CandidateTime {
  Algorithm algorithm;
  double seconds = -1.0;  // < 0: not a candidate for this call
  std::string why_not;
};

struct AlgorithmChoice {
  Algorithm algorithm = Algorithm::Trees;
  double seconds = 0.0;
  plan::Plan plan;  // the plan to run, when runsPlan(algorithm)
  std::vector<CandidateTime> candidates;
  std::string why;  // one line: the winner, the others' predicted times, what was forced
};

struct CallShape {
  plan::Collective collective = plan::Collective::AllReduce;
  std::uint64_t bytes = 0;  // the whole buffer (size * block for AllGather, ReduceScatter)
  int root_plan = -1;       // plan rank of the root of Broadcast and Reduce
};

// Device buffers: the node algorithms move host memory only, so they are off, and
// every step of a plan is priced at the device transport's cost
// (transport::kDeviceStepOverheadUs), so the planner cuts fewer, larger chunks and
// prefers plans of fewer steps there.
void priceForDeviceBuffers(NodeAlgorithms& node, plan::PlannerOptions& planner);

// Scores every candidate for `call` on `topology` and picks one. Throws what the
// planner throws for bad arguments.
AlgorithmChoice chooseAlgorithm(const CallShape& call, const topo::Topology& topology,
                                const NodeAlgorithms& node, const ForcedAlgorithms& forced,
                                const plan::PlannerOptions& planner);

}  // namespace blink::runtime
