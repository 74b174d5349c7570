// Chooses the plan for a collective: every candidate (Blink's trees in each shape,
// on several nodes also the hierarchical composition of hierarchical.hpp, and the
// ring and double-binary-tree baselines) is built, timed by the simulator,
// and the fastest wins. A flat tree plan whose trees finish unevenly is built once
// more with the data split by the rates the trees reached (PlannerOptions::
// rebalance). Because the baselines are candidates, Blink is never predicted slower
// than a ring; `why` says what was compared. Every packing of one call draws on
// one planning budget (PackOptions::budget, treegen/budget.hpp); a tree candidate
// whose packing ran out of it with nothing usable is left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/lower_trees.hpp"
#include "plan/plan.hpp"
#include "plan/simulator.hpp"
#include "treegen/treegen.hpp"

namespace blink::plan {

struct Candidate {
  // "blink-trees", "blink-trees reduce+broadcast", "blink-hierarchical" (multi-node),
  // "ring", "double-binary-tree"
  std::string name;
  double seconds = 0.0;
  bool available = true;  // false when the algorithm does not apply (why_not says why)
  std::string why_not;
};

struct Choice {
  Plan plan;
  double seconds = 0.0;
  std::vector<Candidate> candidates;
  std::string why;  // one line: the winner and the runner-up with their predicted times
};

struct PlannerOptions {
  LowerOptions lower;
  SimOptions sim;
  treegen::PackOptions pack;    // how trees are packed (exact by default)
  bool allow_baselines = true;  // false: Blink's trees only (for comparisons)
  // Flat tree plans whose trees finish unevenly in the simulation are lowered once
  // more with the data split by the rates the trees reached (LowerOptions::
  // data_weights), keeping the faster plan.
  bool rebalance = true;
  // Only candidates of this family (see familyOf); empty: every candidate. A family
  // that does not apply to the call makes choosePlan throw blinkUnsupported.
  std::string only_family;
  // Where ranks combine reductions with their CPUs (host ranks), what it costs: per
  // plan rank the bytes per second at which it combines. Each candidate's time then
  // adds its busiest rank's combining (the simulator prices links only). Empty: free
  // (GPUs combine at memory speed, far above their links).
  std::vector<double> combine_bytes_per_s;
  // false: on a graph spanning nodes, no flat trees over the whole cluster unless
  // only_family asks for them. Flat trees put several channels on one NIC, which the
  // simulator shares by the channels' rates, and route a rank's bytes to whichever
  // NIC a tree's edge crosses; the runtime's transports between nodes put each rank's
  // bytes on one NIC (UCX: the rank's port; PMPI: Open MPI's choice) and pace only
  // where asked (BLINK_PACE_BETWEEN_NODES). The hierarchical plan gives each NIC one
  // stream per direction. Measured across emulated hosts (2 x 2 ranks, 2 NICs at
  // 1 Gbit/s each): AllReduce 16-64 MiB hierarchical 0.35 GB/s bus bandwidth, flat
  // trees 0.32-0.33, where the simulator predicted the trees 3-15% faster; paced flat
  // trees not shown faster than the hierarchical plan (behind over UCX, within the
  // noise over PMPI), and Broadcast flat
  // trees at one NIC's rate paced or not (perf/README.md, "Pacing between nodes").
  bool flat_trees_across_nodes = true;
};

// The family of a candidate's algorithm name: "trees" (both AllReduce shapes),
// "hierarchical", "ring" or "dbt" (double binary trees); the name itself otherwise.
std::string familyOf(const std::string& algorithm);

// Bus bandwidth factor of nccl-tests: busbw = algbw * factor.
double busBandwidthFactor(Collective c, int ranks);

// The best plan for `bytes` (root_rank for Broadcast/Reduce). Throws
// blinkInvalidArgument for a bad root or a buffer that is not whole elements (for
// AllGather/ReduceScatter: whole segments).
Choice choosePlan(Collective collective, const topo::Topology& topology, std::uint64_t bytes,
                  int root_rank, const PlannerOptions& options);

// Flat trees over a whole cluster cost a packing of the cluster graph (max-flows
// over every GPU and NIC) and a simulation of every chunk of every tree, and on
// clusters they gain little over the hierarchical plan (dgx1-v100:2, AllReduce of
// 1 GiB: 21776 us flat, 21877 us hierarchical; dgx1-v100:4: 32602 us against
// 32619 us) while their cost grows past seconds from 32 GPUs on. So on GPUs that
// lie on several nodes they are tried only up to this many GPUs.
inline constexpr std::size_t kFlatClusterMaxGpus = 16;

// The ring and double-binary-tree baselines are built and simulated up to this many
// GPUs. Beyond, their plans outgrow planning (hgx-h100:128, 1024 GPUs: eight rings of
// 2 x 1023 hops over 1024 pieces each, about 16.7 M messages; the double binary tree
// about 2 M at 1 GiB), while the hierarchical plan stays within its message budget;
// choosePlan lists them as not available, unless no other plan is left or only a
// baseline family was asked for.
inline constexpr std::size_t kBaselineMaxGpus = 256;

// Whether blinkCandidates packs flat trees over the whole topology: on one node
// always; on several nodes up to kFlatClusterMaxGpus GPUs.
bool flatTreesWorthTrying(const topo::Topology& topology);

// Blink's candidates alone, each lowered and simulated: flat trees over the whole
// topology (for AllReduce both shapes: ReduceScatter + AllGather, and reduce +
// broadcast over undirected trees packed at the graph's strength, the latter within
// one node and only where its packed rate is not below the former's; on several nodes
// only where flatTreesWorthTrying), and where the GPUs lie on several nodes the
// hierarchical plan ("blink-hierarchical").
std::vector<std::pair<Plan, double>> blinkCandidates(Collective collective,
                                                     const topo::Topology& topology,
                                                     std::uint64_t bytes, int root_rank,
                                                     const PlannerOptions& options);

// The optimal algorithm bandwidth (bytes / time, GB/s) from the bounds of treegen:
// Broadcast/Reduce: the broadcast bound; AllGather/ReduceScatter: ranks * the
// per-GPU rate; AllReduce: treegen::allReduceBoundGbps, the smaller of the minimum
// cut and the total-traffic bound (no algorithm that reduces only on GPUs beats it,
// whatever its shape; it need not be reachable).
double optimalAlgbwGbps(Collective collective, const topo::Topology& topology, int root_rank,
                        const std::set<topo::LinkKind>& links);

}  // namespace blink::plan
