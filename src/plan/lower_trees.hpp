// Lowering of packed trees into Plans: the data is split across trees by weight
// and into chunks, and each chunk is forwarded along its tree (Broadcast,
// AllGather), combined on its way up the reversed tree (Reduce, ReduceScatter), or
// both (AllReduce, whose chunk rule therefore sees twice the tree's depth). Each
// tree travels on its own channels, whose Plan::channel_shares are the tree's
// packed rate. Ranks are the topology's GPUs in increasing gpu_index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plan/plan.hpp"
#include "treegen/tree_set.hpp"

namespace blink::plan {

struct LowerOptions {
  int element_size = 4;
  std::uint64_t chunk_bytes = 0;  // 0: chosen by chooseChunkBytes for each channel
  double step_overhead_us = 1.0;  // the per-step cost the chunk rule weighs
  // Channels per tree for the trees of one root (Broadcast, Reduce, AllReduce over
  // one root's trees; at most, see channelsForTree): a tree's data is split evenly
  // among them, each with an equal part of the tree's share, and their chunks are
  // staggered so that one channel's bytes flow while another waits out its per-step
  // latency (double buffering). Trees of every root at once, and reduce+broadcast's
  // undirected trees when there are 4 or more, get one channel each (why:
  // lower_trees.cpp). 1: one channel per tree everywhere.
  int channels_per_tree = 2;
  // How the data is divided among the trees (index: tree; within each root's trees
  // for AllGather, ReduceScatter and multi-root AllReduce), in any positive units.
  // Empty: by the packed weights. The planner sets it to even out the trees' finish
  // times (PlannerOptions::rebalance); channel shares stay the packed weights.
  std::vector<double> data_weights;
};

// Options with BLINK_CHUNK_BYTES applied (a fixed chunk size) when it is set.
LowerOptions lowerOptionsFromEnvironment();

// The weights the data is split by (one per tree): options.data_weights, checked
// (one per tree, each positive and finite; else blinkInvalidArgument), or the packed
// weights when it is empty.
std::vector<double> dataWeights(const treegen::TreeSet& trees, const LowerOptions& options);

// Rank of each GPU (by gpu_index) and the reverse.
std::vector<int> ranksOfGpus(const topo::Topology& topology);

// The chunk size that minimises the pipeline time of one tree under the alpha-beta
// model: moving S bytes in chunks of c over a tree of depth d at B bytes/s, with a
// per-step cost alpha, takes about (S/c + d - 1) (alpha + c/B); its minimum is at
// c = sqrt(S alpha B / (d - 1)). Rounded to whole elements, at least one element,
// at most S (and S itself when d <= 1).
std::uint64_t chooseChunkBytes(std::uint64_t bytes, int depth, double alpha_seconds, double gbps,
                               int element_size);

// How many channels (1 or max_channels) a tree's `bytes` travel on: max_channels
// when the chunk rule cuts the data into at least kMinChunksPerChannel chunks (k
// channels of S/k bytes at B/k get chunks of c/k, so each keeps that count), else
// one: a message too small to pipeline gains nothing from more channels but steps.
inline constexpr int kMinChunksPerChannel = 2;
int channelsForTree(std::uint64_t bytes, int depth, double alpha_seconds, double gbps,
                    int element_size, int max_channels);

// A tree plan and, for each of its channels (index: Step::channel), the tree (index
// into the TreeSet) whose data the channel carries: what the planner needs to even
// out the trees' finish times. `collective` picks one of the lowerings below.
struct LoweredTrees {
  Plan plan;
  std::vector<std::size_t> channel_tree;
};
LoweredTrees lowerTrees(Collective collective, const treegen::TreeSet& trees,
                        const topo::Topology& topology, std::uint64_t bytes,
                        const LowerOptions& options);

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
