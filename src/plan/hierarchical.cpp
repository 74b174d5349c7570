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
#include "plan/hierarchical_composer.hpp"

namespace blink::plan {
namespace detail {

void Composer::run(Collective c, int root_rank) {
  const int nodes = static_cast<int>(layout_.node_ids.size());
  const std::uint64_t es = this->es();
  const int root_node = root_rank >= 0 ? layout_.node_of_rank[root_rank] : -1;
  std::vector<Block> blocks;
  switch (c) {
    case Collective::AllReduce: {
      if (rail_ != RailKind::None) {
        // One block: the rings (and the halving) rotate their segments' homes over the nodes
        // themselves.
        whole_cuts_ = true;
        blocks.push_back({{0, plan_.bytes}, 0, -1});
        break;
      }
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
      // From kGatherWholeCutsMinNodes nodes on, each node cuts the whole buffer among
      // its ports, its own segments too (so each port's pieces form a few contiguous
      // runs, which the intra-node trees move in chunks spanning segments, and its
      // runs of one home cross the nodes as one), over two binary trees from their
      // home instead of a chain (see chain()).
      whole_cuts_ = nodes >= kGatherWholeCutsMinNodes;
      one_way_trees_ = whole_cuts_;
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
  // A rail ring (or halving and doubling) drains a chunk in about two chunk times
  // (2(N - 1) segments of 1/N; halves, quarters, ... and back).
  pipeline_depth_ = (rail_ != RailKind::None ? 2 : interDepth(c, nodes)) + 2 * intra_depth;
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
    // AllGather/ReduceScatter runs over binary trees get a quarter of it (3.6 MiB at
    // 128 H100 nodes: 0.30 of the bound in 6 CPU s; 1.8 MiB: 0.34 in 10 s, 0.9 MiB:
    // 0.39 in 51 s, the simulator's rate updates growing with the flows in flight).
    if (runs_ || one_way_trees_) {
      const double budget = static_cast<double>(max_transfers_) / (runs_ ? 2.0 : 4.0);
      inter_floor_ =
          static_cast<std::uint64_t>(static_cast<double>(plan_.bytes) * chain_hops / budget) / es *
          es;
    }
  }

  // Channels: P1 on [0, kPhase), P3 on [kPhase, 2 kPhase), P2 from 2 kPhase: two per
  // home node (reduce chain, broadcast chain). Intra-node and inter-node messages
  // never share a (sender, receiver) pair anyway.
  const int p1 = 0, p3 = kPhase, p2 = 2 * kPhase;
  auto everyPiece = [](const Piece&) { return true; };
  switch (c) {
    case Collective::AllReduce:
      if (rail_ != RailKind::None) {
        rail_chunk_ = railChunkBytes(nodes);
        for (int k = 0; k < nodes; ++k) railIntra(k, true, p1);
        if (rail_ == RailKind::Rings) {
          railRings(p2);
        } else {
          railHalving(p2);
        }
        for (int k = 0; k < nodes; ++k) railIntra(k, false, p3);
        break;
      }
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

void Composer::buildPieces(const std::vector<Block>& blocks) {
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
        // With whole cuts every port shares it on its home node too: P1 first gathers
        // (or P3 reduces) the node's own segments on every local rank, so the pieces a
        // port sends out (or receives) are contiguous runs of the home's segments.
        if (k != block.home || block.home_rank < 0 || whole_cuts_ ||
            ports[j].rank == block.home_rank) {
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

void Composer::setShare(int channel, double gbps) {
  if (!std::isfinite(gbps) || gbps <= 0.0) return;
  auto [it, fresh] = channel_share_.emplace(channel, gbps);
  if (!fresh) it->second = std::max(it->second, gbps);
}

void Composer::assignShares() {
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

std::uint64_t Composer::chunkFor(double latency_s, double gbps, std::uint64_t bytes) const {
  return chunkFor(latency_s, gbps, bytes, chunk_floor_);
}

std::uint64_t Composer::chunkFor(double latency_s, double gbps, std::uint64_t bytes,
                                 std::uint64_t floor) const {
  if (options_.chunk_bytes > 0) {
    return std::max<std::uint64_t>(options_.chunk_bytes / es() * es(), es());
  }
  const std::uint64_t best =
      chooseChunkBytes(bytes, pipeline_depth_, latency_s + options_.step_overhead_us * 1e-6, gbps,
                       options_.element_size);
  return std::max(best, std::min(floor, bytes / es() * es()));
}

int Composer::reversed(int route) {
  if (auto it = reversed_.find(route); it != reversed_.end()) return it->second;
  std::vector<topo::Vertex> r = plan_.routes[route];
  std::reverse(r.begin(), r.end());
  const int index = b_.writer().route(r);
  reversed_.emplace(route, index);
  return index;
}

void Composer::transfer(int from, int to, int channel, Range r, int route, bool reduce) {
  if (r.second == 0) return;
  // The steps' indices are known before they are added (PlanWriter::add appends), so
  // each rank's ranges are split and walked once.
  std::vector<int> deps;
  const auto next = [this](int rank) {
    return static_cast<int>(plan_.ranks[static_cast<std::size_t>(rank)].steps.size());
  };
  tracks_[from].dependOnAndRecord(r, false, next(from), deps);
  b_.writer().add(from, {StepKind::Send, to, channel, r.first, r.second, 0, route, deps});
  deps.clear();
  tracks_[to].dependOnAndRecord(r, true, next(to), deps);
  b_.writer().add(to, {reduce ? StepKind::RecvReduce : StepKind::Recv, from, channel, r.first,
                       r.second, 0, -1, std::move(deps)});
}

void Composer::describe() {
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

}  // namespace detail

namespace {

Plan compose(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
             int root_rank, const LowerOptions& options, const treegen::PackOptions& pack,
             std::size_t max_transfers, detail::RailKind rail) {
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
  detail::Composer composer(plan, topology, options, pack, max_transfers, rail);
  composer.run(collective, rooted ? root_rank : -1);
  validateStructure(plan);
  return plan;
}

}  // namespace

Plan lowerHierarchical(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
                       int root_rank, const LowerOptions& options, const treegen::PackOptions& pack,
                       std::size_t max_transfers) {
  return compose(collective, topology, bytes, root_rank, options, pack, max_transfers,
                 detail::RailKind::None);
}

Plan lowerRailRings(const topo::Topology& topology, std::uint64_t bytes,
                    const LowerOptions& options, const treegen::PackOptions& pack,
                    std::size_t max_transfers) {
  return compose(Collective::AllReduce, topology, bytes, -1, options, pack, max_transfers,
                 detail::RailKind::Rings);
}

Plan lowerRailHalving(const topo::Topology& topology, std::uint64_t bytes,
                      const LowerOptions& options, const treegen::PackOptions& pack,
                      std::size_t max_transfers) {
  return compose(Collective::AllReduce, topology, bytes, -1, options, pack, max_transfers,
                 detail::RailKind::Halving);
}

}  // namespace blink::plan
