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
  plan.notes.push_back(
      trees.method + (trees.undirected ? " reduce+broadcast" : "") +
      " trees: " + std::to_string(trees.trees.size()) + ", " + std::to_string(trees.rate_gbps) +
      " of " + std::to_string(trees.bound_gbps) + " GB/s" +
      (trees.undirected ? " (the tree-schedule optimum: the graph's strength)" : ""));
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

constexpr int kSharedLinkTrees = 4;

// The common skeleton: which part of the buffer each tree carries, then the passes.
LoweredTrees lowerWith(Collective c, Flow flow, bool per_root_segments,
                       const treegen::TreeSet& trees, const topo::Topology& topology,
                       std::uint64_t bytes, const LowerOptions& options) {
  LoweredTrees out;
  Plan& plan = out.plan;
  plan = header(c, trees, topology, bytes, options);
  Builder b(plan, topology, options);
  // A rooted plan names its root even when it has nothing to move (one rank, no bytes).
  if (!per_root_segments && trees.root_gpu >= 0) plan.root = b.rankOf(trees.root_gpu);
  if (bytes == 0 || plan.num_ranks < 2) return out;
  if (trees.trees.empty()) throw Error(blinkInvalidArgument, "lowering: no trees to lower");
  for (const auto& t : trees.trees) {
    if (!std::isfinite(t.weight_gbps) || t.weight_gbps <= 0.0) {
      throw Error(blinkInvalidArgument, "lowering: a tree without a positive weight");
    }
  }
  std::vector<LoweredTree> lowered;
  for (const auto& t : trees.trees) lowered.push_back(b.lower(t));
  const std::vector<double> data_weights = dataWeights(trees, options);

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
      for (auto i : it->second) w.push_back(data_weights[i]);
      auto parts =
          splitByWeight(plan.segmentOffset(r), plan.segmentBytes(r), w, options.element_size);
      for (std::size_t k = 0; k < parts.size(); ++k) work.emplace_back(it->second[k], parts[k]);
    }
  } else {
    plan.root = b.rankOf(trees.trees.front().root_gpu);
    auto parts = splitByWeight(0, bytes, data_weights, options.element_size);
    for (std::size_t k = 0; k < parts.size(); ++k) work.emplace_back(k, parts[k]);
  }

  // Every tree gets its channels, each with its part of the tree's packed rate as its
  // share (Plan::channel_shares): the packing fits every link, so under shares each
  // tree moves at least its packed rate wherever it meets other trees. Under equal
  // shares a 20 GB/s tree and a 4 GB/s tree on one 20 GB/s link would get 10 each,
  // and the heavy tree would finish late (0.81 of the bound on the full DGX-1P).
  // Trees of one root get options.channels_per_tree channels (channelsFor): a deep
  // tree with links to itself otherwise idles them for one step latency per chunk
  // (a 7-hop DGX-1V Broadcast tree reaches 0.92 of its rate alone with one channel,
  // 0.97 with two). With trees from every root at once (AllGather, ReduceScatter,
  // ReduceScatter + AllGather) each link carries several trees that fill each
  // other's gaps: a second channel there gained about 1% for twice the steps.
  // Undirected (reduce+broadcast) trees are many and overlap on every link, like the
  // trees of every root at once: one channel each (kSharedLinkTrees or more trees).
  // On the full DGX-1V at 1 GiB that simulated 1.3% slower than two channels each,
  // for a third of the planning time (2.05 -> 0.77 s) and memory.
  const bool shared_links =
      trees.undirected && trees.trees.size() >= static_cast<std::size_t>(kSharedLinkTrees);
  std::uint64_t largest_chunk = 0;
  for (const auto& [tree, range] : work) {
    const LoweredTree& t = lowered[tree];
    const int passes = flow == Flow::UpThenDown ? 2 : 1;
    const int channels =
        per_root_segments || shared_links ? 1 : b.channelsFor(t, range.second, passes);
    const double share = trees.trees[tree].weight_gbps / channels;
    auto parts = splitByWeight(range.first, range.second,
                               std::vector<double>(static_cast<std::size_t>(channels), 1.0),
                               options.element_size);
    for (int k = 0; k < channels; ++k) {
      const int channel = static_cast<int>(plan.channel_shares.size());
      plan.channel_shares.push_back(share);
      out.channel_tree.push_back(tree);
      const auto& [offset, part_bytes] = parts[static_cast<std::size_t>(k)];
      if (part_bytes == 0) continue;
      const std::uint64_t chunk = b.chunkFor(t, part_bytes, share, passes);
      largest_chunk = std::max(largest_chunk, chunk);
      auto cs = b.staggeredChunks(offset, part_bytes, chunk, k, channels);
      if (flow == Flow::Down) {
        b.broadcastPass(t, channel, cs, nullptr, nullptr);
      } else if (flow == Flow::Up) {
        b.reducePass(t, channel, cs);
      } else {
        auto up = b.reducePass(t, channel, cs);
        b.broadcastPass(t, channel, cs, &up.complete, &up.sent);
      }
    }
  }
  if (plan.chunk_bytes == 0) plan.chunk_bytes = largest_chunk;
  if (!options.data_weights.empty()) {
    plan.notes.push_back(
        "data split among the trees by the planner's weights, not the packed ones");
  }
  validateStructure(plan);
  return out;
}

}  // namespace

LowerOptions lowerOptionsFromEnvironment() {
  LowerOptions options;
  if (env::get("BLINK_CHUNK_BYTES")) {
    options.chunk_bytes = static_cast<std::uint64_t>(env::getInt("BLINK_CHUNK_BYTES"));
  }
  return options;
}

std::vector<double> dataWeights(const treegen::TreeSet& trees, const LowerOptions& options) {
  if (options.data_weights.empty()) {
    std::vector<double> packed;
    for (const auto& t : trees.trees) packed.push_back(t.weight_gbps);
    return packed;
  }
  if (options.data_weights.size() != trees.trees.size()) {
    throw Error(blinkInvalidArgument, "lowering: " + std::to_string(options.data_weights.size()) +
                                          " data weights for " +
                                          std::to_string(trees.trees.size()) + " trees");
  }
  for (double w : options.data_weights) {
    // (Zero would leave a root's segment to a loop that hands out one element at a time.)
    if (!std::isfinite(w) || w <= 0.0) {
      throw Error(blinkInvalidArgument, "lowering: data weights must be positive and finite");
    }
  }
  return options.data_weights;
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

int channelsForTree(std::uint64_t bytes, int depth, double alpha_seconds, double gbps,
                    int element_size, int max_channels) {
  // With k channels each of S/k bytes at B/k the rule picks chunks of c/k, so every
  // channel still has the single-channel chunk count: the pipeline model's time is
  // unchanged, and where a channel's link is not contended the staggered channels
  // also hide each other's per-step latency.
  const std::uint64_t chunk = chooseChunkBytes(bytes, depth, alpha_seconds, gbps, element_size);
  const bool pipelined = chunk > 0 && bytes / chunk >= kMinChunksPerChannel;
  return pipelined ? std::max(1, max_channels) : 1;
}

LoweredTrees lowerTrees(Collective collective, const treegen::TreeSet& trees,
                        const topo::Topology& topology, std::uint64_t bytes,
                        const LowerOptions& options) {
  switch (collective) {
    case Collective::Broadcast:
      return lowerWith(collective, Flow::Down, false, trees, topology, bytes, options);
    case Collective::Reduce:
      return lowerWith(collective, Flow::Up, false, trees, topology, bytes, options);
    case Collective::AllGather:
      return lowerWith(collective, Flow::Down, true, trees, topology, bytes, options);
    case Collective::ReduceScatter:
      return lowerWith(collective, Flow::Up, true, trees, topology, bytes, options);
    case Collective::AllReduce: {
      const bool multi_root = trees.root_gpu < 0;
      LoweredTrees out =
          lowerWith(collective, Flow::UpThenDown, multi_root, trees, topology, bytes, options);
      out.plan.notes.push_back(multi_root ? "shape: reducescatter + allgather"
                                          : "shape: reduce + broadcast over one root's trees");
      return out;
    }
  }
  throw Error(blinkInternalError, "lowering: unknown collective");
}

Plan lowerBroadcast(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options) {
  return lowerTrees(Collective::Broadcast, trees, topology, bytes, options).plan;
}

Plan lowerReduce(const treegen::TreeSet& trees, const topo::Topology& topology, std::uint64_t bytes,
                 const LowerOptions& options) {
  return lowerTrees(Collective::Reduce, trees, topology, bytes, options).plan;
}

Plan lowerAllGather(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options) {
  return lowerTrees(Collective::AllGather, trees, topology, bytes, options).plan;
}

Plan lowerReduceScatter(const treegen::TreeSet& trees, const topo::Topology& topology,
                        std::uint64_t bytes, const LowerOptions& options) {
  return lowerTrees(Collective::ReduceScatter, trees, topology, bytes, options).plan;
}

Plan lowerAllReduce(const treegen::TreeSet& trees, const topo::Topology& topology,
                    std::uint64_t bytes, const LowerOptions& options) {
  return lowerTrees(Collective::AllReduce, trees, topology, bytes, options).plan;
}

}  // namespace blink::plan
