// The hierarchical plan's composer (internal to hierarchical*.cpp; the design is in
// hierarchical.hpp). One class whose members are defined in five files along the
// phases: hierarchical.cpp (ownership, chunk sizes, channels and steps),
// hierarchical_intra.cpp (node classes, their trees, the intra-node phases),
// hierarchical_inter.cpp (the inter-node phase: chains, double binary trees, routes),
// hierarchical_rail.cpp (AllReduce's rail variants: their chunks and intra-node phases,
// a pipelined ring per rail) and hierarchical_rail_halving.cpp (recursive halving and
// doubling per rail).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "plan/hierarchical.hpp"
#include "plan/lower_trees.hpp"
#include "plan/node_layout.hpp"
#include "plan/plan_writer.hpp"
#include "plan/range_tracker.hpp"
#include "plan/tree_builder.hpp"

namespace blink::plan::detail {

using Range = ByteRange;

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

// a_done / a_total < b_done / b_total (totals positive).
inline bool lessDone(std::uint64_t a_done, std::uint64_t a_total, std::uint64_t b_done,
                     std::uint64_t b_total) {
  return static_cast<double>(a_done) * static_cast<double>(b_total) <
         static_cast<double>(b_done) * static_cast<double>(a_total);
}

// AllReduce's inter-node phase between the owners of each rail (hierarchical.hpp):
// none (chains or double binary trees over the pieces), a pipelined ring per rail, or
// recursive halving and doubling per rail.
enum class RailKind { None, Rings, Halving };

struct NodeTrees {
  std::vector<detail::LoweredTree> trees;
  std::map<int, std::vector<std::size_t>> by_root;  // rank -> indices into trees
  std::string note;
};
class Composer {
 public:
  Composer(Plan& plan, const topo::Topology& t, const LowerOptions& options,
           const treegen::PackOptions& pack, std::size_t max_transfers,
           RailKind rail = RailKind::None)
      : plan_(plan),
        t_(t),
        options_(options),
        pack_(pack),
        layout_(nodeLayout(t)),
        b_(plan, t, options),
        tracks_(static_cast<std::size_t>(plan.num_ranks), RangeTracker(plan.bytes)),
        max_transfers_(max_transfers),
        rail_(rail) {}

  void run(Collective c, int root_rank);

 private:
  static constexpr int kPhase = 1024;
  // The first chunk of a ramp (intra()).
  static constexpr std::uint64_t kRampFirstChunkBytes = std::uint64_t{1} << 20;
  static constexpr double kRampGrowth = 0.1;
  // From this many nodes on, AllReduce's inter-node phase runs double binary trees
  // (1 GiB on hgx-h100: below, the ring chain predicts faster, 241 against 237 GB/s
  // on 3 nodes, 191 against 183 on 8; 152 against 148 on 16).
  static constexpr int kInterTreeMinNodes = 16;
  // From this many nodes on, AllReduce's ports own contiguous runs (whole cuts):
  // 1 GiB on hgx-h100:32, 328704 steps instead of 522240, 0.55 of the NIC bound
  // instead of 0.57; below, the pieces' own chunks predict faster (hgx-h100:8: 191
  // against 182 GB/s).
  static constexpr int kWholeCutsMinNodes = 32;
  // From this many nodes on, AllGather and ReduceScatter cut the whole buffer too,
  // their runs crossing the nodes over binary trees. 1 GiB AllGather: hgx-h100:128
  // plans and simulates in 6 CPU s with 413376 steps (0.30 of the NIC bound), where
  // a piece of every segment per port made about 17 M steps (stopped past 300 s);
  // on hgx-h100:32 the pieces per port predict 0.50 against 0.48 for the runs (at
  // 1047616 steps against 308736, 2.6 against 1.1 CPU s), so they stay below.
  static constexpr int kGatherWholeCutsMinNodes = 64;

  std::uint64_t es() const { return static_cast<std::uint64_t>(options_.element_size); }
  int localCount(int k) const { return static_cast<int>(layout_.ranks[k].size()); }

  // Pieces: the common refinement of every node's cut of every block.
  void buildPieces(const std::vector<Block>& blocks);

  // ---- intra-node phases ----

  const NodeTrees& allGatherTrees(int k);

  NodeTrees broadcastTrees(int k, int root_rank);

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

  static ClassTopology classTopology(const NodeTopology& node);

  // The trees of a class (root: a class gpu_index, -1 for AllGather), packed on its
  // first node and kept for the others.
  const treegen::TreeSet& classTrees(const ClassTopology& c, int root_local);

  // A class's trees on one node of it: its vertices and GPUs.
  static treegen::TreeSet onNode(treegen::TreeSet set, const ClassTopology& c);

  // Node k's links for its trees: without the hops of its ports' routes to their NICs
  // (so the trees leave the PCIe lanes to the network) when its GPUs stay connected
  // without them, else all of them.
  NodeTopology intraTopology(int k);

  NodeTrees lowered(const treegen::TreeSet& set);

  // Node k: what each local rank owns among the pieces `which` accepts, over the node's
  // allgather trees rooted at it: up (reduced to the owner) or down (from it).
  void intraOwned(int k, const std::function<bool(const Piece&)>& which, bool up, int channel_base);

  // Node k: each local rank's own segment (block r: the pieces of it) over the
  // allgather trees rooted at it.
  void intraSegments(int k, bool up, int channel_base);

  // The root's node: the whole buffer (every piece) over the node's broadcast trees
  // from the root, on options.channels_per_tree channels each.
  void intraWhole(int k, int root_rank, bool up, int channel_base);

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
  // in_order: the ranges are dealt one after the other, in the order given (the rail
  // rings' order), instead of advancing together.
  // ramp: the chunks grow from kRampFirstChunkBytes by a tenth of what each root has
  // dealt (up: the pipeline fills from small chunks) and shrink likewise to the end
  // (down: it drains small ones), never past their own size. The phases' first and last
  // chunks decide how long the inter-node phase waits for its first bytes and the last
  // ones wait for the AllGather; the chunks between are as large as the message budget
  // asks. 1 GiB AllReduce, recursive halving per rail (four times the budget): on 128
  // H100 nodes 0.93 of the NIC bound with the ramp, 0.90 with 1 MiB chunks throughout
  // (4.6 M steps instead of 3.8 M), 0.86 with 2 MiB (2.8 M).
  void intra(const NodeTrees& nt, const std::map<int, std::vector<Range>>& ranges, bool up,
             int channel_base, int channels_per_tree = 1, bool in_order = false, bool ramp = false);

  void treePass(const detail::LoweredTree& tree, int channel, Range c, bool up);

  // ---- the inter-node phase ----

  // Every piece's chains, their chunks interleaved over the pieces (least done first),
  // as the intra-node phases produce and consume them.
  void chains(bool reduce, bool broadcast, int channel_base);

  // What the inter-node phase moves: the pieces, or (AllReduce over double binary
  // trees with whole cuts) each port's contiguous run of pieces as one, so a run's
  // chunks stream through the trees front to back as the intra-node ReduceScatter
  // releases them (1 GiB on hgx-h100:32: 0.67 of the NIC bound instead of 0.55, in
  // half the CPU time); the runs' trees are rotated (their "home") so that their
  // roots spread over the nodes.
  std::vector<Piece> interRuns(bool allreduce) const;

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
  int interDepth(Collective c, int nodes) const;

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
  Chain chain(const Piece& p, bool reduce, bool broadcast, int channel_base);

  // The rate of hop h's route per port that shares its busier NIC.
  double hopGbps(const Hop& h);

  // ---- AllReduce's rail variant (hierarchical_rail.cpp) ----
  //
  // Every node cuts the whole buffer among its ports (whole cuts); the common
  // refinement of the cuts gives the rails (pieces: one owner per node; on identical
  // nodes one per port, a stripe of the buffer). Each rail is cut into ring chunks,
  // each chunk into N segments, and the chunk crosses the nodes in a ring AllReduce
  // over the rail's owners (node k sends to node k - 1: reduce-scatter then
  // all-gather, 2(N - 1) steps of one segment), so every NIC carries one send and one
  // receive per rail at a time from the first segment on, and a chunk drains after
  // 2(N - 1) segment times, about two chunk times however many nodes there are. The
  // intra-node phases move each owner's chunks in the order the ring takes and gives
  // its segments on that node (from segment k + 1 for the reduction, from k for the
  // gather), so the ring is fed from its first step.

  // The bytes of one chunk of a rail (rings: N segments; halving: 2^floor(log2 N)).
  std::uint64_t railChunkBytes(int nodes) const;

  // The chunks of rail p.
  std::vector<Range> railChunks(const Piece& p) const;

  // Node k: each owner's rails over the node's allgather trees, chunk after chunk, each
  // chunk's parts in the order the inter-node phase takes (up) or gives (down) them on
  // node k.
  void railIntra(int k, bool up, int channel_base);

  // Chunk c (the c-th of its rail) of `chunk` on node k as railIntra moves it: its
  // parts in the order the rail's ring or halving takes them (up) or gives them.
  std::vector<Range> railOrder(int k, std::size_t c, Range chunk, bool up) const;

  // The rings of every rail, chunk after chunk.
  void railRings(int channel_base);

  // ---- recursive halving and doubling per rail (hierarchical_rail_halving.cpp) ----
  //
  // Each chunk of a rail is cut into P = 2^floor(log2 N) segments and crosses the nodes
  // as a Rabenseifner AllReduce over the rail's owners: a reduce-scatter by recursive
  // halving (log2 P steps, the partner at distance P/2 first: half the chunk, then a
  // quarter, ... until each of P nodes holds one segment reduced) and an allgather by
  // recursive doubling (the mirror), so a chunk passes 2 log2 P stages instead of the
  // ring's 2(N - 1) at the same bytes per node. Where N is not a power of two, r = N - P
  // nodes first fold their chunk into a neighbour (positions 2i into 2i + 1, i < r) and
  // get the result back from it at the end; the positions rotate by one node per chunk,
  // so every node folds or receives folds equally often over the chunks and the NICs
  // stay balanced (on average 2(N - 1)/N of the rail per node, as the ring). On a power
  // of two there is no rotation: each rank keeps its log2 N partners.

  // Chunk c's virtual rank of node k in the halving (where k folds, its partner's).
  int halvingRank(int k, std::size_t c, int nodes) const;

  // The node of virtual rank v in chunk c.
  int halvingNode(int v, std::size_t c, int nodes) const;

  // The bytes of one halving chunk of a rail (P segments).
  std::uint64_t halvingChunkBytes(int nodes) const;

  // railOrder for the halving: up, the blocks node k's virtual rank sends, in the order
  // of the reduce-scatter's steps (half, quarter, ...), then its own segment; down, its
  // own segment, then the blocks in the order the allgather brings them.
  std::vector<Range> halvingOrder(int k, std::size_t c, Range chunk, bool up) const;

  // The halving and doubling of every rail, chunk after chunk.
  void railHalving(int channel_base);

  // ---- channel shares ----

  // Channel `channel` moves at `gbps` (the largest rate given for it).
  void setShare(int channel, double gbps);

  // The channels renumbered densely (in order, so every message keeps its place among
  // those of its sender, receiver and channel), each with its share
  // (Plan::channel_shares): an intra-node tree's channel its packed rate, an
  // inter-node hop's its route's rate per port, as in the flat tree plans. Without a
  // share for some used channel (a tree packed without a rate) the plan keeps equal
  // shares.
  void assignShares();

  // BLINK_CHUNK_BYTES, else the alpha-beta rule for `bytes` over the whole pipeline
  // (pipeline_depth_ stages) at this phase's latency and rate.
  std::uint64_t chunkFor(double latency_s, double gbps, std::uint64_t bytes) const;
  std::uint64_t chunkFor(double latency_s, double gbps, std::uint64_t bytes,
                         std::uint64_t floor) const;

  int maxPorts() const;

  // How many ports of node k use the NIC of port j (at least 1).
  int nicShare(int k, int j) const;

  // Port j of node k to port jm of node m: GPU -> its NIC -> network switches -> the
  // peer's NIC -> peer GPU.
  int interRoute(int k, int j, int m, int jm);

  // ---- steps ----

  int reversed(int route);

  // One message: a Send on `from` and its Recv (or RecvReduce) on `to`, each depending
  // on what its rank did earlier to the same bytes.
  void transfer(int from, int to, int channel, Range r, int route, bool reduce);

  void describe();

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
  std::map<int, double> route_gbps_;     // hopGbps per inter-node route
  std::map<int, double> channel_share_;  // channel (before renumbering) -> GB/s
  std::uint64_t largest_chunk_ = 0;
  int pipeline_depth_ = 2;
  std::size_t max_transfers_ = 0;   // HierarchicalOptions::max_transfers
  std::uint64_t chunk_floor_ = 0;   // the smallest chunk that keeps within it
  bool whole_cuts_ = false;         // nodes cut the whole buffer among their ports
  bool one_way_trees_ = false;      // AllGather/ReduceScatter: pieces over two binary trees
  bool runs_ = false;               // AllReduce moves each port's run between nodes as one
  std::uint64_t inter_floor_ = 0;   // runs_ or one_way_trees_: the inter-node smallest chunk
  RailKind rail_ = RailKind::None;  // AllReduce: the rail variant between nodes, if any
  std::uint64_t rail_chunk_ = 0;    // rail variants: the bytes of one chunk of a rail
};

}  // namespace blink::plan::detail
