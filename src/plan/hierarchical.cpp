#include "plan/hierarchical.hpp"

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
#include "plan/node_layout.hpp"
#include "plan/plan_writer.hpp"
#include "plan/tree_builder.hpp"
#include "plan/tree_cache.hpp"

namespace blink::plan {
namespace {

using Range = ByteRange;

// ---- dependencies from byte ranges -----------------------------------------------

// Per rank: for every byte, the last step that wrote it and the steps that read it
// since. A new step depends on the last writer of what it reads or writes, and (when
// it writes) on the readers since: read after write, write after read, write after
// write.
class RangeTracker {
 public:
  explicit RangeTracker(std::uint64_t bytes) {
    if (bytes > 0) segments_[0] = {bytes, -1, {}};
  }

  void dependencies(Range r, bool writes, std::vector<int>& out) {
    forEach(r, [&](Segment& s) {
      if (s.writer >= 0) out.push_back(s.writer);
      if (writes) out.insert(out.end(), s.readers.begin(), s.readers.end());
    });
  }

  void record(Range r, bool writes, int step) {
    forEach(r, [&](Segment& s) {
      if (writes) {
        s.writer = step;
        s.readers.clear();
      } else {
        s.readers.push_back(step);
      }
    });
  }

 private:
  struct Segment {
    std::uint64_t end = 0;
    int writer = -1;
    std::vector<int> readers;
  };

  void split(std::uint64_t at) {
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    Segment tail = it->second;
    it->second.end = at;
    segments_.emplace(at, std::move(tail));
  }

  template <typename F>
  void forEach(Range r, F f) {
    if (r.second == 0) return;
    const std::uint64_t end = r.first + r.second;
    split(r.first);
    split(end);
    for (auto it = segments_.find(r.first); it != segments_.end() && it->first < end; ++it) {
      f(it->second);
    }
  }

  std::map<std::uint64_t, Segment> segments_;
};

// ---- ownership ---------------------------------------------------------------------

struct Block {
  Range range;
  int home = 0;        // node position
  int home_rank = -1;  // owns the whole block on its home node (AllGather/ReduceScatter)
};

struct Piece {
  Range range;
  std::size_t block = 0;
  int home = 0;            // node position
  std::vector<int> owner;  // per node position: the owning rank
  std::vector<int> port;   // per node position: the owning port (index into its ports)
};

// `r` cut into `parts` near-equal runs of whole elements (the first ones one element
// longer).
// a_done / a_total < b_done / b_total (totals positive).
bool lessDone(std::uint64_t a_done, std::uint64_t a_total, std::uint64_t b_done,
              std::uint64_t b_total) {
  return static_cast<double>(a_done) * static_cast<double>(b_total) <
         static_cast<double>(b_done) * static_cast<double>(a_total);
}

// ---- the composition -------------------------------------------------------------

struct NodeTrees {
  std::vector<detail::LoweredTree> trees;
  std::map<int, std::vector<std::size_t>> by_root;  // rank -> indices into trees
  std::string note;
};

class Composer {
 public:
  Composer(Plan& plan, const topo::Topology& t, const LowerOptions& options,
           const treegen::PackOptions& pack, std::size_t max_transfers)
      : plan_(plan),
        t_(t),
        options_(options),
        pack_(pack),
        layout_(nodeLayout(t)),
        b_(plan, t, options),
        tracks_(static_cast<std::size_t>(plan.num_ranks), RangeTracker(plan.bytes)),
        max_transfers_(max_transfers) {}

  void run(Collective c, int root_rank) {
    const int nodes = static_cast<int>(layout_.node_ids.size());
    const std::uint64_t es = this->es();
    const int root_node = root_rank >= 0 ? layout_.node_of_rank[root_rank] : -1;
    std::vector<Block> blocks;
    switch (c) {
      case Collective::AllReduce: {
        // N blocks; from kWholeCutsMinNodes nodes on, stripes (one per port of the
        // nodes with the most), each cut into N blocks: each port's part of the
        // buffer is then one contiguous run holding about 1/N of every home's bytes,
        // so the intra-node trees move it in chunks that span pieces (messages that
        // do not grow with N) while every home stays balanced.
        whole_cuts_ = nodes >= kWholeCutsMinNodes;
        runs_ = whole_cuts_ && interTrees(nodes);
        for (const Range& stripe : evenParts({0, plan_.bytes}, whole_cuts_ ? maxPorts() : 1, es)) {
          auto parts = evenParts(stripe, nodes, es);
          for (int m = 0; m < nodes; ++m) blocks.push_back({parts[m], m, -1});
        }
        break;
      }
      case Collective::Broadcast:
      case Collective::Reduce:
        blocks.push_back({{0, plan_.bytes}, root_node, -1});
        break;
      case Collective::AllGather:
      case Collective::ReduceScatter:
        for (int r = 0; r < plan_.num_ranks; ++r) {
          blocks.push_back(
              {{plan_.segmentOffset(r), plan_.segmentBytes(r)}, layout_.node_of_rank[r], r});
        }
        break;
    }
    buildPieces(blocks);

    // The trees first: every chunk size is chosen for the whole pipeline a chunk goes
    // through (intra-node tree, inter-node chain, intra-node tree), not for one phase.
    const bool rooted = c == Collective::Broadcast || c == Collective::Reduce;
    int intra_depth = 0;
    for (int k = 0; k < nodes; ++k) {
      if (rooted && k == root_node) {
        if (localCount(k) >= 2) root_trees_ = broadcastTrees(k, root_rank);
        for (const auto& t : root_trees_.trees) intra_depth = std::max(intra_depth, t.depth);
      } else {
        for (const auto& t : allGatherTrees(k).trees) intra_depth = std::max(intra_depth, t.depth);
      }
    }
    const int chain_hops = (c == Collective::AllReduce ? 2 : 1) * (nodes - 1);
    pipeline_depth_ = interDepth(c, nodes) + 2 * intra_depth;
    // The bytes all messages move together, about: every byte once over each edge of a
    // node's trees per intra-node phase (two for AllReduce), and once per chain hop.
    // Spread over at most max_transfers_ messages, that is the smallest chunk.
    if (max_transfers_ > 0) {
      double edges = 0.0;
      for (int k = 0; k < nodes; ++k) edges += std::max(localCount(k) - 1, 0);
      const double moved = static_cast<double>(plan_.bytes) *
                           ((c == Collective::AllReduce ? 2.0 : 1.0) * edges + chain_hops);
      chunk_floor_ =
          static_cast<std::uint64_t>(moved / static_cast<double>(max_transfers_)) / es * es;
      // Runs between nodes: the inter-node messages no longer grow with the pieces, so
      // they get half the budget of their own instead of chunks sized for the
      // intra-node phases' far larger count (14 MiB at 128 H100 nodes, 1 GiB: a
      // pipeline of 9 chunks through 14 stages, 0.34 of the NIC bound; 3.6 MiB: 0.50).
      if (runs_) {
        inter_floor_ = static_cast<std::uint64_t>(static_cast<double>(plan_.bytes) * chain_hops /
                                                  (static_cast<double>(max_transfers_) / 2.0)) /
                       es * es;
      }
    }

    // Channels: P1 on [0, kPhase), P3 on [kPhase, 2 kPhase), P2 from 2 kPhase: two per
    // home node (reduce chain, broadcast chain). Intra-node and inter-node messages
    // never share a (sender, receiver) pair anyway.
    const int p1 = 0, p3 = kPhase, p2 = 2 * kPhase;
    auto everyPiece = [](const Piece&) { return true; };
    switch (c) {
      case Collective::AllReduce:
        for (int k = 0; k < nodes; ++k) intraOwned(k, everyPiece, true, p1);
        chains(true, true, p2);
        for (int k = 0; k < nodes; ++k) intraOwned(k, everyPiece, false, p3);
        break;
      case Collective::Broadcast:
        intraWhole(root_node, root_rank, false, p1);
        chains(false, true, p2);
        for (int k = 0; k < nodes; ++k) {
          if (k != root_node) intraOwned(k, everyPiece, false, p3);
        }
        break;
      case Collective::Reduce:
        for (int k = 0; k < nodes; ++k) {
          if (k != root_node) intraOwned(k, everyPiece, true, p1);
        }
        chains(true, false, p2);
        intraWhole(root_node, root_rank, true, p3);
        break;
      case Collective::AllGather:
        for (int k = 0; k < nodes; ++k) intraSegments(k, false, p1);
        chains(false, true, p2);
        for (int k = 0; k < nodes; ++k) {
          intraOwned(
              k, [k](const Piece& p) { return p.home != k; }, false, p3);
        }
        break;
      case Collective::ReduceScatter:
        for (int k = 0; k < nodes; ++k) {
          intraOwned(
              k, [k](const Piece& p) { return p.home != k; }, true, p1);
        }
        chains(true, false, p2);
        for (int k = 0; k < nodes; ++k) intraSegments(k, true, p3);
        break;
    }
    if (plan_.chunk_bytes == 0) plan_.chunk_bytes = largest_chunk_;
    assignShares();
    describe();
  }

 private:
  static constexpr int kPhase = 1024;
  // From this many nodes on, AllReduce's inter-node phase runs double binary trees
  // (1 GiB on hgx-h100: below, the ring chain predicts faster, 241 against 237 GB/s
  // on 3 nodes, 191 against 183 on 8; 152 against 148 on 16).
  static constexpr int kInterTreeMinNodes = 16;
  // From this many nodes on, AllReduce's ports own contiguous runs (whole cuts):
  // 1 GiB on hgx-h100:32, 328704 steps instead of 522240, 0.55 of the NIC bound
  // instead of 0.57; below, the pieces' own chunks predict faster (hgx-h100:8: 191
  // against 182 GB/s).
  static constexpr int kWholeCutsMinNodes = 32;

  std::uint64_t es() const { return static_cast<std::uint64_t>(options_.element_size); }
  int localCount(int k) const { return static_cast<int>(layout_.ranks[k].size()); }

  // Pieces: the common refinement of every node's cut of every block.
  void buildPieces(const std::vector<Block>& blocks) {
    const int nodes = static_cast<int>(layout_.node_ids.size());
    owned_.assign(static_cast<std::size_t>(plan_.num_ranks), {});
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const Block& block = blocks[b];
      if (block.range.second == 0) continue;
      // Per node: the ports that share the block (all of them, or on its home node the
      // home rank's own), and their parts of it.
      std::vector<std::vector<int>> sharing(nodes);
      std::vector<std::vector<Range>> cut(nodes);
      const std::uint64_t block_end = block.range.first + block.range.second;
      std::set<std::uint64_t> bounds{block.range.first, block_end};
      for (int k = 0; k < nodes; ++k) {
        const auto& ports = layout_.ports[static_cast<std::size_t>(k)];
        for (std::size_t j = 0; j < ports.size(); ++j) {
          if (k != block.home || block.home_rank < 0 || ports[j].rank == block.home_rank) {
            sharing[k].push_back(static_cast<int>(j));
          }
        }
        // whole_cuts_: each node cuts the whole buffer, not each block.
        cut[k] = evenParts(whole_cuts_ ? Range{0, plan_.bytes} : block.range,
                           static_cast<int>(sharing[k].size()), es());
        for (const Range& part : cut[k]) {
          if (part.first > block.range.first && part.first < block_end) bounds.insert(part.first);
        }
      }
      for (auto it = bounds.begin(); std::next(it) != bounds.end(); ++it) {
        Piece p;
        p.range = {*it, *std::next(it) - *it};
        p.block = b;
        p.home = block.home;
        for (int k = 0; k < nodes; ++k) {
          // The last part starting at or before the piece (empty parts start where
          // the next one does, so this is the part that holds it).
          std::size_t i = 0;
          for (std::size_t q = 0; q < cut[k].size(); ++q) {
            if (cut[k][q].first <= p.range.first && cut[k][q].second > 0) i = q;
          }
          p.port.push_back(sharing[k][i]);
          p.owner.push_back(layout_.ports[k][static_cast<std::size_t>(p.port.back())].rank);
        }
        for (int k = 0; k < nodes; ++k) owned_[p.owner[k]].push_back(pieces_.size());
        pieces_.push_back(std::move(p));
      }
    }
  }

  // ---- intra-node phases ----

  const NodeTrees& allGatherTrees(int k) {
    auto it = ag_trees_.find(k);
    if (it != ag_trees_.end()) return it->second;
    NodeTrees nt;
    if (localCount(k) >= 2) {
      const ClassTopology sub = classTopology(intraTopology(k));
      nt = lowered(onNode(classTrees(sub, -1), sub));
    }
    return ag_trees_.emplace(k, std::move(nt)).first->second;
  }

  NodeTrees broadcastTrees(int k, int root_rank) {
    if (localCount(k) < 2) return {};
    const ClassTopology sub = classTopology(intraTopology(k));
    const int root_gpu = plan_.rank_gpu[root_rank];
    const auto local = std::find(sub.gpu_of_local.begin(), sub.gpu_of_local.end(), root_gpu);
    return lowered(
        onNode(classTrees(sub, static_cast<int>(local - sub.gpu_of_local.begin())), sub));
  }

  // ---- node classes ----
  //
  // Nodes built alike (same devices in the same order, same links) are one class: their
  // trees are packed once, on the class's own form of the node, and mapped onto each
  // node. On a cluster of identical nodes that is one packing per collective shape,
  // however many nodes there are.

  // A node's sub-topology as its class sees it: devices named by position on node 0,
  // GPUs numbered 0.. in order, with the way back to the node's own GPUs and vertices.
  struct ClassTopology {
    topo::Topology sub;
    std::vector<topo::Vertex> to_full;  // class vertex -> vertex of the whole topology
    std::vector<int> gpu_of_local;      // class gpu_index -> gpu_index in the whole topology
    std::string key;                    // equal for nodes of one class
  };

  static ClassTopology classTopology(const NodeTopology& node) {
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

  // The trees of a class (root: a class gpu_index, -1 for AllGather), packed on its
  // first node and kept for the others.
  const treegen::TreeSet& classTrees(const ClassTopology& c, int root_local) {
    const auto key = std::make_pair(c.key, root_local);
    if (auto it = class_trees_.find(key); it != class_trees_.end()) return it->second;
    treegen::TreeSet set = root_local < 0 ? plan::allGatherTrees(c.sub, pack_)
                                          : plan::broadcastTrees(c.sub, root_local, pack_);
    return class_trees_.emplace(key, std::move(set)).first->second;
  }

  // A class's trees on one node of it: its vertices and GPUs.
  static treegen::TreeSet onNode(treegen::TreeSet set, const ClassTopology& c) {
    set = toFull(std::move(set), c.to_full);
    if (set.root_gpu >= 0) set.root_gpu = c.gpu_of_local[static_cast<std::size_t>(set.root_gpu)];
    for (auto& tree : set.trees) {
      if (tree.root_gpu >= 0) {
        tree.root_gpu = c.gpu_of_local[static_cast<std::size_t>(tree.root_gpu)];
      }
    }
    return set;
  }

  // Node k's links for its trees: without the hops of its ports' routes to their NICs
  // (so the trees leave the PCIe lanes to the network) when its GPUs stay connected
  // without them, else all of them.
  NodeTopology intraTopology(int k) {
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

  NodeTrees lowered(const treegen::TreeSet& set) {
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

  // Node k: what each local rank owns among the pieces `which` accepts, over the node's
  // allgather trees rooted at it: up (reduced to the owner) or down (from it).
  template <typename Which>
  void intraOwned(int k, Which which, bool up, int channel_base) {
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

  // Node k: each local rank's own segment (block r: the pieces of it) over the
  // allgather trees rooted at it.
  void intraSegments(int k, bool up, int channel_base) {
    if (localCount(k) < 2) return;
    std::map<int, std::vector<Range>> ranges;
    for (int r : layout_.ranks[k]) ranges[r] = {};
    for (const Piece& p : pieces_) {
      if (layout_.node_of_rank[p.block] == k) ranges[static_cast<int>(p.block)].push_back(p.range);
    }
    intra(allGatherTrees(k), ranges, up, channel_base);
  }

  // The root's node: the whole buffer (every piece) over the node's broadcast trees
  // from the root, on options.channels_per_tree channels each.
  void intraWhole(int k, int root_rank, bool up, int channel_base) {
    if (localCount(k) < 2) return;
    std::vector<Range> all;
    for (const Piece& p : pieces_) all.push_back(p.range);
    intra(root_trees_, {{root_rank, all}}, up, channel_base, options_.channels_per_tree);
  }

  // The ranges of each root (pieces) are dealt out to the root's trees chunk by chunk,
  // each next chunk to the tree that would finish it first at its weight (stride
  // scheduling), from the piece least done: as the inter-node chains move every piece
  // at once, front to back, each tree then works on what they produce or need next,
  // in proportion to its weight, instead of one tree's contiguous share or one piece
  // holding up the others.
  //
  // Each tree has channels_per_tree channels (as in lower_trees.cpp: the trees of one
  // root alone, not those of every root at once, which fill each other's gaps) when its
  // part makes kMinChunksPerChannel chunks: each with an equal part of the tree's rate as
  // its share and its chunks, its first chunk k/channels of one so that the channels
  // take turns waiting out a step's latency.
  void intra(const NodeTrees& nt, const std::map<int, std::vector<Range>>& ranges, bool up,
             int channel_base, int channels_per_tree = 1) {
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
        }
        const std::uint64_t want = lane.dealt.empty() && lane.lead > 0 ? lane.lead : lane.chunk;
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

  void treePass(const detail::LoweredTree& tree, int channel, Range c, bool up) {
    if (!up) {
      for (const auto& m : tree.messages) transfer(m.from, m.to, channel, c, m.route, false);
      return;
    }
    for (auto it = tree.messages.rbegin(); it != tree.messages.rend(); ++it) {
      transfer(it->to, it->from, channel, c, reversed(it->route), true);
    }
  }

  // ---- the inter-node phase ----

  // Every piece's chains, their chunks interleaved over the pieces (least done first),
  // as the intra-node phases produce and consume them.
  void chains(bool reduce, bool broadcast, int channel_base) {
    std::vector<Chain> all;
    for (const Piece& p : interRuns(reduce && broadcast)) {
      all.push_back(chain(p, reduce, broadcast, channel_base));
    }
    std::vector<std::size_t> next(all.size(), 0);
    for (;;) {
      std::size_t pick = all.size();
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (next[i] == all[i].chunks.size()) continue;
        if (pick == all.size() ||
            lessDone(next[i], all[i].chunks.size(), next[pick], all[pick].chunks.size())) {
          pick = i;
        }
      }
      if (pick == all.size()) break;
      const Chain& ch = all[pick];
      const std::size_t i = next[pick]++;
      for (const Hop& h : ch.ways[(i + ch.first_way) % ch.ways.size()]) {
        transfer(h.from, h.to, h.channel, ch.chunks[i], h.route, h.reduce);
      }
    }
  }

  // What the inter-node phase moves: the pieces, or (AllReduce over double binary
  // trees with whole cuts) each port's contiguous run of pieces as one, so a run's
  // chunks stream through the trees front to back as the intra-node ReduceScatter
  // releases them (1 GiB on hgx-h100:32: 0.67 of the NIC bound instead of 0.55, in
  // half the CPU time); the runs' trees are rotated (their "home") so that their
  // roots spread over the nodes.
  std::vector<Piece> interRuns(bool allreduce) const {
    const int nodes = static_cast<int>(layout_.node_ids.size());
    if (!(allreduce && runs_)) return pieces_;
    std::vector<Piece> runs;
    for (const Piece& p : pieces_) {
      if (!runs.empty() && runs.back().owner == p.owner &&
          runs.back().range.first + runs.back().range.second == p.range.first) {
        runs.back().range.second += p.range.second;
        continue;
      }
      runs.push_back(p);
    }
    for (std::size_t i = 0; i < runs.size(); ++i) {
      runs[i].home = static_cast<int>(i * static_cast<std::size_t>(nodes) / runs.size());
    }
    return runs;
  }

  struct Hop {
    int from = 0, to = 0;  // ranks
    int route = 0;
    int channel = 0;
    bool reduce = false;
  };
  struct Chain {
    // The hops a chunk takes, in order (reductions first).
    std::vector<std::vector<Hop>> ways;
    std::size_t first_way = 0;  // chunk i takes ways[(first_way + i) % size]
    std::vector<Range> chunks;
  };

  // Whether AllReduce's inter-node phase runs double binary trees over the nodes.
  bool interTrees(int nodes) const { return nodes >= kInterTreeMinNodes; }

  // The inter-node stages a chunk passes: the chain's hops, or for double binary trees
  // twice the height of the trees (heap order: position i under (i - 1) / 2).
  int interDepth(Collective c, int nodes) const {
    if (c == Collective::AllReduce && interTrees(nodes)) {
      int height = 0;
      while ((2 << height) <= nodes) ++height;  // floor(log2(nodes))
      return 2 * height;
    }
    return (c == Collective::AllReduce ? 2 : 1) * (nodes - 1);
  }

  // Piece p among its owners. A chain, node after node from its home: a reduce chain
  // ending at the home node, then (or only) a broadcast chain starting there. For
  // AllReduce on kInterTreeMinNodes nodes or more, NCCL's double binary tree instead:
  // the piece's chunks alternate between two binary trees over the nodes (heap order
  // from the home node, and its mirror image), each reduced to its root and broadcast
  // back; a node inner in one tree is a leaf of the other, so every node sends and
  // receives as much as in the chain, at every moment, while a chunk passes
  // 2 log2(N) stages instead of 2(N - 1). Each hop has its own channel per tree, home
  // node and sending port, so the ports of one GPU (and the pieces of different
  // homes) move at once.
  Chain chain(const Piece& p, bool reduce, bool broadcast, int channel_base) {
    const int nodes = static_cast<int>(layout_.node_ids.size());
    Chain out;
    auto hop = [&](std::vector<Hop>& way, int tree, int k, int m, bool reducing) {
      const int jk = p.port[static_cast<std::size_t>(k)], jm = p.port[static_cast<std::size_t>(m)];
      Hop h;
      h.from = p.owner[static_cast<std::size_t>(k)];
      h.to = p.owner[static_cast<std::size_t>(m)];
      h.route = interRoute(k, jk, m, jm);
      h.channel =
          channel_base + 2 * ((tree * nodes + p.home) * maxPorts() + jk) + (reducing ? 0 : 1);
      h.reduce = reducing;
      way.push_back(h);
    };
    if (reduce && broadcast && interTrees(nodes)) {
      for (int tree = 0; tree < 2; ++tree) {
        auto node = [&](int i) {
          return tree == 0 ? (p.home + i) % nodes : (p.home + nodes - 1 - i) % nodes;
        };
        std::vector<Hop>& way = out.ways.emplace_back();
        for (int i = nodes - 1; i >= 1; --i) hop(way, tree, node(i), node((i - 1) / 2), true);
        for (int i = 1; i < nodes; ++i) hop(way, tree, node((i - 1) / 2), node(i), false);
      }
    } else {
      auto node = [&](int i) { return (p.home + i) % nodes; };
      std::vector<Hop>& way = out.ways.emplace_back();
      if (reduce) {
        for (int i = 1; i < nodes; ++i) hop(way, 0, node(i), node(i + 1), true);
      }
      if (broadcast) {
        for (int i = 0; i + 1 < nodes; ++i) hop(way, 0, node(i), node(i + 1), false);
      }
    }
    double latency = 0.0, gbps = std::numeric_limits<double>::infinity();
    for (const auto& way : out.ways) {
      for (const Hop& h : way) {
        const auto& route = plan_.routes[static_cast<std::size_t>(h.route)];
        latency = std::max(latency, b_.routeLatency(route));
        gbps = std::min(gbps, hopGbps(h));
      }
    }
    const std::uint64_t chunk =
        chunkFor(latency, gbps, p.range.second, runs_ ? inter_floor_ : chunk_floor_);
    // The trees take turns chunk by chunk, and piece by piece (pieces of one chunk):
    // the pieces of a home on neighbouring ports start on different trees.
    out.first_way = static_cast<std::size_t>(p.home + p.port[static_cast<std::size_t>(p.home)]);
    largest_chunk_ = std::max(largest_chunk_, chunk);
    out.chunks = b_.chunks(p.range.first, p.range.second, chunk);
    // Each hop's channel moves at the rate its route has per port (the NIC's rate
    // over the ports that share it): what the chain was sized for.
    for (std::size_t i = 0; i < out.ways.size() && i < out.chunks.size(); ++i) {
      for (const Hop& h : out.ways[(i + out.first_way) % out.ways.size()]) {
        setShare(h.channel, hopGbps(h));
      }
    }
    return out;
  }

  // The rate of hop h's route per port that shares its busier NIC.
  double hopGbps(const Hop& h) {
    const auto& route = plan_.routes[static_cast<std::size_t>(h.route)];
    return bottleneckGbps(t_, route) / std::max(share_[h.route], 1);
  }

  // ---- channel shares ----

  // Channel `channel` moves at `gbps` (the largest rate given for it).
  void setShare(int channel, double gbps) {
    if (!std::isfinite(gbps) || gbps <= 0.0) return;
    auto [it, fresh] = channel_share_.emplace(channel, gbps);
    if (!fresh) it->second = std::max(it->second, gbps);
  }

  // The channels renumbered densely (in order, so every message keeps its place among
  // those of its sender, receiver and channel), each with its share
  // (Plan::channel_shares): an intra-node tree's channel its packed rate, an
  // inter-node hop's its route's rate per port, as in the flat tree plans. Without a
  // share for some used channel (a tree packed without a rate) the plan keeps equal
  // shares.
  void assignShares() {
    std::set<int> used;
    for (const auto& rank : plan_.ranks) {
      for (const Step& s : rank.steps) {
        if (s.kind != StepKind::Copy) used.insert(s.channel);
      }
    }
    std::map<int, int> renumbered;
    std::vector<double> shares;
    bool complete = true;
    for (int c : used) {
      renumbered[c] = static_cast<int>(shares.size());
      auto it = channel_share_.find(c);
      complete = complete && it != channel_share_.end();
      shares.push_back(it != channel_share_.end() ? it->second : 1.0);
    }
    for (auto& rank : plan_.ranks) {
      for (Step& s : rank.steps) {
        if (s.kind != StepKind::Copy) s.channel = renumbered.at(s.channel);
      }
    }
    if (complete) plan_.channel_shares = std::move(shares);
  }

  // BLINK_CHUNK_BYTES, else the alpha-beta rule for `bytes` over the whole pipeline
  // (pipeline_depth_ stages) at this phase's latency and rate.
  std::uint64_t chunkFor(double latency_s, double gbps, std::uint64_t bytes) const {
    return chunkFor(latency_s, gbps, bytes, chunk_floor_);
  }
  std::uint64_t chunkFor(double latency_s, double gbps, std::uint64_t bytes,
                         std::uint64_t floor) const {
    if (options_.chunk_bytes > 0) {
      return std::max<std::uint64_t>(options_.chunk_bytes / es() * es(), es());
    }
    const std::uint64_t best =
        chooseChunkBytes(bytes, pipeline_depth_, latency_s + options_.step_overhead_us * 1e-6, gbps,
                         options_.element_size);
    return std::max(best, std::min(floor, bytes / es() * es()));
  }

  int maxPorts() const {
    std::size_t most = 1;
    for (const auto& ports : layout_.ports) most = std::max(most, ports.size());
    return static_cast<int>(most);
  }

  // How many ports of node k use the NIC of port j (at least 1).
  int nicShare(int k, int j) const {
    const auto& ports = layout_.ports[static_cast<std::size_t>(k)];
    const auto& nic = ports[static_cast<std::size_t>(j)].nic;
    if (!nic) return 1;
    int n = 0;
    for (const auto& port : ports) n += port.nic == nic ? 1 : 0;
    return std::max(n, 1);
  }

  // Port j of node k to port jm of node m: GPU -> its NIC -> network switches -> the
  // peer's NIC -> peer GPU.
  int interRoute(int k, int j, int m, int jm) {
    auto key = std::make_tuple(k, j, m, jm);
    if (auto it = inter_routes_.find(key); it != inter_routes_.end()) return it->second;
    const auto& from = layout_.ports[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)];
    const auto& to = layout_.ports[static_cast<std::size_t>(m)][static_cast<std::size_t>(jm)];
    const topo::Vertex a = *t_.findGpu(plan_.rank_gpu[from.rank]);
    const topo::Vertex z = *t_.findGpu(plan_.rank_gpu[to.rank]);
    std::vector<topo::Vertex> route;
    if (from.nic && to.nic) {
      auto first = shortestWidestRoute(t_, a, *from.nic, insideNode(t_, t_.device(a).node));
      auto middle = shortestWidestRoute(t_, *from.nic, *to.nic, [this](topo::Vertex v) {
        return t_.device(v).kind == topo::DeviceKind::NetSwitch;
      });
      auto last = shortestWidestRoute(t_, *to.nic, z, insideNode(t_, t_.device(z).node));
      if (!first.empty() && !middle.empty() && !last.empty()) {
        route = first;
        route.insert(route.end(), middle.begin() + 1, middle.end());
        route.insert(route.end(), last.begin() + 1, last.end());
      }
    }
    if (route.empty()) {
      route = shortestWidestRoute(
          t_, a, z, [this](topo::Vertex v) { return t_.device(v).kind != topo::DeviceKind::Gpu; });
    }
    if (route.empty()) {
      throw Error(blinkInvalidInput, "hierarchical: no path from " + t_.device(a).id + " to " +
                                         t_.device(z).id + " in topology " + t_.name());
    }
    const int index = b_.writer().route(route);
    inter_routes_.emplace(key, index);
    share_[index] = std::max(share_[index], std::max(nicShare(k, j), nicShare(m, jm)));
    return index;
  }

  // ---- steps ----

  int reversed(int route) {
    if (auto it = reversed_.find(route); it != reversed_.end()) return it->second;
    std::vector<topo::Vertex> r = plan_.routes[route];
    std::reverse(r.begin(), r.end());
    const int index = b_.writer().route(r);
    reversed_.emplace(route, index);
    return index;
  }

  // One message: a Send on `from` and its Recv (or RecvReduce) on `to`, each depending
  // on what its rank did earlier to the same bytes.
  void transfer(int from, int to, int channel, Range r, int route, bool reduce) {
    if (r.second == 0) return;
    std::vector<int> deps;
    tracks_[from].dependencies(r, false, deps);
    const int send =
        b_.writer().add(from, {StepKind::Send, to, channel, r.first, r.second, 0, route, deps});
    tracks_[from].record(r, false, send);
    deps.clear();
    tracks_[to].dependencies(r, true, deps);
    const int recv = b_.writer().add(to, {reduce ? StepKind::RecvReduce : StepKind::Recv, from,
                                          channel, r.first, r.second, 0, -1, deps});
    tracks_[to].record(r, true, recv);
  }

  void describe() {
    std::ostringstream out;
    out << "hierarchical: " << layout_.node_ids.size() << " nodes of";
    for (const auto& ranks : layout_.ranks) out << " " << ranks.size();
    out << " GPUs, " << pieces_.size() << " pieces";
    std::set<topo::Vertex> nics;
    std::size_t ports = 0;
    for (const auto& node : layout_.ports) {
      ports += node.size();
      for (const auto& port : node) {
        if (port.nic) nics.insert(*port.nic);
      }
    }
    out << ", " << ports << " ports on " << nics.size() << " NICs";
    plan_.notes.push_back(out.str());
    for (const auto& [k, nt] : ag_trees_) {
      if (!nt.trees.empty()) {
        plan_.notes.push_back("node " + std::to_string(layout_.node_ids[k]) + " " + nt.note + ", " +
                              intra_links_[k]);
      }
    }
    if (!root_trees_.trees.empty()) plan_.notes.push_back("root node " + root_trees_.note);
  }

  Plan& plan_;
  const topo::Topology& t_;
  const LowerOptions& options_;
  const treegen::PackOptions& pack_;
  NodeLayout layout_;
  detail::Builder b_;
  std::vector<RangeTracker> tracks_;
  std::vector<Piece> pieces_;
  std::vector<std::vector<std::size_t>> owned_;  // rank -> pieces it owns
  std::map<int, NodeTrees> ag_trees_;
  std::map<std::pair<std::string, int>, treegen::TreeSet> class_trees_;  // (class, root)
  std::map<int, std::string> intra_links_;  // node position -> which links its trees use
  NodeTrees root_trees_;
  std::map<std::tuple<int, int, int, int>, int> inter_routes_;
  std::map<int, int> share_;  // inter-node route -> ports sharing its busier NIC
  std::map<int, int> reversed_;
  std::map<int, double> channel_share_;  // channel (before renumbering) -> GB/s
  std::uint64_t largest_chunk_ = 0;
  int pipeline_depth_ = 2;
  std::size_t max_transfers_ = 0;  // HierarchicalOptions::max_transfers
  std::uint64_t chunk_floor_ = 0;  // the smallest chunk that keeps within it
  bool whole_cuts_ = false;        // nodes cut the whole buffer among their ports
  bool runs_ = false;              // AllReduce moves each port's run between nodes as one
  std::uint64_t inter_floor_ = 0;  // with runs_: the inter-node phase's smallest chunk
};

}  // namespace

Plan lowerHierarchical(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
                       int root_rank, const LowerOptions& options, const treegen::PackOptions& pack,
                       std::size_t max_transfers) {
  Plan plan = emptyPlan(collective, "blink-hierarchical", topology, bytes, options.element_size);
  plan.chunk_bytes = options.chunk_bytes;
  if (!isMultiNode(topology)) {
    throw Error(blinkInvalidArgument,
                "hierarchical plan: the GPUs of " + topology.name() + " lie on one node");
  }
  const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
  if (rooted) {
    if (root_rank < 0 || root_rank >= plan.num_ranks) {
      throw Error(blinkInvalidArgument, "hierarchical plan: root " + std::to_string(root_rank) +
                                            " is not one of the " + std::to_string(plan.num_ranks) +
                                            " ranks");
    }
    plan.root = root_rank;
  }
  if (bytes == 0) return plan;
  Composer composer(plan, topology, options, pack, max_transfers);
  composer.run(collective, rooted ? root_rank : -1);
  validateStructure(plan);
  return plan;
}

}  // namespace blink::plan
