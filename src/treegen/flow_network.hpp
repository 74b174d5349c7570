// A reusable max-flow network over Boost.Graph's Boykov-Kolmogorov max-flow, with
// integer capacities. Tree packing asks thousands of max-flow questions of one
// graph whose capacities change; building the Boost graph once and only rewriting
// capacities keeps that cheap. Boost headers stay in flow_network.cpp (they are
// slow to compile).
#pragma once

#include <memory>
#include <vector>

namespace blink::treegen {

using Capacity = long long;

class FlowNetwork {
 public:
  explicit FlowNetwork(int num_vertices);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  FlowNetwork(FlowNetwork&&) noexcept;
  FlowNetwork& operator=(FlowNetwork&&) noexcept;

  int numVertices() const;
  int numArcs() const;
  // Adds the arc from -> to and returns its id (0, 1, ... in order of addition).
  int addArc(int from, int to, Capacity capacity);
  void setCapacity(int arc, Capacity capacity);
  Capacity capacity(int arc) const;
  int from(int arc) const;
  int to(int arc) const;

  // The maximum flow value from s to t under the current capacities.
  Capacity maxFlow(int s, int t);
  // After maxFlow(s, t): for each vertex, whether it is on the source side of a
  // minimum s-t cut.
  std::vector<bool> sourceSideOfMinCut() const;
  // After maxFlow: the flow on each arc.
  Capacity flow(int arc) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace blink::treegen
