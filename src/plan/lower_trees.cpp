#include "plan/lower_trees.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/env.hpp"
#include "common/error.hpp"
#include "plan/plan_writer.hpp"
#include "plan/tree_builder.hpp"

namespace blink::plan {
namespace {

using detail::Builder;
using detail::LoweredTree;
using detail::splitByWeight;

Plan header(Collective c, const treegen::TreeSet& trees, const topo::Topology& topology,
            std::uint64_t bytes, const LowerOptions& options) {
  Plan plan = emptyPlan(c, "blink-trees", topology, bytes, options.element_size);
  plan.chunk_bytes = options.chunk_bytes;
  if (plan.num_ranks == 0) throw Error(blinkInvalidArgument, "the topology has no GPUs");
  plan.notes.push_back(trees.method + " trees: " + std::to_string(trees.trees.size()) + ", " +
                       std::to_string(trees.rate_gbps) + " of " + std::to_string(trees.bound_gbps) +
                       " GB/s");
  return plan;
}

// The trees rooted at each rank, with their weights.
std::map<int, std::vector<std::size_t>> treesByRoot(const treegen::TreeSet& trees, Builder& b) {
  std::map<int, std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < trees.trees.size(); ++i) {
    out[b.rankOf(trees.trees[i].root_gpu)].push_back(i);
  }
  return out;
}

enum class Flow { Down, Up, UpThenDown };

// The common skeleton: which part of the buffer each tree carries, then the passes.
Plan lowerWith(Collective c, Flow flow, bool per_root_segments, const treegen::TreeSet& trees,
               const topo::Topology& topology, std::uint64_t bytes, const LowerOptions& options) {
  Plan plan = header(c, trees, topology, bytes, options);
  Builder b(plan, topology, options);
  if (bytes == 0 || plan.num_ranks < 2) return plan;
  if (trees.trees.empty()) throw Error(blinkInvalidArgument, "lowering: no trees to lower");
  std::vector<LoweredTree> lowered;
  for (const auto& t : trees.trees) lowered.push_back(b.lower(t));

  // (tree index, range) pairs.
  std::vector<std::pair<std::size_t, std::pair<std::uint64_t, std::uint64_t>>> work;
  if (per_root_segments) {
    auto by_root = treesByRoot(trees, b);
    for (int r = 0; r < plan.num_ranks; ++r) {
      auto it = by_root.find(r);
      if (it == by_root.end()) {
        throw Error(blinkInvalidArgument,
                    "lowering: no tree is rooted at rank " + std::to_string(r));
      }
      std::vector<double> w;
      for (auto i : it->second) w.push_back(trees.trees[i].weight_gbps);
      auto parts =
          splitByWeight(plan.segmentOffset(r), plan.segmentBytes(r), w, options.element_size);
      for (std::size_t k = 0; k < parts.size(); ++k) work.emplace_back(it->second[k], parts[k]);
    }
  } else {
    plan.root = b.rankOf(trees.trees.front().root_gpu);
    std::vector<double> w;
    for (const auto& t : trees.trees) w.push_back(t.weight_gbps);
    auto parts = splitByWeight(0, bytes, w, options.element_size);
    for (std::size_t k = 0; k < parts.size(); ++k) work.emplace_back(k, parts[k]);
  }

  std::uint64_t largest_chunk = 0;
  for (std::size_t w = 0; w < work.size(); ++w) {
    const auto& [tree, range] = work[w];
    if (range.second == 0) continue;
    const LoweredTree& t = lowered[tree];
    const std::uint64_t chunk = b.chunkFor(t, range.second);
    largest_chunk = std::max(largest_chunk, chunk);
    auto cs = b.chunks(range.first, range.second, chunk);
    const int channel = static_cast<int>(w);
    if (flow == Flow::Down) {
      b.broadcastPass(t, channel, cs, nullptr, nullptr);
    } else if (flow == Flow::Up) {
      b.reducePass(t, channel, cs);
    } else {
      auto up = b.reducePass(t, channel, cs);
      b.broadcastPass(t, channel, cs, &up.complete, &up.sent);
    }
  }
  if (plan.chunk_bytes == 0) plan.chunk_bytes = largest_chunk;
  validateStructure(plan);
  return plan;
}

}  // namespace

LowerOptions lowerOptionsFromEnvironment() {
  LowerOptions options;
  if (env::get("BLINK_CHUNK_BYTES")) {
    options.chunk_bytes = static_cast<std::uint64_t>(env::getInt("BLINK_CHUNK_BYTES"));
  }
  return options;
}

std::vector<int> ranksOfGpus(const topo::Topology& topology) {
  int largest = -1;
  for (topo::Vertex g : topology.gpus()) largest = std::max(largest, topology.device(g).gpu_index);
  std::vector<int> rank(static_cast<std::size_t>(largest + 1), -1);
  int next = 0;
  for (topo::Vertex g : topology.gpus()) rank[topology.device(g).gpu_index] = next++;
  return rank;
}

std::uint64_t chooseChunkBytes(std::uint64_t bytes, int depth, double alpha_seconds, double gbps,
                               int element_size) {
  const std::uint64_t es = static_cast<std::uint64_t>(std::max(element_size, 1));
  if (bytes <= es || depth <= 1 || gbps <= 0) return std::max(bytes / es * es, es);
  const double best = std::sqrt(static_cast<double>(bytes) * alpha_seconds * gbps * 1e9 /
                                static_cast<double>(depth - 1));
  std::uint64_t chunk = static_cast<std::uint64_t>(best) / es * es;
  return std::clamp<std::uint64_t>(chunk, es, bytes / es * es);
}

Plan lowerBroadcast(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options) {
  return lowerWith(Collective::Broadcast, Flow::Down, false, trees, topology, bytes, options);
}

Plan lowerReduce(const treegen::TreeSet& trees, const topo::Topology& topology, std::uint64_t bytes,
                 const LowerOptions& options) {
  return lowerWith(Collective::Reduce, Flow::Up, false, trees, topology, bytes, options);
}

Plan lowerAllGather(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options) {
  return lowerWith(Collective::AllGather, Flow::Down, true, trees, topology, bytes, options);
}

Plan lowerReduceScatter(const treegen::TreeSet& trees, const topo::Topology& topology,
                        std::uint64_t bytes, const LowerOptions& options) {
  return lowerWith(Collective::ReduceScatter, Flow::Up, true, trees, topology, bytes, options);
}

Plan lowerAllReduce(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options) {
  const bool multi_root = trees.root_gpu < 0;
  Plan plan = lowerWith(Collective::AllReduce, Flow::UpThenDown, multi_root, trees, topology, bytes,
                        options);
  plan.notes.push_back(multi_root ? "shape: reducescatter + allgather"
                                  : "shape: reduce + broadcast over one root's trees");
  return plan;
}

}  // namespace blink::plan
