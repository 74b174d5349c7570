// The hierarchical (intra-node + inter-node) composition of plans for topologies
// whose GPUs lie on more than one node (Device::node), after the Blink paper's
// multi-server design: trees packed inside each node, an inter-node phase in which
// every local GPU's share crosses the network on its own NIC, all at once.
//
// Ownership. The buffer is cut into blocks, each with a home node:
// - AllReduce: N near-equal blocks, block m homed on node m (N = nodes with GPUs);
//   from 32 nodes on, V stripes (V the most ports any node has), each cut so;
// - Broadcast / Reduce: one block, homed on the root's node;
// - AllGather / ReduceScatter: one block per rank (its segment, Plan::segmentOffset),
//   homed on the rank's node and owned there by the rank itself (from 64 nodes: by
//   the ports of the whole cut, like every other node).
// Every node k cuts every block (AllReduce from 32 nodes: the whole buffer) into V_k near-equal
// contiguous parts, V_k its ports (NodeLayout: one per GPU, more where NICs outnumber
// GPUs), part j owned by its j-th port (except where the rank itself owns its segment
// on its home node). The common refinement of these cuts gives the pieces: a piece
// has exactly one owner on every node, whatever the nodes' GPU counts, and each port
// owns about 1/V_k of every home's bytes, so the inter-node traffic of a node is
// spread evenly over its GPUs and NICs. With equal counts the pieces are the slices of
// each block and the owners of a piece share their local index; for AllReduce from 32
// nodes a port's pieces are then one contiguous run, which the intra-node trees move in
// chunks spanning pieces, so their messages do not grow with N.
//
// Phases (per collective; P1 and P3 inside each node over trees packed on the node's
// own sub-topology, P2 between the owners of each piece):
// - AllReduce: P1 ReduceScatter to the owners; P2 for each piece a chain reduce
//   along the nodes ending at the home node, then a chain broadcast from it (the
//   ring AllReduce, piece by piece: each node sends 2(N-1)/N of the buffer), or from
//   16 nodes on NCCL's double binary tree over the nodes (chunks alternate between
//   two binary trees, a node inner in one a leaf of the other: the same traffic per
//   node in 2 log2(N) stages instead of 2(N-1); from 32 nodes, where each port owns
//   one contiguous run, the run crosses the trees as one piece, its chunks front to
//   back as the ReduceScatter releases them, the runs' trees rotated over the nodes;
//   perf/README.md: how the pipeline's filling and draining, more than this depth,
//   keeps large clusters below the NIC bound); P3 AllGather from the owners.
// - Broadcast: P1 broadcast on the root's node; P2 chain broadcast of each piece from
//   its owner there; P3 AllGather from the owners on every other node.
// - Reduce: P1 ReduceScatter to the owners on every node but the root's; P2 chain
//   reduce of each piece to its owner on the root's node; P3 reduce to the root.
// - AllGather: P1 AllGather of the node's own segments; P2 chain broadcast of each
//   piece from its home rank; P3 AllGather of the pieces received. From 64 nodes the
//   ports cut the whole buffer, the home node's too: the pieces of one home and port
//   cross the nodes as one run, broadcast over two binary trees rooted at the home
//   (nodes at an even distance from it inner in one, at an odd distance in the other).
// - ReduceScatter: P1 ReduceScatter of the pieces homed elsewhere; P2 chain reduce of
//   each piece to its home rank (from 64 nodes: runs reduced over the two trees to
//   the home's port); P3 ReduceScatter of the node's own segments.
//
// Routes of P2: from a GPU to the NIC of the owning port (fewest hops, widest among
// them), across the network switches to the peer port's NIC, and to the peer GPU; a
// node without a reachable NIC falls back to the widest shortest path. The trees of
// P1/P3 are packed without the links those routes use inside the node (on NVLink
// machines: NVLink only) when the node's GPUs stay connected without them, else over
// all the node's links.
//
// Pipelining: every step's dependencies are derived from the byte ranges it reads and
// writes on its rank (read after write, write after read or write), in the order the
// phases are written, so each chunk of a phase starts as soon as the chunks of the
// previous phase it overlaps are done; nothing waits for a whole phase.
//
// Channels and their shares (Plan::channel_shares, one per channel used, the channels
// numbered densely), as in the flat tree plans: each P1/P3 tree's channel gets the
// tree's packed rate; the root node's broadcast trees (Broadcast P1, Reduce P3: one
// root's trees alone) get LowerOptions::channels_per_tree staggered channels each,
// with an equal part of the rate; each P2 channel gets the rate of its route per port
// sharing the busier NIC (what the chain's chunks were sized for). The planner keeps
// the same plan with equal shares where that simulates faster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plan/lower_trees.hpp"
#include "plan/node_layout.hpp"
#include "plan/plan.hpp"
#include "topology/topology.hpp"
#include "treegen/treegen.hpp"

namespace blink::plan {

// About how many messages (Send/receive pairs) a hierarchical plan may have before its
// chunks grow: every message is an event of the simulator and steps of the runtime,
// and the alpha-beta rule picks chunks far smaller than its optimum needs on large
// clusters (dgx1-v100:4, AllReduce of 1 GiB: 32619 us predicted with the rule's
// chunks, 33116 us with 1 MiB ones, in an eighth of the planning time). Where the
// rule's chunks would make more, chunks are at least the bytes all messages move
// together over this count (never past LowerOptions::chunk_bytes when that is set).
inline constexpr std::size_t kHierarchicalMaxTransfers = 150000;

// The hierarchical plan (algorithm "blink-hierarchical") of `collective` over every
// GPU of `topology`; root_rank for Broadcast/Reduce. Nodes built alike (same devices
// and links) are one class whose trees are packed once. max_transfers: see
// kHierarchicalMaxTransfers (0: the chunk rule alone). Throws blinkInvalidArgument for
// a topology whose GPUs lie on one node, a bad root or a buffer that is not whole
// elements; packing errors of a node's sub-topology propagate.
Plan lowerHierarchical(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
                       int root_rank, const LowerOptions& options,
                       const treegen::PackOptions& pack = {},
                       std::size_t max_transfers = kHierarchicalMaxTransfers);

// AllReduce's rail variant of the hierarchical plan (also "blink-hierarchical": the
// same intra-node trees, another inter-node phase): a pipelined ring AllReduce per
// rail (the owners of one part of the buffer, one per node, each on its own NIC),
// chunk after chunk, each chunk cut into one segment per node; the intra-node
// ReduceScatter and AllGather move each chunk in the order its ring takes and gives
// its segments on that node, so every NIC is busy from the first segment and a chunk
// drains in about two chunk times whatever the node count (NCCL's ring across rails).
// The planner keeps whichever of the two is predicted faster. Same errors as
// lowerHierarchical.
Plan lowerRailRings(const topo::Topology& topology, std::uint64_t bytes,
                    const LowerOptions& options, const treegen::PackOptions& pack = {},
                    std::size_t max_transfers = kHierarchicalMaxTransfers);

// AllReduce's rail variant with few stages between nodes (also "blink-hierarchical"):
// each chunk of a rail crosses the rail's owners as a Rabenseifner AllReduce, a
// reduce-scatter by recursive halving then an allgather by recursive doubling (the
// same bytes per node as the ring, 2 log2 N stages instead of 2(N - 1); where N is not
// a power of two, the nodes beyond the largest power fold their chunk into a
// neighbour first, rotating over the chunks). The intra-node phases feed and drain
// each chunk in the order its halving takes and gives it (the block each step sends,
// half first; the blocks of the last steps below 1 MiB as one range), in chunks that
// ramp up from 1 MiB at the pipeline's start and down to it at its end. On a power of
// two of identical nodes the plan is symmetric under relabelling the nodes, so
// simulateOneNode predicts it from one node (node_class_simulation.hpp).
// Same errors as lowerHierarchical.
Plan lowerRailHalving(const topo::Topology& topology, std::uint64_t bytes,
                      const LowerOptions& options, const treegen::PackOptions& pack = {},
                      std::size_t max_transfers = kHierarchicalMaxTransfers);

}  // namespace blink::plan
