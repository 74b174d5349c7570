// AllReduce's rail variant with few stages between nodes: recursive halving and
// doubling (Rabenseifner) per rail, chunk after chunk (the design is in
// hierarchical_composer.hpp, "recursive halving and doubling per rail").
#include <algorithm>
#include <bit>
#include <sstream>
#include <string>
#include <vector>

#include "plan/hierarchical_composer.hpp"

namespace blink::plan::detail {
namespace {

// The smallest chunk of a rail where the message budget does not ask for larger ones.
// A chunk's steps wait for each other (half, quarter, ... of it), each paying its
// route's latency (about 9 us between H100 nodes), so small chunks lose the NIC to
// latency and large ones fill and drain the intra-node phases slowly. 1 GiB on
// hgx-h100:16 / :32 (4 chunks in flight, the intra-node phases in two halves before the
// seventh pass): 2 MiB 0.84 / 0.76 of the NIC bound, 4 MiB
// 0.81 / 0.80, 8 MiB 0.75 / 0.73.
constexpr std::uint64_t kHalvingMinChunkBytes = std::uint64_t{4} << 20;

// Chunks of one rail in flight at once, each with a channel for its reduce-scatter and
// one for its allgather. On one channel pair the chunks already overlap (chunk c + 1
// takes a step while chunk c takes the next); more pairs hide the steps' latencies
// further, but chunks in flight share each NIC fairly and finish late together, the
// intra-node AllGather trailing them. 1 GiB, intra-node phases in the halving's order
// (halvingOrder, before kHalvingTailBytes and the ramp), 4 / 2 in flight: hgx-h100:8
// 0.89 / 0.88 of the NIC bound (the cluster's budget), :16 0.89 / 0.91 and :32 0.90 /
// 0.92 (four times it), :128 0.77 / 0.80 (the budget) (perf/README.md, "Seventh pass").
constexpr int kHalvingChunksInFlight = 4;
constexpr int kHalvingChunksInFlightLarge = 2;
constexpr int kHalvingLargeMinNodes = 16;

int chunksInFlight(int nodes) {
  return nodes >= kHalvingLargeMinNodes ? kHalvingChunksInFlightLarge : kHalvingChunksInFlight;
}

// The most bytes of a chunk's last blocks (those of the steps at the smallest
// distances, and the node's own segment) that the intra-node phases move as one range.
// Below it every block would be a pass of its own through the node's trees: on 128
// H100 nodes, 4 MiB chunks of 128 segments make 8 blocks of 2 MiB down to 32 KiB per
// chunk, 8.3 M steps in the plan (0.91 of the NIC bound); with the blocks below 1 MiB
// merged, 3 blocks and 3.8 M steps (0.93, with the ramp of Composer::intra). Where the
// intra-node chunks are at least this large (the ramp starts at this size) the merged
// range is dealt whole and its inner order does not matter; smaller chunks deal it
// front to back on every node, a slight asymmetry under the nodes' relabelling that
// test_node_class_simulation.cpp bounds.
constexpr std::uint64_t kHalvingTailBytes = std::uint64_t{1} << 20;

// The largest power of two not above n (n >= 1).
int powerOfTwoBelow(int n) {
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
}

// How far chunk c's positions are rotated over the nodes: by one node per chunk where
// some nodes fold (so folding rotates over them), else not at all (so each rank keeps
// log2 N peers between nodes).
int rotation(std::size_t c, int nodes) {
  if (powerOfTwoBelow(nodes) == nodes) return 0;
  return static_cast<int>(c % static_cast<std::size_t>(nodes));
}

// Segments [lo, hi) of `segments` as one byte range.
Range segmentsRange(const std::vector<Range>& segments, int lo, int hi) {
  const Range& first = segments[static_cast<std::size_t>(lo)];
  const Range& last = segments[static_cast<std::size_t>(hi - 1)];
  return {first.first, last.first + last.second - first.first};
}

}  // namespace

std::uint64_t Composer::halvingChunkBytes(int nodes) const {
  const int p = powerOfTwoBelow(nodes);
  const auto segments = static_cast<std::uint64_t>(p);
  if (options_.chunk_bytes > 0) {
    return std::max(options_.chunk_bytes / es() * es(), es()) * segments;
  }
  std::uint64_t chunk = kHalvingMinChunkBytes;
  if (max_transfers_ > 0) {
    // The message budget for the halving's own messages: every chunk of a rail makes
    // P log2 P messages each way and four per folding node, far fewer than a ring's
    // P (P - 1) each way, so a budget that held rings to one chunk per rail on 128 H100
    // nodes leaves the halving 10 (1 GiB: 12.8 MiB chunks, 0.63 of the NIC bound in
    // 3.2 CPU s; half the budget, 25.7 MiB: 0.55 in 1.9 s; four times, 4 MiB with 2 in
    // flight: 0.63 in 7.6 s).
    const double budget = static_cast<double>(max_transfers_);
    const double per_chunk =
        2.0 * p * std::countr_zero(static_cast<unsigned>(p)) + 4.0 * (nodes - p);
    const double floor = static_cast<double>(plan_.bytes) * per_chunk / budget;
    chunk = std::max(chunk, static_cast<std::uint64_t>(floor));
  }
  return std::max(chunk / segments / es() * es(), es()) * segments;
}

int Composer::halvingRank(int k, std::size_t c, int nodes) const {
  const int p = powerOfTwoBelow(nodes), folding = nodes - p;
  const int q = (k + rotation(c, nodes)) % nodes;
  return q < 2 * folding ? q / 2 : q - folding;
}

int Composer::halvingNode(int v, std::size_t c, int nodes) const {
  const int p = powerOfTwoBelow(nodes), folding = nodes - p;
  const int q = v < folding ? 2 * v + 1 : v + folding;
  return (q - rotation(c, nodes) + nodes) % nodes;
}

std::vector<Range> Composer::halvingOrder(int k, std::size_t c, Range chunk, bool up) const {
  const int nodes = static_cast<int>(layout_.node_ids.size());
  const int p = powerOfTwoBelow(nodes);
  const int v = halvingRank(k, c, nodes);
  const auto segments = evenParts(chunk, p, es());
  // The block v exchanges with its partner at distance d: the one it sends in the
  // reduce-scatter (the partner's half of what v holds) and receives in the allgather.
  auto exchanged = [&](int d) {
    const int first = (v ^ d) & ~(d - 1);
    return segmentsRange(segments, first, first + d);
  };
  // Up: the blocks in the order the reduce-scatter sends them (P/2 segments first, its
  // own segment last); down: its own segment, then the blocks as the allgather brings
  // them. Every node then sees the same pattern, its segments relabelled, which keeps
  // the plan symmetric under the nodes' relabelling (simulateOneNode).
  // The blocks of the last steps (distance below `tail`) and its own segment together
  // are the aligned block of `tail` segments around v: one range of at most
  // kHalvingTailBytes, so that their many small blocks do not each cost a pass through
  // the node's trees.
  int tail = 1;
  while (tail < p / 2 &&
         segments[0].second * static_cast<std::uint64_t>(2 * tail) <= kHalvingTailBytes) {
    tail *= 2;
  }
  const int first_of_tail = v & ~(tail - 1);
  const Range last = segmentsRange(segments, first_of_tail, first_of_tail + tail);
  std::vector<Range> order;
  if (!up) order.push_back(last);
  if (up) {
    for (int d = p / 2; d >= tail; d /= 2) order.push_back(exchanged(d));
  } else {
    for (int d = tail; d < p; d *= 2) order.push_back(exchanged(d));
  }
  if (up) order.push_back(last);
  return order;
}

void Composer::railHalving(int channel_base) {
  const int nodes = static_cast<int>(layout_.node_ids.size());
  const int rails = static_cast<int>(pieces_.size());
  const int p = powerOfTwoBelow(nodes), folding = nodes - p;
  std::vector<std::vector<Range>> chunks;
  std::size_t most = 0;
  for (const Piece& piece : pieces_) {
    chunks.push_back(railChunks(piece));
    most = std::max(most, chunks.back().size());
  }
  auto send = [&](std::size_t rail, int channel, int from, int to, Range r, bool reduce) {
    const Piece& piece = pieces_[rail];
    Hop h;
    h.from = piece.owner[static_cast<std::size_t>(from)];
    h.to = piece.owner[static_cast<std::size_t>(to)];
    h.route = interRoute(from, piece.port[static_cast<std::size_t>(from)], to,
                         piece.port[static_cast<std::size_t>(to)]);
    transfer(h.from, h.to, channel, r, h.route, reduce);
    setShare(channel, hopGbps(h));
    largest_chunk_ = std::max(largest_chunk_, r.second);
  };
  std::vector<std::vector<Range>> segments(pieces_.size());
  for (std::size_t c = 0; c < most; ++c) {
    const int group = static_cast<int>(c % static_cast<std::size_t>(chunksInFlight(nodes)));
    // The reduce-scatter and the allgather on channels of their own: a message waits
    // for the one before it on its (peer, channel) lane, and the two halves use the
    // same partners, so on shared channels a chunk's reduce-scatter would wait for the
    // allgather of the chunk before it (no pipelining at all).
    auto channel = [&](std::size_t rail, bool gather) {
      return channel_base + (2 * group + (gather ? 1 : 0)) * rails + static_cast<int>(rail);
    };
    auto node = [&](int v) { return halvingNode(v, c, nodes); };
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      segments[i] = c < chunks[i].size() ? evenParts(chunks[i][c], p, es()) : std::vector<Range>{};
    }
    // Folding in: position 2j hands its chunk to virtual rank j (position 2j + 1), the
    // half that rank sends first, first; folding out: j gives 2j the result, the half
    // it kept first.
    auto fold = [&](bool in) {
      for (int j = 0; j < folding; ++j) {
        const int partner = node(j), folder = (partner + nodes - 1) % nodes;
        for (std::size_t i = 0; i < pieces_.size(); ++i) {
          if (segments[i].empty()) continue;
          for (const Range& r : halvingOrder(partner, c, chunks[i][c], in)) {
            send(i, channel(i, !in), in ? folder : partner, in ? partner : folder, r, in);
          }
        }
      }
    };
    // At distance d a virtual rank v holds the aligned block of 2d segments around
    // segment v (reduce-scatter; d from P/2 down) or of d segments (allgather; d from
    // 1 up). Reduce-scatter by recursive halving: v sends its partner v ^ d the half the
    // partner keeps (its aligned block of d) and reduces its own half. Allgather by
    // recursive doubling: v sends its block of d to v ^ d.
    auto exchange = [&](int d, bool gather) {
      for (std::size_t i = 0; i < pieces_.size(); ++i) {
        if (segments[i].empty()) continue;
        for (int v = 0; v < p; ++v) {
          const int first = (gather ? v : v ^ d) & ~(d - 1);
          send(i, channel(i, gather), node(v), node(v ^ d),
               segmentsRange(segments[i], first, first + d), !gather);
        }
      }
    };
    fold(true);
    for (int d = p / 2; d >= 1; d /= 2) exchange(d, false);
    for (int d = 1; d < p; d *= 2) exchange(d, true);
    fold(false);
  }
  std::ostringstream note;
  note << "between nodes: recursive halving and doubling per rail (" << rails
       << " rails), chunks of " << rail_chunk_ << " bytes in " << p << " segments";
  if (folding > 0) note << ", " << folding << " nodes folding in";
  note << ", " << chunksInFlight(nodes) << " chunks in flight";
  plan_.notes.push_back(note.str());
}

}  // namespace blink::plan::detail
