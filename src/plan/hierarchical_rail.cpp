// AllReduce's rail variants of the hierarchical plan: their chunks and intra-node phases
// (fed and drained in the order the inter-node phase takes and gives each chunk), and
// the pipelined ring AllReduce per rail (the design is in hierarchical_composer.hpp,
// "AllReduce's rail variant"; the halving is in hierarchical_rail_halving.cpp).
#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "plan/hierarchical_composer.hpp"

namespace blink::plan::detail {
namespace {

// The smallest ring segment where the message budget does not ask for larger ones: a
// segment is one step of the ring, and its route's latency (about 9 us between H100
// nodes: 1 us per PCIe hop, 2 per network hop, 1 of step overhead) weighs against its
// bytes (1 MiB: 21 us on a 50 GB/s NIC). 1 GiB on hgx-h100:16 / :32, with
// kRailChunksInFlight chunks in flight: 256 KiB segments and 12 chunks 0.80 / 0.68 of
// the NIC bound, 1 MiB and 6 chunks 0.79 / 0.70 with 27% / 8% fewer steps.
constexpr std::uint64_t kRailMinSegmentBytes = std::uint64_t{1} << 20;

// Ring chunks of one rail in flight at once, each on its own channel: a ring step
// waits for the step before it (its segment's partial sum), and the chunks in flight
// take their steps' latencies together, so the NIC is busy about K S / (L B + K S) of
// the time (K chunks in flight, segments of S bytes, latency L, NIC rate B). More
// chunks at once also finish later, all together, and the intra-node AllGather trails
// them: hgx-h100:16, 1 GiB, 430 kB segments: 2 in flight 0.58 of the NIC bound, 4
// 0.71, 8 0.76, 12 0.80, 16 0.71.
constexpr int kRailChunksInFlight = 6;

// `r` appended to `list`, merged with the last range where it continues it.
void appendRange(std::vector<Range>& list, Range r) {
  if (r.second == 0) return;
  if (!list.empty() && list.back().first + list.back().second == r.first) {
    list.back().second += r.second;
    return;
  }
  list.push_back(r);
}

}  // namespace

std::uint64_t Composer::railChunkBytes(int nodes) const {
  if (rail_ == RailKind::Halving) return halvingChunkBytes(nodes);
  const auto n = static_cast<std::uint64_t>(nodes);
  std::uint64_t segment = options_.chunk_bytes > 0 ? options_.chunk_bytes : kRailMinSegmentBytes;
  if (options_.chunk_bytes == 0 && max_transfers_ > 0) {
    // Half the message budget for the rings: a segment is one transfer per node and
    // ring step, 2(N - 1) steps, so the buffer's segments make
    // bytes / segment * 2(N - 1) transfers over all rails together.
    const double budget = static_cast<double>(max_transfers_) / 2.0;
    const double floor =
        static_cast<double>(plan_.bytes) * 2.0 * static_cast<double>(n - 1) / budget;
    segment = std::max(segment, static_cast<std::uint64_t>(floor));
  }
  segment = std::max(segment / es() * es(), es());
  return segment * n;
}

std::vector<Range> Composer::railChunks(const Piece& p) const {
  return b_.chunks(p.range.first, p.range.second, rail_chunk_);
}

std::vector<Range> Composer::railOrder(int k, std::size_t c, Range chunk, bool up) const {
  if (rail_ == RailKind::Halving) return halvingOrder(k, c, chunk, up);
  // Node k first sends segment k + 1 (its own part of it, to node k - 1), then k + 2,
  // ..., and finishes segment k first, then receives k + 1, k + 2, ...: the reduction
  // takes the chunk from segment k + 1 on, the gather gives it from segment k on.
  const int nodes = static_cast<int>(layout_.node_ids.size());
  const auto segments = evenParts(chunk, nodes, es());
  const std::uint64_t split = segments[static_cast<std::size_t>((k + (up ? 1 : 0)) % nodes)].first;
  return {{split, chunk.first + chunk.second - split}, {chunk.first, split - chunk.first}};
}

void Composer::railIntra(int k, bool up, int channel_base) {
  if (localCount(k) < 2) return;
  std::map<int, std::vector<Range>> ranges;
  for (int r : layout_.ranks[static_cast<std::size_t>(k)]) ranges[r] = {};
  std::vector<std::vector<Range>> chunks;
  std::size_t most = 0;
  for (const Piece& p : pieces_) {
    chunks.push_back(railChunks(p));
    most = std::max(most, chunks.back().size());
  }
  // Chunk after chunk over the rails, as the rings (or halvings) take them.
  for (std::size_t c = 0; c < most; ++c) {
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      if (c >= chunks[i].size()) continue;
      auto& list = ranges[pieces_[i].owner[static_cast<std::size_t>(k)]];
      for (const Range& part : railOrder(k, c, chunks[i][c], up)) {
        // The halving's parts stay apart, so every node deals its trees the same
        // pattern of ranges (a node that sends the lower half first would otherwise
        // see one run where another sees two halves): its plan is then symmetric
        // under the nodes' relabelling, which simulateOneNode relies on.
        if (rail_ == RailKind::Halving) {
          if (part.second > 0) list.push_back(part);
        } else {
          appendRange(list, part);
        }
      }
    }
  }
  intra(allGatherTrees(k), ranges, up, channel_base, 1, true, rail_ == RailKind::Halving);
}

void Composer::railRings(int channel_base) {
  const int nodes = static_cast<int>(layout_.node_ids.size());
  const int rails = static_cast<int>(pieces_.size());
  std::vector<std::vector<Range>> chunks;
  std::vector<std::vector<Hop>> hops(pieces_.size());  // per rail: node k -> node k - 1
  std::size_t most = 0;
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    chunks.push_back(railChunks(p));
    most = std::max(most, chunks.back().size());
    for (int k = 0; k < nodes; ++k) {
      const int m = (k + nodes - 1) % nodes;
      Hop h;
      h.from = p.owner[static_cast<std::size_t>(k)];
      h.to = p.owner[static_cast<std::size_t>(m)];
      h.route = interRoute(k, p.port[static_cast<std::size_t>(k)], m,
                           p.port[static_cast<std::size_t>(m)]);
      hops[i].push_back(h);
    }
  }
  std::vector<std::vector<Range>> segments(pieces_.size());
  for (std::size_t c = 0; c < most; ++c) {
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      segments[i] =
          c < chunks[i].size() ? evenParts(chunks[i][c], nodes, es()) : std::vector<Range>{};
      for (const Range& s : segments[i]) largest_chunk_ = std::max(largest_chunk_, s.second);
    }
    const int channel_group = static_cast<int>(c % kRailChunksInFlight) * rails;
    // Reduce-scatter: at step s node k adds its part to segment k + s + 1 and passes
    // it on, so segment h ends reduced on node h; all-gather: at step s node k passes
    // segment k + s on (its own first).
    for (int step = 0; step < 2 * (nodes - 1); ++step) {
      const bool reducing = step < nodes - 1;
      const int s = reducing ? step + 1 : step - (nodes - 1);
      for (std::size_t i = 0; i < pieces_.size(); ++i) {
        if (segments[i].empty()) continue;
        const int channel = channel_base + channel_group + static_cast<int>(i);
        for (int k = 0; k < nodes; ++k) {
          const Hop& h = hops[i][static_cast<std::size_t>(k)];
          const Range seg = segments[i][static_cast<std::size_t>((k + s) % nodes)];
          transfer(h.from, h.to, channel, seg, h.route, reducing);
          setShare(channel, hopGbps(h));
        }
      }
    }
  }
  std::ostringstream note;
  note << "between nodes: a pipelined ring per rail (" << rails << " rails), chunks of "
       << rail_chunk_ << " bytes in " << nodes << " segments, " << kRailChunksInFlight
       << " chunks in flight";
  plan_.notes.push_back(note.str());
}

}  // namespace blink::plan::detail
