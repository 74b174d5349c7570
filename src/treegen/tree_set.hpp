// What tree generation produces: weighted trees over the real devices of a
// topology, with the rate they reach, the bound they are measured against and how
// they were made. Plans are lowered from a TreeSet.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace blink::treegen {

// One edge of a tree: data moves from `from` to `to` along `route` (topology
// vertices, endpoints included; more than two when it crosses switches).
struct TreeEdge {
  topo::Vertex from = 0;
  topo::Vertex to = 0;
  std::vector<topo::Vertex> route;
};

struct Tree {
  int root_gpu = -1;         // gpu_index of the root
  double weight_gbps = 0.0;  // the bandwidth this tree carries
  // Parents before children: edges[i].from is the root or the `to` of an earlier edge.
  std::vector<TreeEdge> edges;
};

struct TreeSet {
  std::string collective;  // "broadcast", "reduce", "allgather", "reducescatter", "allreduce"
  std::string method;      // "exact", "mwu", "minimize", ...
  std::string topology;    // the topology's name
  int root_gpu = -1;       // for rooted collectives; -1 when every GPU roots its share
  // Reduce+broadcast trees (packReduceBroadcast): undirected, each edge carrying its
  // tree's weight in both directions at once; each tree is rooted where it is
  // shallowest, and the rate is the AllReduce's (bytes / time).
  bool undirected = false;
  // Broadcast/Reduce: total GB/s from (to) the root. AllGather/ReduceScatter: GB/s
  // at which every GPU's share leaves it (time = bytes per GPU / rate).
  double rate_gbps = 0.0;
  double bound_gbps = 0.0;
  double millis = 0.0;  // wall time of the packing
  // The planning budget ran out (treegen.hpp, PackOptions): the trees are what was
  // found by then, the rate possibly below what the method reaches (0: nothing).
  bool budget_exhausted = false;
  long long work = 0;  // budget units this packing spent (deterministic)
  std::vector<Tree> trees;
  std::vector<std::string> notes;  // why the rate is below the bound, approximations, ...
};

}  // namespace blink::treegen
