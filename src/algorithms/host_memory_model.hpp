// The cost model of the algorithms that run through a node's host memory without a
// plan (the one-shot board and the direct path), on the same topology graph the
// planner uses. Each rank's data travels between its vertex and the node's memory
// (the widest path to a CPU vertex of its node: a shared-memory link for a host
// rank, PCIe through its switches for a GPU); where several ranks' paths cross one
// link, they share it. A rank whose path starts with a shared-memory link copies
// with its own CPU, so its reads and writes take turns; otherwise they overlap.
//
// Time of a call = max over ranks of its bytes over its share of the path, plus one
// synchronisation (a round trip to memory and a step's software cost) per phase. A
// rank that copies with its CPU also combines reductions with it: the bytes it
// combines cost one more pass at its read rate (a GPU combines at memory speed, far
// above its links, so there they are free).
// The planner's simulator charges tree plans in the same units (link bandwidth,
// route latency, 1 us per step), so the two predictions can be compared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "topology/topology.hpp"

namespace blink::algorithms {

struct HostMemoryPaths {
  std::string why_not;                    // non-empty: these algorithms do not apply here
  std::vector<double> write_bytes_per_s;  // per plan rank, to the node's memory
  std::vector<double> read_bytes_per_s;   // per plan rank, from it
  std::vector<bool> half_duplex;          // reads and writes take turns (a CPU copies both)
  double sync_seconds = 0.0;              // one synchronisation of the node's ranks
};

// Applies when every GPU vertex (plan rank) lies on one node that has a CPU vertex
// reachable both ways; why_not says otherwise.
HostMemoryPaths hostMemoryPaths(const topo::Topology& topology);
// The same for the GPU vertices (plan ranks) of one node only (indices in the result
// count that node's ranks in increasing gpu_index), where the ranks span nodes.
HostMemoryPaths hostMemoryPathsOfNode(const topo::Topology& topology, int node);

// The network between nodes as each node's first rank (lowest gpu_index) sees it: the
// lowest-latency route between every pair of them, for algorithms whose rounds
// between nodes pay a message latency each (node_leaders.hpp).
struct BetweenNodes {
  std::string why_not;         // non-empty: fewer than two nodes, or a pair is unreachable
  std::vector<int> nodes;      // the nodes holding ranks, increasing
  double round_seconds = 0.0;  // the slowest pair's route latency plus a step's cost
  double bytes_per_s = 0.0;    // the narrowest link on those routes
};
BetweenNodes betweenNodes(const topo::Topology& topology);

// Bytes one rank moves through node memory in a call, and how many synchronisations
// the call needs: what each algorithm's model fills in.
struct RankTraffic {
  double written = 0.0;
  double read = 0.0;
  double reduced = 0.0;  // bytes combined into a result (a CPU's extra pass over memory)
};
struct Traffic {
  std::vector<RankTraffic> ranks;  // per plan rank
  double syncs = 1.0;
};

// The predicted seconds of `traffic` on `paths` (paths must apply).
double predictSeconds(const HostMemoryPaths& paths, const Traffic& traffic);

}  // namespace blink::algorithms
