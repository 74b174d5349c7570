// The intra-node side of the hierarchical plan: node classes, their trees, and the
// phases that move pieces over them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "common/error.hpp"
#include "plan/hierarchical_composer.hpp"
#include "plan/tree_cache.hpp"

namespace blink::plan::detail {

const NodeTrees& Composer::allGatherTrees(int k) {
  auto it = ag_trees_.find(k);
  if (it != ag_trees_.end()) return it->second;
  NodeTrees nt;
  if (localCount(k) >= 2) {
    const ClassTopology sub = classTopology(intraTopology(k));
    nt = lowered(onNode(classTrees(sub, -1), sub));
  }
  return ag_trees_.emplace(k, std::move(nt)).first->second;
}

NodeTrees Composer::broadcastTrees(int k, int root_rank) {
  if (localCount(k) < 2) return {};
  const ClassTopology sub = classTopology(intraTopology(k));
  const int root_gpu = plan_.rank_gpu[root_rank];
  const auto local = std::find(sub.gpu_of_local.begin(), sub.gpu_of_local.end(), root_gpu);
  return lowered(onNode(classTrees(sub, static_cast<int>(local - sub.gpu_of_local.begin())), sub));
}

Composer::ClassTopology Composer::classTopology(const NodeTopology& node) {
  ClassTopology out;
  out.sub = topo::Topology("node class");
  out.to_full = node.to_full;
  const auto& g = node.sub.graph();
  std::ostringstream key;
  key.precision(17);
  for (topo::Vertex v : boost::make_iterator_range(boost::vertices(g))) {
    topo::Device d = node.sub.device(v);
    d.id = "d" + std::to_string(v);
    d.node = 0;
    d.pci_bus_id.clear();
    if (d.kind == topo::DeviceKind::Gpu) {
      out.gpu_of_local.push_back(d.gpu_index);
      d.gpu_index = static_cast<int>(out.gpu_of_local.size()) - 1;
    }
    out.sub.addDevice(d);
    key << topo::toString(d.kind) << ' ' << d.model << ' ' << d.numa << ';';
  }
  for (topo::Edge e : node.sub.links()) {
    const topo::Link& link = node.sub.link(e);
    out.sub.addLink(node.sub.source(e), node.sub.target(e), link);
    key << node.sub.source(e) << '>' << node.sub.target(e) << ' ' << topo::toString(link.kind)
        << ' ' << link.gbps << 'x' << link.multiplicity << ' ' << link.latency_us << ';';
  }
  out.key = key.str();
  return out;
}

const treegen::TreeSet& Composer::classTrees(const ClassTopology& c, int root_local) {
  const auto key = std::make_pair(c.key, root_local);
  if (auto it = class_trees_.find(key); it != class_trees_.end()) return it->second;
  treegen::TreeSet set = root_local < 0 ? plan::allGatherTrees(c.sub, pack_)
                                        : plan::broadcastTrees(c.sub, root_local, pack_);
  return class_trees_.emplace(key, std::move(set)).first->second;
}

treegen::TreeSet Composer::onNode(treegen::TreeSet set, const ClassTopology& c) {
  set = toFull(std::move(set), c.to_full);
  if (set.root_gpu >= 0) set.root_gpu = c.gpu_of_local[static_cast<std::size_t>(set.root_gpu)];
  for (auto& tree : set.trees) {
    if (tree.root_gpu >= 0) {
      tree.root_gpu = c.gpu_of_local[static_cast<std::size_t>(tree.root_gpu)];
    }
  }
  return set;
}

NodeTopology Composer::intraTopology(int k) {
  const int node = layout_.node_ids[static_cast<std::size_t>(k)];
  HopSet used;
  for (const auto& port : layout_.ports[static_cast<std::size_t>(k)]) {
    if (!port.nic) continue;
    const topo::Vertex g = *t_.findGpu(plan_.rank_gpu[port.rank]);
    auto route = shortestWidestRoute(t_, g, *port.nic, insideNode(t_, node));
    for (std::size_t h = 0; h + 1 < route.size(); ++h) {
      used.insert({route[h], route[h + 1]});
      used.insert({route[h + 1], route[h]});
    }
  }
  NodeTopology sub = nodeTopology(t_, node, used);
  if (!used.empty() && gpusConnected(sub.sub)) {
    intra_links_[k] = "without the links to its NICs";
    return sub;
  }
  intra_links_[k] = "over all its links";
  return nodeTopology(t_, node);
}

NodeTrees Composer::lowered(const treegen::TreeSet& set) {
  NodeTrees nt;
  for (const auto& tree : set.trees) {
    nt.by_root[b_.rankOf(tree.root_gpu)].push_back(nt.trees.size());
    nt.trees.push_back(b_.lower(tree));
  }
  std::ostringstream note;
  note << set.method << " trees: " << set.trees.size() << ", " << set.rate_gbps << " of "
       << set.bound_gbps << " GB/s";
  nt.note = note.str();
  if (nt.trees.size() * static_cast<std::size_t>(std::max(1, options_.channels_per_tree)) >
      static_cast<std::size_t>(kPhase)) {
    throw Error(blinkInternalError, "hierarchical: more trees in one node than channels");
  }
  return nt;
}

void Composer::intraOwned(int k, const std::function<bool(const Piece&)>& which, bool up,
                          int channel_base) {
  if (localCount(k) < 2) return;
  std::map<int, std::vector<Range>> ranges;
  for (int r : layout_.ranks[k]) {
    std::vector<Range> mine;
    for (std::size_t i : owned_[r]) {
      if (layout_.node_of_rank[r] == k && pieces_[i].owner[k] == r && which(pieces_[i])) {
        // With whole cuts, adjacent pieces are one run (chunks may span them).
        if (whole_cuts_ && !mine.empty() &&
            mine.back().first + mine.back().second == pieces_[i].range.first) {
          mine.back().second += pieces_[i].range.second;
        } else {
          mine.push_back(pieces_[i].range);
        }
      }
    }
    ranges[r] = std::move(mine);
  }
  intra(allGatherTrees(k), ranges, up, channel_base);
}

void Composer::intraSegments(int k, bool up, int channel_base) {
  if (localCount(k) < 2) return;
  std::map<int, std::vector<Range>> ranges;
  for (int r : layout_.ranks[k]) ranges[r] = {};
  for (const Piece& p : pieces_) {
    if (layout_.node_of_rank[p.block] == k) ranges[static_cast<int>(p.block)].push_back(p.range);
  }
  intra(allGatherTrees(k), ranges, up, channel_base);
}

void Composer::intraWhole(int k, int root_rank, bool up, int channel_base) {
  if (localCount(k) < 2) return;
  std::vector<Range> all;
  for (const Piece& p : pieces_) all.push_back(p.range);
  intra(root_trees_, {{root_rank, all}}, up, channel_base, options_.channels_per_tree);
}

void Composer::intra(const NodeTrees& nt, const std::map<int, std::vector<Range>>& ranges, bool up,
                     int channel_base, int channels_per_tree, bool in_order, bool ramp) {
  for (const auto& [root, list] : ranges) {
    if (list.empty()) continue;
    auto it = nt.by_root.find(root);
    if (it == nt.by_root.end()) {
      throw Error(blinkInternalError,
                  "hierarchical: no tree of its node is rooted at rank " + std::to_string(root));
    }
    const std::vector<std::size_t>& trees = it->second;
    double weight = 0.0;
    std::uint64_t total = 0;
    for (std::size_t i : trees) weight += std::max(nt.trees[i].gbps, 0.0);
    for (const Range& r : list) total += r.second;
    // Lanes: each tree's channels, each with an equal part of its rate.
    struct Lane {
      std::size_t tree = 0;  // index into nt.trees
      int channel = 0;
      double gbps = 0.0;
      std::uint64_t chunk = 0, lead = 0, given = 0;
      std::vector<Range> dealt;
    };
    const int most = std::max(1, channels_per_tree);
    std::vector<Lane> lanes;
    for (std::size_t i : trees) {
      const double share = weight > 0 ? nt.trees[i].gbps / weight : 1.0;
      const auto bytes = std::max(
          static_cast<std::uint64_t>(static_cast<double>(total) * share) / es() * es(), es());
      const std::uint64_t one = chunkFor(nt.trees[i].latency_s, nt.trees[i].gbps, bytes);
      const int channels = bytes / one >= kMinChunksPerChannel ? most : 1;
      for (int k = 0; k < channels; ++k) {
        Lane lane;
        lane.tree = i;
        lane.channel = channel_base + static_cast<int>(i) * most + k;
        lane.gbps = nt.trees[i].gbps / channels;
        lane.chunk = channels == 1 ? one
                                   : chunkFor(nt.trees[i].latency_s, lane.gbps,
                                              std::max(bytes / channels / es() * es(), es()));
        lane.lead = lane.chunk * static_cast<std::uint64_t>(k) /
                    static_cast<std::uint64_t>(channels) / es() * es();
        lanes.push_back(std::move(lane));
      }
    }
    std::vector<std::uint64_t> done(list.size(), 0);
    for (std::uint64_t left = total; left > 0;) {
      std::size_t pick = 0;
      double best_finish = std::numeric_limits<double>::infinity();
      for (std::size_t l = 0; l < lanes.size(); ++l) {
        if (lanes[l].gbps <= 0) continue;
        const std::uint64_t next =
            lanes[l].dealt.empty() && lanes[l].lead > 0 ? lanes[l].lead : lanes[l].chunk;
        const double finish = static_cast<double>(lanes[l].given + next) / lanes[l].gbps;
        if (finish < best_finish) {
          best_finish = finish;
          pick = l;
        }
      }
      Lane& lane = lanes[pick];
      // The ranges advance together (least done first), as the chains of the
      // inter-node phase deliver or take them.
      std::size_t range = list.size();
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (done[k] == list[k].second) continue;
        if (range == list.size() ||
            lessDone(done[k], list[k].second, done[range], list[range].second)) {
          range = k;
        }
        if (in_order) break;
      }
      std::uint64_t want = lane.dealt.empty() && lane.lead > 0 ? lane.lead : lane.chunk;
      if (ramp) {
        const auto dealt = static_cast<double>(up ? total - left : left);
        const std::uint64_t cap =
            std::max(kRampFirstChunkBytes, static_cast<std::uint64_t>(kRampGrowth * dealt));
        want = std::max(std::min(want, cap / es() * es()), es());
      }
      const std::uint64_t len = std::min(want, list[range].second - done[range]);
      lane.dealt.emplace_back(list[range].first + done[range], len);
      lane.given += len;
      done[range] += len;
      left -= len;
      largest_chunk_ = std::max(largest_chunk_, len);
    }
    for (const Lane& lane : lanes) {
      if (!lane.dealt.empty()) setShare(lane.channel, lane.gbps);
      for (const Range& c : lane.dealt) treePass(nt.trees[lane.tree], lane.channel, c, up);
    }
  }
}

void Composer::treePass(const detail::LoweredTree& tree, int channel, Range c, bool up) {
  if (!up) {
    for (const auto& m : tree.messages) transfer(m.from, m.to, channel, c, m.route, false);
    return;
  }
  for (auto it = tree.messages.rbegin(); it != tree.messages.rend(); ++it) {
    transfer(it->to, it->from, channel, c, reversed(it->route), true);
  }
}

}  // namespace blink::plan::detail
