// Tree generation: the public face of src/treegen. Given a topology (usually an
// allocation view), packs weighted spanning trees for a collective and reports the
// rate reached against the exact bound.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "topology/topology.hpp"
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
};

// Broadcast from `root_gpu` (its gpu_index); Reduce uses the same trees reversed.
// Throws blinkInvalidArgument when root_gpu is not a GPU of the topology.
TreeSet packBroadcast(const topo::Topology& topology, int root_gpu, const PackOptions& options);

// AllGather: one set of trees per GPU, all running at once; ReduceScatter uses the
// same trees reversed.
TreeSet packAllGather(const topo::Topology& topology, const PackOptions& options);

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

double broadcastBoundGbps(const topo::Topology& topology, int root_gpu,
                          const std::set<topo::LinkKind>& links);
double allGatherBoundGbps(const topo::Topology& topology, const std::set<topo::LinkKind>& links);

}  // namespace blink::treegen
