// A flow-level simulator: predicts how long a Plan takes on a Topology.
//
// The model (deterministic; time advances from event to event):
// - Every Send and its matching Recv/RecvReduce (k-th Send a->b on channel c with
//   the k-th receive b<-a on channel c) form one transfer of the Send's `bytes`
//   along the Send's route. It becomes ready once the Send's deps and the
//   receive's deps have all completed. It then waits its latency (the sum of
//   latency_us over the route's hops, plus SimOptions::step_overhead_us), then its
//   bytes flow. Both steps complete when the last byte arrives.
// - A hop (u, v) of a route is one resource whose capacity is the total capacity
//   of every link from u to v (a route crossing a hop twice loads it twice).
//   Concurrent flows share the hops by max-min fairness (progressive filling),
//   weighted by the share of each flow's channel (Plan::channel_shares; equal when
//   the plan has none), recomputed whenever a flow starts or ends. Latency phases
//   use no bandwidth.
// - A Copy takes bytes / the rank's copy rate: the capacity of the fastest link
//   into or out of the rank's GPU (10 GB/s if it has none). Copies use no links and
//   do not slow each other down.
// - Throws blink::Error(blinkInvalidInput) on a malformed plan (peer, route or dep
//   out of range; a Send or receive without a partner; a channel share that is not
//   positive and finite, or a channel without one), a route hop with no link in
//   the topology, or a plan that deadlocks (some step can never start).
#pragma once

#include <cstddef>
#include <vector>

#include "plan/plan.hpp"
#include "topology/topology.hpp"

namespace blink::plan {

struct SimOptions {
  // Fixed cost charged to every Send before its data moves (software / launch), on
  // top of the route's link latencies.
  double step_overhead_us = 1.0;
};

struct SimResult {
  double seconds = 0.0;       // when the last step completes
  std::size_t transfers = 0;  // Send/receive pairs
  // bytes carried / (capacity * seconds) of the busiest directed hop (all links
  // from u to v together); 0 when nothing moved or no time passed.
  double busiest_link_utilisation = 0.0;
  // When the last transfer of each channel (index: Step::channel) completed; 0 for a
  // channel without transfers. Shows which tree of a plan finishes last.
  std::vector<double> channel_seconds;
};

SimResult simulate(const Plan& plan, const topo::Topology& topology,
                   const SimOptions& options = {});

}  // namespace blink::plan
