// The Plan IR: for every rank, an ordered list of chunked steps (send, receive,
// receive-and-reduce, local copy) over byte ranges of one working buffer, with
// dependencies. Trees (and the ring / double-binary-tree baselines) are lowered
// into it; the symbolic executor proves a plan right, the simulator times it on a
// topology, and the runtime executes it.
//
// Semantics (shared by every consumer):
// - Rank r runs on the topology's GPU `rank_gpu[r]`. Every rank holds one working
//   buffer of `bytes` bytes; all ranges are byte ranges of it. Its initial content
//   is the rank's input (for AllGather: the rank's segment holds its input, the
//   rest is undefined; for Broadcast only the root's buffer is defined).
// - Segments: AllGather, ReduceScatter (and AllReduce done as ReduceScatter +
//   AllGather) split the buffer into num_ranks segments of whole elements, as
//   equal as possible (the first bytes/element_size % num_ranks segments hold one
//   element more); segment r belongs to rank r. See segmentOffset/segmentBytes.
// - Messages: the k-th Send in rank a's list to peer b on channel c matches the
//   k-th Recv/RecvReduce in rank b's list from peer a on channel c (matching is by
//   position in the lists, whatever order steps run in); both name the same range.
//   A Send reads its range when it starts; a Recv writes it, a RecvReduce combines
//   the incoming data into it (buffer = op(buffer, incoming)).
// - A step may start once every step in its `deps` (indices into the same rank's
//   list, all smaller than its own index) has completed. Steps without a
//   dependency between them may run concurrently, in any order.
// - The result: Broadcast: every buffer equals the root's input. Reduce: the root's
//   buffer is the reduction of all inputs. AllGather: every buffer holds every
//   segment. ReduceScatter: rank r's segment r is the reduction of every rank's
//   segment r. AllReduce: every buffer is the reduction of all inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace blink::plan {

enum class Collective { Broadcast, Reduce, AllGather, ReduceScatter, AllReduce };
std::string toString(Collective c);

enum class StepKind { Send, Recv, RecvReduce, Copy };
std::string toString(StepKind k);

struct Step {
  StepKind kind = StepKind::Send;
  int peer = -1;    // the other rank (Send/Recv/RecvReduce); -1 for Copy
  int channel = 0;  // message ordering is per (sender, receiver, channel)
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t source_offset = 0;  // Copy only: copies [source_offset, +bytes) to offset
  int route = -1;  // Send only: index into Plan::routes (the links the data crosses)
  std::vector<int> deps;
};

struct RankProgram {
  std::vector<Step> steps;
};

struct Plan {
  Collective collective = Collective::Broadcast;
  std::string algorithm;  // "blink-trees", "ring", "double-binary-tree", ...
  std::string topology;   // the topology's name
  int num_ranks = 0;
  int root = -1;  // a rank, for Broadcast/Reduce (and single-root AllReduce shapes)
  std::uint64_t bytes = 0;
  std::uint64_t chunk_bytes = 0;
  int element_size = 1;       // ranges are multiples of it (reductions never split an element)
  std::vector<int> rank_gpu;  // gpu_index of each rank
  // Each route is the list of topology vertices a message crosses, endpoints included.
  std::vector<std::vector<topo::Vertex>> routes;
  std::vector<RankProgram> ranks;
  // Rate share of each channel (index: Step::channel), in GB/s; empty: every channel
  // has the same share. Where messages of several channels cross one link at the same
  // time, the link is divided among them in proportion to their channels' shares (and
  // a channel with the link to itself uses all of it). Tree plans give each tree's
  // channel the rate it was packed with: the packing fits every link, so each tree
  // then moves at least its packed rate and all finish together, where equal shares
  // would slow the heavier trees down on the links they share with lighter ones.
  // A requirement on the runtime, not a hint: the simulator's prediction assumes it,
  // and the executor/transports must pace the channels of one link by these shares.
  std::vector<double> channel_shares;
  std::vector<std::string> notes;  // how the plan was chosen and built

  // The share of `channel` (1 when the plan has none: equal shares).
  double channelShare(int channel) const;

  std::uint64_t segmentOffset(int rank) const;
  std::uint64_t segmentBytes(int rank) const;
  std::size_t numSteps() const;
  // A stable 64-bit hash of everything above except notes: equal plans on every rank.
  std::uint64_t hash() const;
};

// Throws blink::Error(blinkInternalError) describing the first structural problem:
// a peer or route out of range, a range outside the buffer or not element-aligned,
// a dependency that does not point backwards, a Send without a route, channel
// shares that are not positive and finite or miss a channel some step uses.
void validateStructure(const Plan& plan);

}  // namespace blink::plan
