// Tree generation: the public face of src/treegen. Given a topology (usually an
// allocation view), packs weighted spanning trees for a collective and reports the
// rate reached against the exact bound.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "topology/topology.hpp"
#include "treegen/budget.hpp"
#include "treegen/tree_set.hpp"

namespace blink::treegen {

enum class Method {
  Exact,  // Lovász's constructive packing on integer units: reaches the bound
  Mwu,    // the Blink paper's multiplicative-weight packing, (1-epsilon)-optimal
};

std::optional<Method> parseMethod(const std::string& name);
std::string toString(Method method);

struct PackOptions {
  Method method = Method::Exact;
  double epsilon = 0.1;            // for Mwu, in (0, 1)
  std::set<topo::LinkKind> links;  // link kinds trees may use; empty = all
  bool minimize = false;           // reduce the tree count afterwards (see minimize.hpp)
  double tolerance = 0.0;          // rate the minimisation may give up, as a fraction
  // The work allowed (budget.hpp): `budget` when set, an account several packings
  // share (one planning call's); else budget_ms (0: BLINK_PLAN_BUDGET_MS) per packing.
  // Past it a packing returns what it has (TreeSet::budget_exhausted): the exact
  // packer the trees finished so far, MWU its current packing scaled to fit, the
  // minimisation the trees it has not yet merged. The rate may then be below the
  // bound, or 0 when nothing usable was found.
  double budget_ms = 0.0;
  SharedBudget budget;
};

// Broadcast from `root_gpu` (its gpu_index); Reduce uses the same trees reversed.
// Throws blinkInvalidArgument when root_gpu is not a GPU of the topology.
TreeSet packBroadcast(const topo::Topology& topology, int root_gpu, const PackOptions& options);

// AllGather: one set of trees per GPU, all running at once; ReduceScatter uses the
// same trees reversed.
TreeSet packAllGather(const topo::Topology& topology, const PackOptions& options);

// AllReduce as reduce + broadcast over undirected spanning trees (each tree reduces
// a piece of the buffer up to its root and broadcasts it back down over the same
// links): an exact packing at the graph's strength, the best rate of any tree
// schedule on symmetric links (spanning_tree_packer.hpp). Switches and PCIe
// vertices are split off first (undirected_splitting.hpp); then the bound is the
// split graph's strength and a note says trees through switches might do better.
// The set is `undirected`, its root_gpu the lowest GPU (each tree names its own
// root), its rate the AllReduce's algorithm bandwidth (bytes / time). Method
// and epsilon are ignored (always exact); minimize and the budget apply.
TreeSet packReduceBroadcast(const topo::Topology& topology, const PackOptions& options);

// The bounds alone (GB/s), for tools and the simulator. The two AllReduce shape
// bounds hold for their phases run one after the other; a plan that overlaps the
// phases on opposite link directions can do better, up to the minimum cut (the
// broadcast bound), which bounds every AllReduce.
struct AllReduceBounds {
  // Reduce + broadcast over one root's trees at once: each tree edge is used in
  // both directions, so the rate is the strength of the undirected graph (the best
  // fractional packing of spanning trees). Time = bytes / this.
  // For graphs with switches (Steiner trees) the broadcast bound stands in, and
  // reduce_broadcast_exact is false.
  double reduce_broadcast_gbps = 0.0;
  bool reduce_broadcast_exact = true;
  // ReduceScatter then AllGather: time = 2 * (bytes / GPUs) / allgather rate.
  double allgather_gbps = 0.0;
  int gpus = 0;
  // Seconds for `bytes` under each shape, and the better one.
  double reduceBroadcastSeconds(double bytes) const;
  double reduceScatterAllGatherSeconds(double bytes) const;
  double bestSeconds(double bytes) const;
};
AllReduceBounds allReduceBounds(const topo::Topology& topology,
                                const std::set<topo::LinkKind>& links);

// The lane: the largest GB/s that every allowed link's capacity (and every rate an
// exact packing reaches on integral lanes) is a whole multiple of. An exact
// Broadcast packing at a bound of k lanes holds at most k trees; perf/treegen
// reports trees over that integral optimum.
double laneGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links);

double broadcastBoundGbps(const topo::Topology& topology, int root_gpu,
                          const std::set<topo::LinkKind>& links);

// An upper bound on the algorithm bandwidth (bytes / time) of ANY AllReduce on the
// topology's GPUs, whatever its shape, for algorithms that combine only on GPUs
// (switches, CPUs and NICs pass each message on to one place, never reduce or
// multicast) and move every element as a whole value (no coding across elements),
// which is what Blink's plans and the baselines do. The smaller of:
// - the minimum cut: for a set X of GPUs holding some but not all, every result in
//   X depends on the inputs outside it, so at least `bytes` cross into X (bounded
//   here by the cuts that separate GPU 0 from another GPU: the broadcast bound);
// - the total traffic. Split the GPUs into P parties (each GPU alone; each node's
//   GPUs together) and count, for one element, the deliveries from one party into
//   another, letting a party's GPUs share what they know for free. Before the first
//   party knows the element's full result, each of the other P - 1 has sent at
//   least once (its inputs must reach that party); the delivery that completes the
//   first party completes no other, so each of the other P - 1 needs one more
//   delivery afterwards: the one-way gossip bound, 2(P - 1) deliveries (ordered by
//   arrival). Each enters its party (the GPU itself, or the node's devices) over a
//   link from outside it and leaves the sender's party over a link out of it, so
//   time >= 2(P - 1) bytes / (the total capacity into the parties), and likewise
//   out of them. For GPU parties on a
//   DGX-1V (8 GPUs, 165.75 GB/s into each) that is 94.7 GB/s, where the minimum cut
//   allows 165.75; for node parties it is 2(N - 1)/N of the buffer through each
//   node's NICs.
// 0 for fewer than two GPUs or a GPU that cannot be reached.
double allReduceBoundGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links);
double allGatherBoundGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links);

}  // namespace blink::treegen
