// The strength of an undirected capacitated graph: the value of a maximum fractional
// packing of undirected spanning trees. An AllReduce run as reduce + broadcast over
// the same trees uses every tree edge in both directions at once, so its best rate
// over a link graph is this number (with c_uv the capacity of the link pair {u,v}).
//
// By Nash-Williams/Tutte (fractional form) it equals
//   sigma(G) = min over partitions P of V with |P| >= 2 of c(delta(P)) / (|P| - 1),
// where c(delta(P)) is the total capacity of edges between different classes.
#pragma once

#include <vector>

namespace blink::treegen {

struct UndirectedEdge {
  int u;
  int v;
  double capacity;  // > 0; parallel edges are allowed
};

struct StrengthResult {
  double strength;
  // Class id (0, 1, ... in order of each class's lowest vertex) of every vertex in an
  // optimal partition: c(delta(P)) / (|P| - 1) equals `strength` for it.
  std::vector<int> partition_class;
};

// sigma(G) for vertices 0..num_vertices-1, exact up to floating-point rounding, with
// an optimal partition as certificate. Self-loops and zero-capacity edges are
// ignored. A disconnected graph has strength 0 and its partition is its connected
// components. Deterministic: equal inputs give equal outputs.
//
// Throws std::invalid_argument when num_vertices < 2, a vertex id is out of range, or
// a capacity is negative or not finite.
//
// Time: at most n-1 Newton (Dinkelbach) steps, each of n-1 minimum cuts on graphs of
// at most n+1 vertices (in practice only a few steps are needed).
StrengthResult graphStrength(int num_vertices, const std::vector<UndirectedEdge>& edges);

// c(delta(P)) / (|P| - 1) for the partition given by class ids per vertex (any
// non-negative ids; |P| is the number of distinct ids). Returns +infinity when |P| < 2.
// Throws std::invalid_argument on bad sizes or vertex ids.
double partitionStrengthValue(int num_vertices, const std::vector<UndirectedEdge>& edges,
                              const std::vector<int>& partition_class);

}  // namespace blink::treegen
