// An optimal fractional packing of undirected spanning trees: trees with weights
// whose total is the graph's strength (strength.hpp), and which together use no
// edge beyond its capacity. This is the reduce+broadcast AllReduce's packing: each
// tree reduces a piece of the buffer up to a root and broadcasts it back down,
// using each of its links in both directions at once.
//
// How (every step exact on integer capacities):
// - Recursion on an optimal partition P (graphStrength's certificate). Every tree
//   of an optimal packing crosses P exactly |P| - 1 times, so it is a spanning tree
//   of the quotient G/P together with a spanning tree of every class. The quotient
//   has strength sigma with its singleton partition tight (c(E) = sigma (|P| - 1)),
//   and each class C has strength >= sigma (a cheaper partition of C would refine P
//   into one below sigma). So pack the quotient and every class recursively, scale
//   each class's packing down to sigma, and zip the packings together: lay each out
//   on [0, sigma) by cumulative weight and cut at every boundary; each piece is one
//   tree (a quotient tree plus one tree per class).
// - Base case, a uniformly dense graph (the singleton partition is optimal: with
//   capacities scaled by q, c(E) = p (n - 1) for an integer p). Orient it so that
//   every vertex but vertex 0 has in-degree exactly p (a bipartite max-flow; Hall's
//   condition is the partition inequality for {Z's vertices alone, the rest}). Then
//   every vertex set X without vertex 0 has in-degree p|X| - i(X) >= p, since
//   i(X) <= p(|X| - 1) is the partition inequality for {X, the others alone}. By
//   Edmonds' branching theorem the orientation holds p arc-disjoint spanning
//   arborescences from vertex 0, which the exact packer (exact_packer.hpp) finds
//   with multiplicities; forgetting their directions they are spanning trees that
//   use each edge at most as often as its two orientations allow, i.e. its capacity.
//   (Frank's orientation theorem, specialised to the tight case.)
#pragma once

#include <vector>

#include "treegen/budget.hpp"
#include "treegen/flow_network.hpp"

namespace blink::treegen {

struct CapacitatedEdge {
  int u = 0;
  int v = 0;
  Capacity capacity = 0;  // > 0; parallel edges allowed
};

struct WeightedSpanningTree {
  std::vector<int> edges;  // indices into the input edges, n - 1 of them
  double weight = 0.0;     // in capacity units
};

struct SpanningTreePacking {
  double strength = 0.0;  // in capacity units; 0 when the graph is disconnected
  std::vector<WeightedSpanningTree> trees;
  // The budget ran out: `trees` is what was finished (possibly empty, or a packing
  // whose total is below `strength`).
  bool cut_short = false;
};

// Packs spanning trees of vertices 0..num_vertices-1 (num_vertices >= 2) at the
// graph's strength. Charges `budget` (if any) deterministically: the networks the
// exact packer and the orientation solve, and each strength computation's size;
// once it is spent, returns with cut_short and no trees.
SpanningTreePacking packSpanningTrees(int num_vertices, const std::vector<CapacitatedEdge>& edges,
                                      Budget* budget);

}  // namespace blink::treegen
