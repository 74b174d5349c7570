#include "plan/baselines.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "plan/nccl_layout.hpp"
#include "plan/node_layout.hpp"
#include "plan/plan_writer.hpp"

namespace blink::plan {
namespace {

// The chunk of the ring baseline (and of the double binary tree between nodes) when
// LowerOptions::chunk_bytes does not fix one.
constexpr std::uint64_t kRingChunkBytes = std::uint64_t{1} << 20;

using nccl::clusterDoubleBinaryTrees;
using nccl::clusterRings;
using nccl::fastestRoute;
using nccl::gpuVertices;
using nccl::hamiltonian;
using nccl::nodeRingOrder;
using nccl::nvlinkLanes;

}  // namespace

std::vector<Ring> findRings(const topo::Topology& topology) {
  const auto gpus = gpuVertices(topology);
  const int n = static_cast<int>(gpus.size());
  std::vector<Ring> rings;
  if (n < 2) return rings;
  if (isMultiNode(topology)) return clusterRings(topology);
  std::vector<std::vector<int>> lanes(n, std::vector<int>(n, 0));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b) lanes[a][b] = nvlinkLanes(topology, gpus[a], gpus[b]);
    }
  }
  while (true) {
    std::vector<int> path{0};
    std::vector<bool> used(n, false);
    used[0] = true;
    long budget = 200000;
    if (!hamiltonian(lanes, path, used, budget)) break;
    Ring ring;
    ring.order = path;
    ring.nvlink = true;
    for (int i = 0; i < n; ++i) {
      int a = path[i], b = path[(i + 1) % n];
      --lanes[a][b];
      ring.hops.push_back({gpus[a], gpus[b]});
    }
    rings.push_back(std::move(ring));
  }
  if (rings.empty()) {
    Ring ring;
    for (int i = 0; i < n; ++i) {
      ring.order.push_back(i);
      ring.hops.push_back(fastestRoute(topology, gpus[i], gpus[(i + 1) % n]));
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

Plan ringPlan(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
              int root_rank, const LowerOptions& options) {
  Plan plan = emptyPlan(collective, "ring", topology, bytes, options.element_size);
  const int n = plan.num_ranks;
  const std::uint64_t es = static_cast<std::uint64_t>(options.element_size);
  const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
  if (rooted && (root_rank < 0 || root_rank >= n)) {
    throw Error(blinkInvalidArgument,
                "ring plan: root " + std::to_string(root_rank) + " out of range");
  }
  plan.root = rooted ? root_rank : -1;
  if (n < 2 || bytes == 0) return plan;
  std::vector<Ring> rings = findRings(topology);
  plan.notes.push_back(describeRings(topology, rings));
  PlanWriter b(plan);
  const std::uint64_t chunk =
      options.chunk_bytes > 0 ? std::max(options.chunk_bytes / es * es, es) : kRingChunkBytes;
  plan.chunk_bytes = chunk;

  for (std::size_t ri = 0; ri < rings.size(); ++ri) {
    const Ring& ring = rings[ri];
    const int channel = static_cast<int>(ri);
    std::vector<int> pos(n);  // rank -> position
    for (int i = 0; i < n; ++i) pos[ring.order[i]] = i;
    std::vector<int> routes;
    for (const auto& hop : ring.hops) routes.push_back(b.route(hop));
    auto next = [&](int p) { return (p + 1) % n; };
    auto rankAt = [&](int p) { return ring.order[((p % n) + n) % n]; };

    if (rooted) {
      // A pipelined chain from the root along the ring (reversed for Reduce).
      ByteRange part = evenParts({0, bytes}, static_cast<int>(rings.size()), es)[ri];
      const int start = pos[root_rank];
      for (std::uint64_t done = 0; done < part.second; done += chunk) {
        const std::uint64_t off = part.first + done, len = std::min(chunk, part.second - done);
        if (collective == Collective::Broadcast) {
          int prev_recv = -1;
          for (int k = 0; k + 1 < n; ++k) {
            int p = (start + k) % n, from = rankAt(p), to = rankAt(p + 1);
            b.add(from, {StepKind::Send, to, channel, off, len, 0, routes[p], {prev_recv}});
            prev_recv = b.add(to, {StepKind::Recv, from, channel, off, len, 0, -1, {}});
          }
        } else {
          // Reduce: from the rank after the root, all the way round to the root.
          int prev_reduce = -1;
          for (int k = 1; k < n; ++k) {
            int p = (start + k) % n, from = rankAt(p), to = rankAt(p + 1);
            b.add(from, {StepKind::Send, to, channel, off, len, 0, routes[p], {prev_reduce}});
            prev_reduce = b.add(to, {StepKind::RecvReduce, from, channel, off, len, 0, -1, {}});
          }
        }
      }
      continue;
    }

    // Unrooted: the segment structure. For AllReduce, every chunk-sized group of
    // this ring's part is cut into n pieces; for AllGather/ReduceScatter the
    // pieces are the ranks' own segments, each split evenly among the rings.
    std::vector<std::vector<ByteRange>> groups;  // groups[g][r]: the piece owned by rank r
    if (collective == Collective::AllReduce) {
      ByteRange part = evenParts({0, bytes}, static_cast<int>(rings.size()), es)[ri];
      const std::uint64_t group_bytes = chunk * static_cast<std::uint64_t>(n);
      for (std::uint64_t done = 0; done < part.second; done += group_bytes) {
        auto pieces =
            evenParts({part.first + done, std::min(group_bytes, part.second - done)}, n, es);
        std::vector<ByteRange> by_rank(n);
        for (int p = 0; p < n; ++p) by_rank[ring.order[p]] = pieces[p];
        groups.push_back(by_rank);
      }
    } else {
      std::vector<ByteRange> mine(n);
      std::uint64_t longest = 0;
      for (int r = 0; r < n; ++r) {
        mine[r] = evenParts({plan.segmentOffset(r), plan.segmentBytes(r)},
                            static_cast<int>(rings.size()), es)[ri];
        longest = std::max(longest, mine[r].second);
      }
      for (std::uint64_t done = 0; done < longest; done += chunk) {
        std::vector<ByteRange> by_rank(n);
        for (int r = 0; r < n; ++r) {
          std::uint64_t start = std::min(done, mine[r].second);
          by_rank[r] = {mine[r].first + start, std::min(chunk, mine[r].second - start)};
        }
        groups.push_back(by_rank);
      }
    }
    const bool do_rs = collective != Collective::AllGather;
    const bool do_ag = collective != Collective::ReduceScatter;
    for (const auto& piece : groups) {
      auto owned = [&](int p) { return piece[rankAt(p)]; };  // the piece of the rank at position p
      std::vector<int> rs_send(n, -1), rs_recv(n, -1);       // per position, previous step
      std::vector<std::vector<int>> sent_piece(n, std::vector<int>(n, -1));
      if (do_rs) {
        // Step t: position p sends the partial of the piece owned by position p-1-t; after
        // n-1 steps position p holds the full reduction of its own piece.
        for (int t = 0; t + 1 < n; ++t) {
          std::vector<int> recv_now(n, -1);
          for (int p = 0; p < n; ++p) {
            const int q = next(p), owner = ((p - 1 - t) % n + n) % n;
            ByteRange r = owned(owner);
            int s = b.add(rankAt(p), {StepKind::Send,
                                      rankAt(q),
                                      channel,
                                      r.first,
                                      r.second,
                                      0,
                                      routes[p],
                                      {rs_recv[p]}});
            sent_piece[p][owner] = s;
            recv_now[q] = b.add(
                rankAt(q),
                {StepKind::RecvReduce, rankAt(p), channel, r.first, r.second, 0, -1, {rs_recv[q]}});
          }
          rs_recv = recv_now;
        }
      }
      if (do_ag) {
        // Step t: position p sends the piece owned by position p-t (its own at t = 0).
        std::vector<int> have = rs_recv;  // position p's own piece is complete after RS
        for (int t = 0; t + 1 < n; ++t) {
          std::vector<int> recv_now(n, -1);
          for (int p = 0; p < n; ++p) {
            const int q = next(p), owner = ((p - t) % n + n) % n;
            ByteRange r = owned(owner);
            b.add(rankAt(p),
                  {StepKind::Send, rankAt(q), channel, r.first, r.second, 0, routes[p], {have[p]}});
            // Overwriting the piece waits for q's own RS send of it to have read it.
            recv_now[q] = b.add(rankAt(q), {StepKind::Recv,
                                            rankAt(p),
                                            channel,
                                            r.first,
                                            r.second,
                                            0,
                                            -1,
                                            {sent_piece[q][owner], have[q]}});
          }
          have = recv_now;
        }
      }
    }
  }
  validateStructure(plan);
  return plan;
}

Plan doubleBinaryTreePlan(Collective collective, const topo::Topology& topology,
                          std::uint64_t bytes, int root_rank, const LowerOptions& options) {
  if (collective == Collective::AllGather || collective == Collective::ReduceScatter) {
    throw Error(blinkUnsupported, "double binary trees serve AllReduce, Broadcast and Reduce");
  }
  const auto gpus = topology.gpus();
  const int n = static_cast<int>(gpus.size());
  const bool rooted = collective != Collective::AllReduce;
  if (rooted && (root_rank < 0 || root_rank >= n)) {
    throw Error(blinkInvalidArgument,
                "double binary tree plan: root " + std::to_string(root_rank) + " out of range");
  }
  if (isMultiNode(topology)) {
    treegen::TreeSet set = clusterDoubleBinaryTrees(topology, rooted ? root_rank : -1);
    set.collective = toString(collective);
    // NCCL moves fixed slices, not chunks sized by Blink's pipeline rule: the ring's.
    LowerOptions fixed = options;
    if (fixed.chunk_bytes == 0) fixed.chunk_bytes = kRingChunkBytes;
    Plan plan = collective == Collective::Broadcast ? lowerBroadcast(set, topology, bytes, fixed)
                : collective == Collective::Reduce  ? lowerReduce(set, topology, bytes, fixed)
                                                    : lowerAllReduce(set, topology, bytes, fixed);
    plan.algorithm = "double-binary-tree";
    plan.notes.push_back(describeDoubleBinaryTree(topology));
    return plan;
  }
  // Tree A over ranks in order, tree B over them in reverse: a heap over an order
  // (parent of position p is (p-1)/2), so leaves of A sit near the inside of B.
  std::vector<int> order_a, order_b;
  for (int i = 0; i < n; ++i) order_a.push_back(i);
  if (rooted) {
    std::rotate(order_a.begin(), order_a.begin() + root_rank, order_a.end());
    order_b.push_back(root_rank);
    for (int i = n - 1; i >= 1; --i) order_b.push_back(order_a[i]);
  } else {
    order_b.assign(order_a.rbegin(), order_a.rend());
  }
  treegen::TreeSet set;
  set.method = "double-binary-tree";
  set.collective = toString(collective);
  set.topology = topology.name();
  for (const auto* order : {&order_a, &order_b}) {
    treegen::Tree tree;
    tree.root_gpu = topology.device(gpus[(*order)[0]]).gpu_index;
    tree.weight_gbps = 1.0;  // equal halves
    for (int p = 1; p < n; ++p) {
      topo::Vertex parent = gpus[(*order)[(p - 1) / 2]], child = gpus[(*order)[p]];
      tree.edges.push_back({parent, child, fastestRoute(topology, parent, child)});
    }
    set.trees.push_back(std::move(tree));
  }
  set.root_gpu = set.trees.front().root_gpu;
  Plan plan = collective == Collective::Broadcast ? lowerBroadcast(set, topology, bytes, options)
              : collective == Collective::Reduce  ? lowerReduce(set, topology, bytes, options)
                                                  : lowerAllReduce(set, topology, bytes, options);
  plan.algorithm = "double-binary-tree";
  return plan;
}

std::string describeRings(const topo::Topology& topology, const std::vector<Ring>& rings) {
  const std::string count = std::to_string(rings.size()) + (rings.size() == 1 ? " ring" : " rings");
  if (rings.empty()) return "no ring (fewer than two GPUs)";
  if (isMultiNode(topology)) {
    const bool nvlink_inside = [&] {
      const NodeLayout layout = nodeLayout(topology);
      for (const auto& ranks : layout.ranks) {
        if (ranks.size() >= 2 && nodeRingOrder(topology, ranks) == ranks &&
            nvlinkLanes(topology, topology.gpus()[ranks[0]], topology.gpus()[ranks[1]]) == 0) {
          return false;
        }
      }
      return true;
    }();
    return count + ", one per NIC between nodes, " +
           (nvlink_inside ? "along NVLink inside each node" : "in rank order inside each node");
  }
  return count + (rings.front().nvlink ? " over NVLink lanes (one lane per hop each)"
                                       : " in rank order over the fastest paths (no NVLink ring)");
}

std::string describeDoubleBinaryTree(const topo::Topology& topology) {
  if (isMultiNode(topology)) {
    return "double binary tree between nodes (over their NICs), a chain inside each node";
  }
  return "double binary tree over the ranks, on the fastest paths";
}

}  // namespace blink::plan
