// Internal to src/plan: the pieces of tree lowering that the flat lowering
// (lower_trees.cpp) and the hierarchical composition (hierarchical.cpp) share: a
// packed tree turned into GPU-to-GPU messages with their routes, the chunk rule per
// tree, the broadcast and reduce passes over one tree, and the split by weight.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "plan/lower_trees.hpp"
#include "plan/plan.hpp"
#include "plan/plan_writer.hpp"
#include "topology/topology.hpp"
#include "treegen/tree_set.hpp"

namespace blink::plan::detail {

// One tree as messages between ranks, parents before children. A tree edge into a
// switch that could not be split off is merged with the edges below it, so every
// message runs GPU to GPU along the concatenated route.
struct Message {
  int from = 0, to = 0;
  int route = 0;
};

struct LoweredTree {
  int root = 0;  // rank
  double gbps = 0.0;
  std::vector<Message> messages;
  int depth = 0;
  double latency_s = 0.0;  // the largest route latency
};

class Builder {
 public:
  Builder(Plan& plan, const topo::Topology& topology, const LowerOptions& options)
      : plan_(plan), topology_(topology), options_(options), writer_(plan) {
    rank_of_gpu_ = ranksOfGpus(topology);
    plan_.ranks.resize(plan_.num_ranks);
  }

  LoweredTree lower(const treegen::Tree& tree) {
    LoweredTree out;
    out.root = rankOf(tree.root_gpu);
    out.gbps = tree.weight_gbps;
    // Route from the nearest GPU ancestor to each vertex, and that ancestor.
    std::map<topo::Vertex, std::pair<int, std::vector<topo::Vertex>>> pending;
    std::map<int, int> depth_of{{out.root, 0}};
    for (const auto& edge : tree.edges) {
      std::vector<topo::Vertex> route = edge.route;
      int from_rank;
      if (isGpu(edge.from)) {
        from_rank = rankOf(topology_.device(edge.from).gpu_index);
      } else {
        auto it = pending.find(edge.from);
        if (it == pending.end()) {
          throw Error(blinkInternalError, "lowering: tree edge from an unreached switch");
        }
        from_rank = it->second.first;
        route = it->second.second;
        route.insert(route.end(), edge.route.begin() + 1, edge.route.end());
      }
      if (isGpu(edge.to)) {
        int to_rank = rankOf(topology_.device(edge.to).gpu_index);
        out.messages.push_back({from_rank, to_rank, addRoute(route)});
        depth_of[to_rank] = depth_of[from_rank] + 1;
        out.depth = std::max(out.depth, depth_of[to_rank]);
        out.latency_s = std::max(out.latency_s, routeLatency(route));
      } else {
        pending[edge.to] = {from_rank, route};
      }
    }
    return out;
  }

  // The chunk for `bytes` of tree t on one channel moving at `gbps` (the channel's
  // share of the tree's rate). `passes`: 2 when each chunk goes up the tree and then
  // down again (AllReduce), which makes the pipeline twice as deep.
  std::uint64_t chunkFor(const LoweredTree& t, std::uint64_t bytes, double gbps,
                         int passes = 1) const {
    if (options_.chunk_bytes > 0) return fixedChunk();
    return chooseChunkBytes(bytes, passes * t.depth, alpha(t), gbps, options_.element_size);
  }

  // How many channels `bytes` of tree t travel on (channelsForTree, or with a fixed
  // chunk size: all of options.channels_per_tree once the data makes two chunks).
  int channelsFor(const LoweredTree& t, std::uint64_t bytes, int passes = 1) const {
    const int most = std::max(1, options_.channels_per_tree);
    if (options_.chunk_bytes > 0) {
      return bytes >= kMinChunksPerChannel * fixedChunk() ? most : 1;
    }
    return channelsForTree(bytes, passes * t.depth, alpha(t), t.gbps, options_.element_size, most);
  }

  // Chunk boundaries of channel k of `channels` that carry [offset, offset + bytes):
  // channel k's first chunk holds k/channels of a chunk, so the channels of one tree
  // take turns (while one waits out a step's latency, another's bytes flow) instead
  // of running in lockstep and waiting out their latencies together.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> staggeredChunks(std::uint64_t offset,
                                                                       std::uint64_t bytes,
                                                                       std::uint64_t chunk, int k,
                                                                       int channels) const {
    const auto lead = chunk * static_cast<std::uint64_t>(k) /
                      static_cast<std::uint64_t>(std::max(channels, 1)) / es() * es();
    if (lead == 0 || lead >= bytes) return chunks(offset, bytes, chunk);
    auto out = chunks(offset + lead, bytes - lead, chunk);
    out.insert(out.begin(), {offset, lead});
    return out;
  }

  // Chunk boundaries of [offset, offset + bytes).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks(std::uint64_t offset,
                                                              std::uint64_t bytes,
                                                              std::uint64_t chunk) const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (std::uint64_t done = 0; done < bytes; done += chunk) {
      out.emplace_back(offset + done, std::min(chunk, bytes - done));
    }
    return out;
  }

  // Data flows root -> leaves. after_recv_deps: per rank, steps that must finish
  // before the chunk may be overwritten (a pending Send of the same range).
  // Returns, per chunk, the step that delivered it on each rank (-1: the root).
  std::vector<std::map<int, int>> broadcastPass(
      const LoweredTree& t, int channel,
      const std::vector<std::pair<std::uint64_t, std::uint64_t>>& cs,
      const std::vector<std::map<int, int>>* ready_at_root,
      const std::vector<std::map<int, int>>* must_finish) {
    std::vector<std::map<int, int>> delivered(cs.size());
    for (std::size_t j = 0; j < cs.size(); ++j) {
      for (const auto& m : t.messages) {
        std::vector<int> send_deps;
        if (m.from == t.root) {
          if (ready_at_root != nullptr) addIf(send_deps, (*ready_at_root)[j], m.from);
        } else {
          addIf(send_deps, delivered[j], m.from);
        }
        int send =
            add(m.from, {StepKind::Send, m.to, channel, cs[j].first, cs[j].second, 0, m.route, {}},
                send_deps);
        (void)send;
        std::vector<int> recv_deps;
        if (must_finish != nullptr) addIf(recv_deps, (*must_finish)[j], m.to);
        delivered[j][m.to] =
            add(m.to, {StepKind::Recv, m.from, channel, cs[j].first, cs[j].second, 0, -1, {}},
                recv_deps);
      }
    }
    return delivered;
  }

  // Data flows leaves -> root, combined on the way. Returns, per chunk, each
  // rank's Send of it (for later overwrite hazards) and the root's last reduction.
  struct ReduceOutcome {
    std::vector<std::map<int, int>> sent;      // rank -> its Send of chunk j
    std::vector<std::map<int, int>> complete;  // root -> its last RecvReduce of chunk j
  };
  ReduceOutcome reducePass(const LoweredTree& t, int channel,
                           const std::vector<std::pair<std::uint64_t, std::uint64_t>>& cs) {
    ReduceOutcome out;
    out.sent.resize(cs.size());
    out.complete.resize(cs.size());
    for (std::size_t j = 0; j < cs.size(); ++j) {
      std::map<int, int> last_reduce;  // rank -> its latest RecvReduce of chunk j
      for (auto it = t.messages.rbegin(); it != t.messages.rend(); ++it) {
        const Message& m = *it;  // reversed: m.to sends to m.from
        std::vector<int> send_deps;
        addIf(send_deps, last_reduce, m.to);
        out.sent[j][m.to] = add(m.to,
                                {StepKind::Send,
                                 m.from,
                                 channel,
                                 cs[j].first,
                                 cs[j].second,
                                 0,
                                 reverseRoute(m.route),
                                 {}},
                                send_deps);
        std::vector<int> reduce_deps;
        addIf(reduce_deps, last_reduce, m.from);  // one reduction into a range at a time
        last_reduce[m.from] =
            add(m.from, {StepKind::RecvReduce, m.to, channel, cs[j].first, cs[j].second, 0, -1, {}},
                reduce_deps);
      }
      if (auto r = last_reduce.find(t.root); r != last_reduce.end())
        out.complete[j][t.root] = r->second;
    }
    return out;
  }

  int rankOf(int gpu_index) const {
    if (gpu_index < 0 || gpu_index >= static_cast<int>(rank_of_gpu_.size()) ||
        rank_of_gpu_[gpu_index] < 0) {
      throw Error(blinkInternalError,
                  "lowering: GPU " + std::to_string(gpu_index) + " is not in the topology");
    }
    return rank_of_gpu_[gpu_index];
  }

  // The plan's writer: steps added through it keep per-channel message order.
  PlanWriter& writer() { return writer_; }

  // Seconds: the sum over the route's hops of the slowest link's latency.
  double routeLatency(const std::vector<topo::Vertex>& route) const {
    double us = 0.0;
    for (std::size_t k = 0; k + 1 < route.size(); ++k) {
      double hop = 0.0;
      for (topo::Edge e : topology_.linksBetween(route[k], route[k + 1])) {
        hop = std::max(hop, topology_.link(e).latency_us);
      }
      us += hop;
    }
    return us * 1e-6;
  }

 private:
  std::uint64_t es() const { return static_cast<std::uint64_t>(options_.element_size); }

  std::uint64_t fixedChunk() const {
    return std::max<std::uint64_t>(options_.chunk_bytes / es() * es(), es());
  }

  // The per-step cost the chunk rule weighs for tree t: its slowest route's latency
  // plus the fixed per-step overhead.
  double alpha(const LoweredTree& t) const {
    return t.latency_s + options_.step_overhead_us * 1e-6;
  }

  bool isGpu(topo::Vertex v) const { return topology_.device(v).kind == topo::DeviceKind::Gpu; }

  int addRoute(const std::vector<topo::Vertex>& route) { return writer_.route(route); }

  int reverseRoute(int route) {
    std::vector<topo::Vertex> r = plan_.routes[route];
    std::reverse(r.begin(), r.end());
    return addRoute(r);
  }

  static void addIf(std::vector<int>& deps, const std::map<int, int>& steps, int rank) {
    if (auto it = steps.find(rank); it != steps.end() && it->second >= 0)
      deps.push_back(it->second);
  }

  int add(int rank, Step step, std::vector<int> deps) {
    step.deps = std::move(deps);
    return writer_.add(rank, std::move(step));
  }

  Plan& plan_;
  const topo::Topology& topology_;
  const LowerOptions& options_;
  std::vector<int> rank_of_gpu_;
  PlanWriter writer_;
};

// Splits [offset, offset + bytes) among `weights` in proportion, in whole elements.
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> splitByWeight(
    std::uint64_t offset, std::uint64_t bytes, const std::vector<double>& weights,
    int element_size) {
  const std::uint64_t es = static_cast<std::uint64_t>(element_size);
  const std::uint64_t elements = bytes / es;
  double total = 0.0;
  for (double w : weights) total += w;
  std::vector<std::uint64_t> share(weights.size(), 0);
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    share[i] = total > 0 ? static_cast<std::uint64_t>(
                               std::floor(static_cast<double>(elements) * (weights[i] / total)))
                         : 0;
    given += share[i];
  }
  for (std::size_t i = 0; given < elements && !share.empty(); i = (i + 1) % share.size()) {
    ++share[i];
    ++given;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  std::uint64_t at = offset;
  for (auto s : share) {
    out.emplace_back(at, s * es);
    at += s * es;
  }
  return out;
}

}  // namespace blink::plan::detail
