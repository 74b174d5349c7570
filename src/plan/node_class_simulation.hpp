// Simulating one node for a cluster of identical nodes that all run the same program.
//
// On a cluster whose nodes are one class (the same devices in the same order, the same
// links) a plan can be symmetric: relabelling node v as node v ^ d (its ranks and
// vertices alike, the segments of each chunk permuted the same way) maps the plan onto
// itself for every d. lowerRailHalving's plan on a power of two of identical nodes is
// (recursive halving and doubling pairs node v with v ^ d; the intra-node phases feed
// and drain each node's blocks in the order its steps take them). Then every node's
// steps start and end when node 0's do, and node 0 alone tells the plan's time: its
// intra-node steps as they are, and each message between node 0 and node d as a
// message of node 0 with itself (its Send to d, and its receive from d, which the
// relabelling by d makes the image of that Send's receive), whose route runs out
// through node 0's NIC and back in through its NIC (d's vertices mapped onto node 0's).
// The flows on node 0's links are then those of the full simulation: what crosses d's
// links inbound is, relabelled, what crosses node 0's.
//
// The simulation costs one node's events whatever the node count. The caller vouches
// for the symmetry (a plan without it gets node 0's view, which no full simulation
// confirms); tests/unit/test_node_class_simulation.cpp compares both on the plans the
// planner gives it.
#pragma once

#include <optional>

#include "plan/plan.hpp"
#include "plan/simulator.hpp"
#include "topology/topology.hpp"

namespace blink::plan {

// Whether the topology's nodes allow it: a power of two of nodes (at least one) with
// the same number of GPUs each, all of one class (the same devices and models in
// the same order, the same links, none straight between two nodes).
bool oneNodeSimulationApplies(const topo::Topology& topology);

// The simulated result of `plan` seen from its first node, or nullopt where the
// topology's nodes are not one class (different devices, models or links, links
// straight between nodes), their ranks differ (in number, or a rank's GPU is not the
// image of its twin's on node 0), or the node count is not a power of two.
// channel_seconds are the representative's (its channels renumbered). Throws as
// simulate() does on a malformed plan.
std::optional<SimResult> simulateOneNode(const Plan& plan, const topo::Topology& topology,
                                         const SimOptions& options = {});

}  // namespace blink::plan
