#include "plan/node_class_simulation.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "plan/node_layout.hpp"
#include "plan/simulator_model.hpp"

namespace blink::plan {
namespace {

// Every vertex of the topology on node 0's side: a node's k-th device (in vertex order)
// is node 0's k-th; devices outside the nodes (network switches) stay.
struct NodeMirror {
  std::vector<topo::Vertex> to_first;  // per vertex
  std::vector<int> position;           // per vertex: its node's position, -1 outside
};

// The mirror of `layout`'s nodes, or nullopt where they are not alike: the same device
// kinds and models in the same order, the same links among them and to the outside.
std::optional<NodeMirror> mirrorNodes(const topo::Topology& t, const NodeLayout& layout) {
  const std::size_t n = layout.node_ids.size();
  std::map<int, std::size_t> position_of_id;
  for (std::size_t k = 0; k < n; ++k) position_of_id[layout.node_ids[k]] = k;
  std::vector<std::vector<topo::Vertex>> members(n);
  NodeMirror m;
  m.position.assign(t.numDevices(), -1);
  std::vector<int> local(t.numDevices(), -1);
  for (topo::Vertex v = 0; v < t.numDevices(); ++v) {
    auto it = position_of_id.find(t.device(v).node);
    if (it == position_of_id.end()) continue;
    m.position[v] = static_cast<int>(it->second);
    local[v] = static_cast<int>(members[it->second].size());
    members[it->second].push_back(v);
  }
  for (std::size_t k = 1; k < n; ++k) {
    if (members[k].size() != members[0].size()) return std::nullopt;
    for (std::size_t i = 0; i < members[k].size(); ++i) {
      const topo::Device &a = t.device(members[0][i]), &b = t.device(members[k][i]);
      if (a.kind != b.kind || a.model != b.model) return std::nullopt;
    }
  }
  m.to_first.resize(t.numDevices());
  for (topo::Vertex v = 0; v < t.numDevices(); ++v) {
    m.to_first[v] = m.position[v] < 0 ? v : members[0][static_cast<std::size_t>(local[v])];
  }
  // Links, as node 0 sees them: every node must have the same set.
  using LinkKey = std::tuple<topo::Vertex, topo::Vertex, int, double, int, double>;
  std::vector<std::vector<LinkKey>> links(n);
  for (topo::Edge e : t.links()) {
    const topo::Vertex u = t.source(e), v = t.target(e);
    const int k = m.position[u] >= 0 ? m.position[u] : m.position[v];
    if (k < 0) continue;
    if (m.position[u] >= 0 && m.position[v] >= 0 && m.position[u] != m.position[v]) {
      return std::nullopt;  // a link straight between two nodes: no mirror for it
    }
    const topo::Link& l = t.link(e);
    links[static_cast<std::size_t>(k)].emplace_back(m.to_first[u], m.to_first[v],
                                                    static_cast<int>(l.kind), l.gbps,
                                                    l.multiplicity, l.latency_us);
  }
  for (auto& list : links) std::sort(list.begin(), list.end());
  for (std::size_t k = 1; k < n; ++k) {
    if (links[k] != links[0]) return std::nullopt;
  }
  return m;
}

// The mirror where oneNodeSimulationApplies.
std::optional<NodeMirror> applicableMirror(const topo::Topology& t, const NodeLayout& layout) {
  const auto nodes = static_cast<unsigned>(layout.node_ids.size());
  if (!std::has_single_bit(nodes)) return std::nullopt;
  for (const auto& ranks : layout.ranks) {
    if (ranks.size() != layout.ranks[0].size()) return std::nullopt;
  }
  return mirrorNodes(t, layout);
}

}  // namespace

bool oneNodeSimulationApplies(const topo::Topology& topology) {
  return applicableMirror(topology, nodeLayout(topology)).has_value();
}

std::optional<SimResult> simulateOneNode(const Plan& plan, const topo::Topology& topology,
                                         const SimOptions& options) {
  const NodeLayout layout = nodeLayout(topology);
  if (plan.ranks.size() != plan.rank_gpu.size() ||
      plan.rank_gpu.size() != layout.node_of_rank.size()) {
    return std::nullopt;
  }
  const std::optional<NodeMirror> mirror = applicableMirror(topology, layout);
  if (!mirror) return std::nullopt;
  // A rank's mirror on node 0 must run on the GPU its own GPU mirrors.
  const std::vector<int>& first = layout.ranks[0];
  for (std::size_t r = 0; r < plan.rank_gpu.size(); ++r) {
    const auto gpu = topology.findGpu(plan.rank_gpu[r]);
    const int twin = first[static_cast<std::size_t>(layout.local_of_rank[r])];
    const auto twin_gpu = topology.findGpu(plan.rank_gpu[static_cast<std::size_t>(twin)]);
    if (!gpu || !twin_gpu || mirror->to_first[*gpu] != *twin_gpu) return std::nullopt;
  }
  // The relabelling taking the sender's node to the receiver's names the message's lane
  // on node 0: node 0's Send to node d and its receive from d are one message.
  auto difference = [](int from, int to) { return from ^ to; };

  Plan one;
  one.collective = plan.collective;
  one.algorithm = plan.algorithm;
  one.topology = plan.topology;
  one.num_ranks = static_cast<int>(first.size());
  one.bytes = plan.bytes;
  one.chunk_bytes = plan.chunk_bytes;
  one.element_size = plan.element_size;
  std::map<std::pair<int, int>, int> channels;  // (channel, difference) -> channel
  std::vector<int> routes(plan.routes.size(), -1);
  for (int r : first) {
    one.rank_gpu.push_back(plan.rank_gpu[static_cast<std::size_t>(r)]);
    RankProgram program = plan.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < program.steps.size(); ++i) {
      Step& s = program.steps[i];
      if (s.kind == StepKind::Copy) continue;
      if (s.peer < 0 || s.peer >= static_cast<int>(plan.ranks.size()) ||
          (s.kind == StepKind::Send &&
           (s.route < 0 || s.route >= static_cast<int>(plan.routes.size())))) {
        detail::failSimulation(plan, detail::stepName(r, i) + ": peer or route out of range");
      }
      const int peer_node = layout.node_of_rank[static_cast<std::size_t>(s.peer)];
      const int d = s.kind == StepKind::Send ? difference(0, peer_node) : difference(peer_node, 0);
      auto [it, fresh] = channels.try_emplace({s.channel, d}, static_cast<int>(channels.size()));
      if (fresh && !plan.channel_shares.empty()) {
        one.channel_shares.push_back(plan.channelShare(s.channel));
      }
      s.channel = it->second;
      s.peer = layout.local_of_rank[static_cast<std::size_t>(s.peer)];
      if (s.kind != StepKind::Send) continue;
      int& route = routes[static_cast<std::size_t>(s.route)];
      if (route < 0) {
        std::vector<topo::Vertex> mirrored;
        for (topo::Vertex v : plan.routes[static_cast<std::size_t>(s.route)]) {
          mirrored.push_back(mirror->to_first[v]);
        }
        route = static_cast<int>(one.routes.size());
        one.routes.push_back(std::move(mirrored));
      }
      s.route = route;
    }
    one.ranks.push_back(std::move(program));
  }
  if (!plan.channel_shares.empty() && one.channel_shares.size() != channels.size()) {
    return std::nullopt;  // cannot happen: every channel got its share when first seen
  }
  return detail::simulatePlan(one, topology, options, true);
}

}  // namespace blink::plan
