#include "plan/nccl_layout.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <tuple>

#include "common/error.hpp"
#include "plan/node_layout.hpp"

namespace blink::plan::nccl {

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

namespace {

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

}  // namespace

// The first of them.
std::vector<int> nodeRingOrder(const topo::Topology& t, const std::vector<int>& ranks) {
  return nodeRingOrders(t, ranks).front();
}

namespace {

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

}  // namespace

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

}  // namespace blink::plan::nccl
