// How a topology whose GPUs lie on several nodes divides into nodes: which GPU sends
// its inter-node traffic through which NIC (NodeLayout), each node's own
// sub-topology (where its trees are packed), and routes inside and between nodes.
// The hierarchical composition (hierarchical.hpp) is built on these.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "topology/topology.hpp"
#include "treegen/treegen.hpp"

namespace blink::plan {

// The nodes of a topology as the composition sees them. A port is a GPU with one NIC
// its inter-node traffic uses: every GPU has one (its nearest NIC, the least loaded on
// a tie; none when no NIC is reachable inside its node); where a node has more NICs
// than GPUs, each GPU first takes the nearest NIC nobody has, and the NICs left over
// go to the GPUs with the fewest ports (nearest first), so every NIC carries traffic.
struct NodeLayout {
  struct Port {
    int rank = 0;
    std::optional<topo::Vertex> nic;
  };
  std::vector<int> node_ids;                     // Device::node of each node with GPUs, increasing
  std::vector<std::vector<int>> ranks;           // per node: its ranks, increasing
  std::vector<std::vector<Port>> ports;          // per node: its ports, by rank then NIC
  std::vector<int> node_of_rank;                 // index into node_ids
  std::vector<int> local_of_rank;                // position in ranks[node_of_rank]
  std::vector<std::optional<topo::Vertex>> nic;  // per rank: the NIC of its first port
};

NodeLayout nodeLayout(const topo::Topology& topology);

// True when the topology's GPUs lie on at least two nodes.
bool isMultiNode(const topo::Topology& topology);

// The route with the fewest hops from `from` to `to`, the widest (largest bottleneck)
// among those; every vertex in between must pass `through`. Empty when none exists.
std::vector<topo::Vertex> shortestWidestRoute(const topo::Topology& t, topo::Vertex from,
                                              topo::Vertex to,
                                              const std::function<bool(topo::Vertex)>& through);

// The smallest total hop capacity (GB/s) along `route`.
double bottleneckGbps(const topo::Topology& t, const std::vector<topo::Vertex>& route);

// Inside node `node`: every device of it but GPUs and NICs may relay.
std::function<bool(topo::Vertex)> insideNode(const topo::Topology& t, int node);

struct NodeTopology {
  topo::Topology sub;
  std::vector<topo::Vertex> to_full;  // sub vertex -> vertex of the whole topology
};

using HopSet = std::set<std::pair<topo::Vertex, topo::Vertex>>;

// The devices of one node without its NICs (and without the network), and the links
// among them but those in `without`: where the node's trees are packed.
NodeTopology nodeTopology(const topo::Topology& t, int node, const HopSet& without = {});

// Whether every GPU of `t` reaches every other one (through any devices).
bool gpusConnected(const topo::Topology& t);

// `set`, packed on a node's sub-topology, in the vertices of the whole topology.
treegen::TreeSet toFull(treegen::TreeSet set, const std::vector<topo::Vertex>& to_full);

}  // namespace blink::plan
