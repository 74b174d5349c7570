// Lowering of packed trees into Plans: the data is split across trees by weight
// and into chunks, and each chunk is forwarded along its tree (Broadcast,
// AllGather), combined on its way up the reversed tree (Reduce, ReduceScatter), or
// both (AllReduce). Ranks are the topology's GPUs in increasing gpu_index.
#pragma once

#include <cstdint>

#include "plan/plan.hpp"
#include "treegen/tree_set.hpp"

namespace blink::plan {

struct LowerOptions {
  int element_size = 4;
  std::uint64_t chunk_bytes = 0;  // 0: chosen by chooseChunkBytes for each tree
  double step_overhead_us = 1.0;  // the per-step cost the chunk rule weighs
};

// Options with BLINK_CHUNK_BYTES applied (a fixed chunk size) when it is set.
LowerOptions lowerOptionsFromEnvironment();

// Rank of each GPU (by gpu_index) and the reverse.
std::vector<int> ranksOfGpus(const topo::Topology& topology);

// The chunk size that minimises the pipeline time of one tree under the alpha-beta
// model: moving S bytes in chunks of c over a tree of depth d at B bytes/s, with a
// per-step cost alpha, takes about (S/c + d - 1) (alpha + c/B); its minimum is at
// c = sqrt(S alpha B / (d - 1)). Rounded to whole elements, at least one element,
// at most S (and S itself when d <= 1).
std::uint64_t chooseChunkBytes(std::uint64_t bytes, int depth, double alpha_seconds, double gbps,
                               int element_size);

// Broadcast of `bytes` from the trees' root (a broadcast TreeSet).
Plan lowerBroadcast(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options);
// Reduce to the root over the same trees reversed.
Plan lowerReduce(const treegen::TreeSet& trees, const topo::Topology& topology, std::uint64_t bytes,
                 const LowerOptions& options);
// AllGather / ReduceScatter over a multi-root (allgather) TreeSet: each rank's
// segment travels on the trees rooted at it. `bytes` is the whole buffer.
Plan lowerAllGather(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options);
Plan lowerReduceScatter(const treegen::TreeSet& trees, const topo::Topology& topology,
                        std::uint64_t bytes, const LowerOptions& options);
// AllReduce: with a multi-root TreeSet, ReduceScatter then AllGather, each chunk's
// AllGather starting as soon as its ReduceScatter is done; with a broadcast
// TreeSet, Reduce then Broadcast over the same trees, pipelined the same way.
Plan lowerAllReduce(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options);

}  // namespace blink::plan
