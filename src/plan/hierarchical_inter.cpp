// The inter-node phase of the hierarchical plan: chains and double binary trees over
// the nodes, their chunks, channels and routes.
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

namespace blink::plan::detail {

void Composer::chains(bool reduce, bool broadcast, int channel_base) {
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

std::vector<Piece> Composer::interRuns(bool allreduce) const {
  const int nodes = static_cast<int>(layout_.node_ids.size());
  if (!(allreduce && runs_) && !one_way_trees_) return pieces_;
  std::vector<Piece> runs;
  for (const Piece& p : pieces_) {
    // AllReduce's runs span homes (they get homes of their own below); the others'
    // data starts (or ends) at its home.
    if (!runs.empty() && runs.back().owner == p.owner &&
        (allreduce || runs.back().home == p.home) &&
        runs.back().range.first + runs.back().range.second == p.range.first) {
      runs.back().range.second += p.range.second;
      continue;
    }
    runs.push_back(p);
  }
  if (!allreduce) return runs;  // AllGather/ReduceScatter: the data is at its home
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].home = static_cast<int>(i * static_cast<std::size_t>(nodes) / runs.size());
  }
  return runs;
}

int Composer::interDepth(Collective c, int nodes) const {
  int height = 0;
  while ((2 << height) <= nodes) ++height;  // floor(log2(nodes))
  if (c == Collective::AllReduce && interTrees(nodes)) return 2 * height;
  if (one_way_trees_) return height;
  return (c == Collective::AllReduce ? 2 : 1) * (nodes - 1);
}

Composer::Chain Composer::chain(const Piece& p, bool reduce, bool broadcast, int channel_base) {
  const int nodes = static_cast<int>(layout_.node_ids.size());
  Chain out;
  auto hop = [&](std::vector<Hop>& way, int tree, int k, int m, bool reducing) {
    const int jk = p.port[static_cast<std::size_t>(k)], jm = p.port[static_cast<std::size_t>(m)];
    Hop h;
    h.from = p.owner[static_cast<std::size_t>(k)];
    h.to = p.owner[static_cast<std::size_t>(m)];
    h.route = interRoute(k, jk, m, jm);
    h.channel = channel_base + 2 * ((tree * nodes + p.home) * maxPorts() + jk) + (reducing ? 0 : 1);
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
  } else if (one_way_trees_ && reduce != broadcast) {
    // AllGather / ReduceScatter with whole cuts: a port's pieces come from a few
    // neighbouring homes, so a chain from each home would leave the far half of the
    // ring idle until the first chunks arrive (hgx-h100:32 AllGather: 0.30 of the NIC
    // bound). Two binary trees rooted at the home instead (log2 N stages), with the
    // nodes at an even distance from the home inner in the first and those at an odd
    // distance inner in the second: as a home's pieces alternate between the trees,
    // every node forwards about one copy of each, whoever the home is.
    const int evens = (nodes + 1) / 2, odds = nodes / 2;
    for (int tree = 0; tree < 2; ++tree) {
      auto node = [&](int i) {
        int offset = 0;
        if (tree == 0) {
          offset = i < evens ? 2 * i : 2 * (i - evens) + 1;
        } else if (i > 0) {
          offset = i <= odds ? 2 * i - 1 : 2 * (i - odds);
        }
        return (p.home + offset) % nodes;
      };
      std::vector<Hop>& way = out.ways.emplace_back();
      if (reduce) {
        for (int i = nodes - 1; i >= 1; --i) hop(way, tree, node(i), node((i - 1) / 2), true);
      } else {
        for (int i = 1; i < nodes; ++i) hop(way, tree, node((i - 1) / 2), node(i), false);
      }
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
  const std::uint64_t chunk = chunkFor(latency, gbps, p.range.second,
                                       runs_ || one_way_trees_ ? inter_floor_ : chunk_floor_);
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

double Composer::hopGbps(const Hop& h) {
  // Once per route: the rail variants ask for every message (a few M on 128 nodes).
  if (auto it = route_gbps_.find(h.route); it != route_gbps_.end()) return it->second;
  const auto& route = plan_.routes[static_cast<std::size_t>(h.route)];
  const double gbps = bottleneckGbps(t_, route) / std::max(share_[h.route], 1);
  route_gbps_.emplace(h.route, gbps);
  return gbps;
}

int Composer::maxPorts() const {
  std::size_t most = 1;
  for (const auto& ports : layout_.ports) most = std::max(most, ports.size());
  return static_cast<int>(most);
}

int Composer::nicShare(int k, int j) const {
  const auto& ports = layout_.ports[static_cast<std::size_t>(k)];
  const auto& nic = ports[static_cast<std::size_t>(j)].nic;
  if (!nic) return 1;
  int n = 0;
  for (const auto& port : ports) n += port.nic == nic ? 1 : 0;
  return std::max(n, 1);
}

int Composer::interRoute(int k, int j, int m, int jm) {
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
  route_gbps_.erase(index);  // its share may have grown
  return index;
}

}  // namespace blink::plan::detail
