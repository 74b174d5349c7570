// Which NICs each rank's share of the inter-node phase leaves on: the ports the
// planner gives it (plan/node_layout.hpp: the nearest NIC to its GPU or socket, round
// robin among equals, spare NICs to the ranks with the fewest), as indices into its
// node's list of network devices (topology/host_nics.hpp), which is also the order of
// the UCX transport's workers. A pure function of the job's topology, so every rank
// computes the same map.
#pragma once

#include <string>
#include <vector>

#include "runtime/job_topology.hpp"

namespace blink::runtime {

struct NicAssignment {
  // Per communicator rank: the NIC indices of its ports, in port order; empty where
  // the topology's NICs are not this machine's list (BLINK_TOPO, a virtual NIC).
  std::vector<std::vector<int>> nics_of_rank;
  // "rank 0 (node 0) -> nic0 eth0, rank 1 (node 0) -> nic1 eth1, ..." for INFO.
  std::string text;
};

NicAssignment assignNics(const JobTopology& job);

}  // namespace blink::runtime
