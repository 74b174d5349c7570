#include "plan/baselines.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <tuple>

#include "common/error.hpp"
#include "plan/node_layout.hpp"
#include "plan/plan_writer.hpp"

namespace blink::plan {
namespace {

// The chunk of the ring baseline (and of the double binary tree between nodes) when
// LowerOptions::chunk_bytes does not fix one.
constexpr std::uint64_t kRingChunkBytes = std::uint64_t{1} << 20;

// The widest path (largest bottleneck capacity, then fewest hops) between two
// devices over any links: where NCCL would send when there is no direct link.
std::vector<topo::Vertex> fastestRoute(const topo::Topology& t, topo::Vertex from,
                                       topo::Vertex to) {
  const std::size_t n = t.numDevices();
  std::vector<double> width(n, -1.0);
  std::vector<int> hops(n, 0);
  std::vector<topo::Vertex> parent(n, from);
  using Item = std::tuple<double, int, topo::Vertex>;  // width, -hops, vertex
  std::priority_queue<Item> queue;
  width[from] = 1e300;
  queue.emplace(width[from], 0, from);
  while (!queue.empty()) {
    auto [w, neg_hops, v] = queue.top();
    queue.pop();
    if (w < width[v] || (w == width[v] && -neg_hops > hops[v])) continue;
    for (topo::Edge e : boost::make_iterator_range(boost::out_edges(v, t.graph()))) {
      topo::Vertex u = t.target(e);
      // Only GPUs at the ends: a route never relays through another GPU.
      if (t.device(u).kind == topo::DeviceKind::Gpu && u != to) continue;
      double cap = 0.0;
      for (topo::Edge f : t.linksBetween(v, u)) cap += t.link(f).capacity();
      double nw = std::min(w, cap);
      int nh = -neg_hops + 1;
      if (nw > width[u] || (nw == width[u] && nh < hops[u])) {
        width[u] = nw;
        hops[u] = nh;
        parent[u] = v;
        queue.emplace(nw, -nh, u);
      }
    }
  }
  if (width[to] < 0) {
    throw Error(blinkInvalidInput, "no path from " + t.device(from).id + " to " + t.device(to).id +
                                       " in topology " + t.name());
  }
  std::vector<topo::Vertex> route{to};
  while (route.back() != from) route.push_back(parent[route.back()]);
  std::reverse(route.begin(), route.end());
  return route;
}

int nvlinkLanes(const topo::Topology& t, topo::Vertex a, topo::Vertex b) {
  int lanes = 0;
  for (topo::Edge e : t.linksBetween(a, b)) {
    if (t.link(e).kind == topo::LinkKind::NvLink) lanes += t.link(e).multiplicity;
  }
  return lanes;
}

// Depth-first search for a directed Hamiltonian cycle from rank 0 over arcs with a
// free lane; bounded so that large graphs give up quickly.
bool hamiltonian(const std::vector<std::vector<int>>& lanes, std::vector<int>& path,
                 std::vector<bool>& used, long& budget) {
  const int n = static_cast<int>(lanes.size());
  if (--budget < 0) return false;
  int here = path.back();
  if (static_cast<int>(path.size()) == n) return lanes[here][path.front()] > 0;
  std::vector<int> next;
  for (int v = 0; v < n; ++v) {
    if (!used[v] && lanes[here][v] > 0) next.push_back(v);
  }
  // Try the roomiest arcs first: later rings need the remaining lanes.
  std::stable_sort(next.begin(), next.end(),
                   [&](int a, int b) { return lanes[here][a] > lanes[here][b]; });
  for (int v : next) {
    used[v] = true;
    path.push_back(v);
    if (hamiltonian(lanes, path, used, budget)) return true;
    path.pop_back();
    used[v] = false;
  }
  return false;
}

std::vector<topo::Vertex> gpuVertices(const topo::Topology& t) {
  return t.gpus();
}

// ---- clusters: what NCCL runs between nodes ----

// The orders NCCL's rings take through one node's GPUs (ranks, as given): as many
// directed NVLink rings over them as the lanes allow (each takes one lane per hop),
// or the ranks in order when there is none.
std::vector<std::vector<int>> nodeRingOrders(const topo::Topology& t,
                                             const std::vector<int>& ranks) {
  const auto gpus = t.gpus();
  const int n = static_cast<int>(ranks.size());
  std::vector<std::vector<int>> lanes(n, std::vector<int>(n, 0));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b) lanes[a][b] = nvlinkLanes(t, gpus[ranks[a]], gpus[ranks[b]]);
    }
  }
  std::vector<std::vector<int>> orders;
  while (n >= 2) {
    std::vector<int> path{0};
    std::vector<bool> used(n, false);
    used[0] = true;
    long budget = 200000;
    if (!hamiltonian(lanes, path, used, budget)) break;
    std::vector<int> order;
    for (int i = 0; i < n; ++i) {
      order.push_back(ranks[path[i]]);
      --lanes[path[i]][path[(i + 1) % n]];
    }
    orders.push_back(std::move(order));
  }
  if (orders.empty()) orders.push_back(ranks);
  return orders;
}

// The first of them.
std::vector<int> nodeRingOrder(const topo::Topology& t, const std::vector<int>& ranks) {
  return nodeRingOrders(t, ranks).front();
}

// The distinct NICs of node k's ports, in port order (at least one entry: nullopt when
// the node reaches no NIC).
std::vector<std::optional<topo::Vertex>> nodeNics(const NodeLayout& layout, std::size_t k) {
  std::vector<std::optional<topo::Vertex>> nics;
  for (const auto& port : layout.ports[k]) {
    if (port.nic && std::find(nics.begin(), nics.end(), port.nic) == nics.end()) {
      nics.push_back(port.nic);
    }
  }
  if (nics.empty()) nics.push_back(std::nullopt);
  return nics;
}

// The rank of node k whose port uses `nic` (its first GPU without one).
int rankOfNic(const NodeLayout& layout, std::size_t k, const std::optional<topo::Vertex>& nic) {
  for (const auto& port : layout.ports[k]) {
    if (port.nic == nic) return port.rank;
  }
  return layout.ranks[k].front();
}

// GPU a -> its node's NIC `from` -> network switches -> NIC `to` -> GPU z, as NCCL
// sends between nodes over one NIC of each; the fastest path when a NIC is missing or
// unreachable.
std::vector<topo::Vertex> nicRoute(const topo::Topology& t, topo::Vertex a,
                                   const std::optional<topo::Vertex>& from,
                                   const std::optional<topo::Vertex>& to, topo::Vertex z) {
  if (from && to) {
    auto first = shortestWidestRoute(t, a, *from, insideNode(t, t.device(a).node));
    auto middle = shortestWidestRoute(t, *from, *to, [&t](topo::Vertex v) {
      return t.device(v).kind == topo::DeviceKind::NetSwitch;
    });
    auto last = shortestWidestRoute(t, *to, z, insideNode(t, t.device(z).node));
    if (!first.empty() && !middle.empty() && !last.empty()) {
      first.insert(first.end(), middle.begin() + 1, middle.end());
      first.insert(first.end(), last.begin() + 1, last.end());
      return first;
    }
  }
  return fastestRoute(t, a, z);
}

// The route between two ranks of one node: the direct NVLink where there is one,
// else the fastest path.
std::vector<topo::Vertex> intraRoute(const topo::Topology& t, topo::Vertex a, topo::Vertex b) {
  if (nvlinkLanes(t, a, b) > 0) return {a, b};
  return fastestRoute(t, a, b);
}

// Route length (hops) from GPU rank `rank` to `nic` inside its node; large when there
// is no NIC or no route.
std::size_t hopsToNic(const topo::Topology& t, int rank, const std::optional<topo::Vertex>& nic) {
  constexpr std::size_t kFar = 1000;
  if (!nic) return kFar;
  const topo::Vertex g = t.gpus()[static_cast<std::size_t>(rank)];
  const auto route = shortestWidestRoute(t, g, *nic, insideNode(t, t.device(g).node));
  return route.empty() ? kFar : route.size() - 1;
}

// The order a ring crosses node k when it enters and leaves by `nic`: as NCCL lays
// its rings, the GPUs it enters and leaves at lie as near the NIC as the node allows
// (the last GPU's sends go out on that NIC). With NVLink rings (`cycles`, each either
// way round where the lanes allow), the turn of one that crowds the fewest lanes earlier
// rings took (`lanes_taken`, updated), then with the nearest ends, `preferred` first
// among equals; without, from the GPU of
// the NIC through the others in rank order to the one nearest the NIC.
std::vector<int> throughNode(const topo::Topology& t, const NodeLayout& layout, std::size_t k,
                             const std::vector<std::vector<int>>& cycles, std::size_t preferred,
                             const std::optional<topo::Vertex>& nic,
                             std::map<std::pair<int, int>, int>& lanes_taken) {
  const auto gpus = t.gpus();
  const int entry = rankOfNic(layout, k, nic);
  std::map<int, std::size_t> hops;
  for (int rank : layout.ranks[k]) hops[rank] = hopsToNic(t, rank, nic);
  const auto& first = cycles.front();
  const std::size_t n = first.size();
  const bool nvlink = n >= 2 && nvlinkLanes(t, gpus[first[0]], gpus[first[1]]) > 0 &&
                      nvlinkLanes(t, gpus[first[n - 1]], gpus[first[0]]) > 0;
  if (nvlink) {
    std::vector<int> best;
    std::tuple<int, std::size_t, int, int> best_score{};
    for (std::size_t c = 0; c < cycles.size(); ++c) {
      const auto& cycle = cycles[c];
      std::vector<std::vector<int>> ways{cycle};
      std::vector<int> back(cycle.rbegin(), cycle.rend());
      bool reversible = true;
      for (std::size_t i = 0; i < n; ++i) {
        reversible = reversible && nvlinkLanes(t, gpus[back[i]], gpus[back[(i + 1) % n]]) > 0;
      }
      if (reversible) ways.push_back(back);
      for (const auto& way : ways) {
        for (std::size_t i = 0; i < n; ++i) {
          std::vector<int> order(way.begin() + static_cast<std::ptrdiff_t>(i), way.end());
          order.insert(order.end(), way.begin(), way.begin() + static_cast<std::ptrdiff_t>(i));
          // Hops whose lanes earlier rings have all taken, first: a lane shared by two
          // rings halves both.
          int crowded = 0;
          for (std::size_t h = 0; h + 1 < n; ++h) {
            const auto it = lanes_taken.find({order[h], order[h + 1]});
            const int taken = it == lanes_taken.end() ? 0 : it->second;
            crowded += taken >= nvlinkLanes(t, gpus[order[h]], gpus[order[h + 1]]) ? 1 : 0;
          }
          const std::tuple<int, std::size_t, int, int> score{
              crowded, hops[order.front()] + hops[order.back()], c == preferred ? 0 : 1,
              order.front() == entry ? 0 : 1};
          if (best.empty() || score < best_score) {
            best = std::move(order);
            best_score = score;
          }
        }
      }
    }
    for (std::size_t h = 0; h + 1 < n; ++h) ++lanes_taken[{best[h], best[h + 1]}];
    return best;
  }
  std::vector<int> order{entry};
  int exit = -1;
  for (int rank : layout.ranks[k]) {
    if (rank != entry && (exit < 0 || hops[rank] < hops[exit])) exit = rank;
  }
  for (int rank : layout.ranks[k]) {
    if (rank != entry && rank != exit) order.push_back(rank);
  }
  if (exit >= 0) order.push_back(exit);
  return order;
}

// NCCL's rings on a cluster: one per NIC of a node (the fewest any node has), each
// through every node in turn (throughNode: entering and leaving near its NIC, along one
// of the node's lane-disjoint NVLink rings where it has them).
std::vector<Ring> clusterRings(const topo::Topology& t) {
  const auto gpus = t.gpus();
  const NodeLayout layout = nodeLayout(t);
  const std::size_t nodes = layout.node_ids.size();
  std::size_t count = std::numeric_limits<std::size_t>::max();
  std::vector<std::vector<std::optional<topo::Vertex>>> nics(nodes);
  std::vector<std::vector<std::vector<int>>> orders(nodes);
  for (std::size_t k = 0; k < nodes; ++k) {
    nics[k] = nodeNics(layout, k);
    count = std::min(count, nics[k].size());
    orders[k] = nodeRingOrders(t, layout.ranks[k]);
  }
  std::vector<Ring> rings;
  std::vector<std::map<std::pair<int, int>, int>> lanes_taken(nodes);  // per node: (a, b) -> rings
  for (std::size_t r = 0; r < count; ++r) {
    Ring ring;
    std::vector<std::optional<topo::Vertex>> nic_at;  // per position: the NIC it leaves by
    for (std::size_t k = 0; k < nodes; ++k) {
      const std::vector<int> order =
          throughNode(t, layout, k, orders[k], r % orders[k].size(), nics[k][r], lanes_taken[k]);
      for (int rank : order) {
        ring.order.push_back(rank);
        nic_at.push_back(nics[k][r]);
      }
    }
    const std::size_t n = ring.order.size();
    for (std::size_t i = 0; i < n; ++i) {
      const int a = ring.order[i], b = ring.order[(i + 1) % n];
      const bool crosses = layout.node_of_rank[a] != layout.node_of_rank[b];
      ring.hops.push_back(crosses ? nicRoute(t, gpus[a], nic_at[i], nic_at[(i + 1) % n], gpus[b])
                                  : intraRoute(t, gpus[a], gpus[b]));
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

// NCCL's double binary tree on a cluster: two binary trees over the nodes (the second
// over them in reverse, so that most leaves of one are inner nodes of the other), each
// node's head GPU linked to its parent's over the NICs, and inside every node a chain
// from the head along its NVLink ring. Rooted: the root's node tops both trees and the
// root is its head.
treegen::TreeSet clusterDoubleBinaryTrees(const topo::Topology& t, int root_rank) {
  const auto gpus = t.gpus();
  const NodeLayout layout = nodeLayout(t);
  const int nodes = static_cast<int>(layout.node_ids.size());
  std::vector<int> node_order;
  for (int k = 0; k < nodes; ++k) node_order.push_back(k);
  const int root_node = root_rank >= 0 ? layout.node_of_rank[root_rank] : 0;
  std::rotate(node_order.begin(), node_order.begin() + root_node, node_order.end());
  std::vector<int> reversed{node_order.front()};
  reversed.insert(reversed.end(), node_order.rbegin(), node_order.rend() - 1);
  treegen::TreeSet set;
  set.method = "double-binary-tree";
  set.topology = t.name();
  for (int which = 0; which < 2; ++which) {
    const std::vector<int>& order = which == 0 ? node_order : reversed;
    // Per node: its head (on the tree's NIC: the first for one tree, the last for the
    // other) and the chain through it.
    std::vector<int> head(nodes);
    std::vector<std::optional<topo::Vertex>> nic(nodes);
    treegen::Tree tree;
    tree.weight_gbps = 1.0;  // equal halves
    for (int k = 0; k < nodes; ++k) {
      const auto list = nodeNics(layout, static_cast<std::size_t>(k));
      nic[k] = which == 0 ? list.front() : list.back();
      head[k] = k == root_node && root_rank >= 0
                    ? root_rank
                    : rankOfNic(layout, static_cast<std::size_t>(k), nic[k]);
      if (k == root_node && root_rank >= 0) nic[k] = layout.nic[root_rank];
    }
    tree.root_gpu = t.device(gpus[head[order[0]]]).gpu_index;
    for (int p = 1; p < nodes; ++p) {
      const int parent = order[(p - 1) / 2], child = order[p];
      const topo::Vertex a = gpus[head[parent]], z = gpus[head[child]];
      tree.edges.push_back({a, z, nicRoute(t, a, nic[parent], nic[child], z)});
    }
    for (int k = 0; k < nodes; ++k) {
      std::vector<int> chain = nodeRingOrder(t, layout.ranks[k]);
      std::rotate(chain.begin(), std::find(chain.begin(), chain.end(), head[k]), chain.end());
      for (std::size_t i = 1; i < chain.size(); ++i) {
        const topo::Vertex a = gpus[chain[i - 1]], z = gpus[chain[i]];
        tree.edges.push_back({a, z, intraRoute(t, a, z)});
      }
    }
    // Parents before children: the inter-node edges first reach every head, and each
    // chain starts at its head.
    set.trees.push_back(std::move(tree));
  }
  set.root_gpu = set.trees.front().root_gpu;
  return set;
}

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
