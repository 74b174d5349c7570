#include "treegen/flow_network.hpp"

// GCC 12 reports a false -Wmaybe-uninitialized inside Boost's edge iterator (a
// boost::optional member) once the max-flow is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <stdexcept>

#include "treegen/budget.hpp"

namespace blink::treegen {

namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;

struct VertexProps {
  boost::default_color_type color = boost::white_color;
  Capacity distance = 0;
  Traits::edge_descriptor predecessor{};
};

struct EdgeProps {
  Capacity capacity = 0;
  Capacity residual = 0;
  Traits::edge_descriptor reverse{};
};

using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexProps, EdgeProps>;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

}  // namespace

// What one max-flow costs beyond its size (the solver's own set-up), in budget
// units: measured with Budget::kWorkPerMilli on the reference machines.
constexpr std::int64_t kWorkPerCall = 200;

struct FlowNetwork::Impl {
  Graph graph;
  std::vector<Edge> forward;  // arc id -> forward edge (its reverse has capacity 0)
  std::vector<int> tails, heads;
  int last_source = 0;
  Budget* budget = nullptr;
};

FlowNetwork::FlowNetwork(int num_vertices) : impl_(std::make_unique<Impl>()) {
  if (num_vertices < 0) throw std::invalid_argument("FlowNetwork: negative vertex count");
  impl_->graph = Graph(static_cast<std::size_t>(num_vertices));
}

FlowNetwork::~FlowNetwork() = default;
FlowNetwork::FlowNetwork(FlowNetwork&&) noexcept = default;
FlowNetwork& FlowNetwork::operator=(FlowNetwork&&) noexcept = default;

int FlowNetwork::numVertices() const {
  return static_cast<int>(boost::num_vertices(impl_->graph));
}
int FlowNetwork::numArcs() const {
  return static_cast<int>(impl_->forward.size());
}

int FlowNetwork::addArc(int from, int to, Capacity capacity) {
  if (from < 0 || to < 0 || from >= numVertices() || to >= numVertices() || from == to) {
    throw std::invalid_argument("FlowNetwork::addArc: bad endpoints");
  }
  auto& g = impl_->graph;
  Edge e = boost::add_edge(static_cast<std::size_t>(from), static_cast<std::size_t>(to), g).first;
  Edge r = boost::add_edge(static_cast<std::size_t>(to), static_cast<std::size_t>(from), g).first;
  g[e].capacity = capacity;
  g[r].capacity = 0;
  g[e].reverse = r;
  g[r].reverse = e;
  impl_->forward.push_back(e);
  impl_->tails.push_back(from);
  impl_->heads.push_back(to);
  return static_cast<int>(impl_->forward.size()) - 1;
}

void FlowNetwork::setCapacity(int arc, Capacity capacity) {
  impl_->graph[impl_->forward.at(static_cast<std::size_t>(arc))].capacity = capacity;
}

Capacity FlowNetwork::capacity(int arc) const {
  return impl_->graph[impl_->forward.at(static_cast<std::size_t>(arc))].capacity;
}

int FlowNetwork::from(int arc) const {
  return impl_->tails.at(static_cast<std::size_t>(arc));
}
int FlowNetwork::to(int arc) const {
  return impl_->heads.at(static_cast<std::size_t>(arc));
}

void FlowNetwork::chargeTo(Budget* budget) {
  impl_->budget = budget;
}

Capacity FlowNetwork::maxFlow(int s, int t) {
  if (s == t) throw std::invalid_argument("FlowNetwork::maxFlow: source equals sink");
  auto& g = impl_->graph;
  if (impl_->budget != nullptr) {
    impl_->budget->spend(static_cast<std::int64_t>(boost::num_edges(g) + boost::num_vertices(g)) +
                         kWorkPerCall);
  }
  impl_->last_source = s;
  return boost::push_relabel_max_flow(
      g, static_cast<std::size_t>(s), static_cast<std::size_t>(t),
      boost::get(&EdgeProps::capacity, g), boost::get(&EdgeProps::residual, g),
      boost::get(&EdgeProps::reverse, g), boost::get(boost::vertex_index, g));
}

std::vector<bool> FlowNetwork::sourceSideOfMinCut() const {
  // The vertices reachable from the source through arcs with residual capacity
  // left: the source side of a minimum cut (computed here rather than read from
  // Boykov-Kolmogorov's colours, whose free vertices may lie on either side).
  const auto& g = impl_->graph;
  std::vector<bool> side(boost::num_vertices(g), false);
  std::vector<std::size_t> stack{static_cast<std::size_t>(impl_->last_source)};
  side[stack.back()] = true;
  while (!stack.empty()) {
    std::size_t v = stack.back();
    stack.pop_back();
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      std::size_t w = boost::target(e, g);
      if (!side[w] && g[e].residual > 0) {
        side[w] = true;
        stack.push_back(w);
      }
    }
  }
  return side;
}

Capacity FlowNetwork::flow(int arc) const {
  const auto& g = impl_->graph;
  const Edge& e = impl_->forward.at(static_cast<std::size_t>(arc));
  return g[e].capacity - g[e].residual;
}

std::vector<Capacity> FlowNetwork::flows() const {
  const auto& g = impl_->graph;
  std::vector<Capacity> out;
  out.reserve(impl_->forward.size());
  for (const Edge& e : impl_->forward) out.push_back(g[e].capacity - g[e].residual);
  return out;
}

}  // namespace blink::treegen
