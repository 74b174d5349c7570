// Chu–Liu/Edmonds by repeated contraction, O(V * E).
//
// Each round gives every non-root vertex its cheapest incoming arc. Without a cycle
// those arcs are the answer. Otherwise each cycle C becomes one vertex, and an arc
// u -> v with v in C costs cost - cost(best arc into v): that difference is what
// entering C at v (and so dropping C's arc into v) costs on top of keeping all of C,
// so an optimum of the contracted graph expands to an optimum of this one.
//
// Expansion walks the rounds back down. Every arc of a contracted graph remembers
// the arc one round below it came from; the single chosen arc entering a contracted
// cycle has an original head h in that cycle, and the cycle keeps every arc except
// its arc into h. Heads are looked up in the round below, never in the contracted
// graph, which is the step that is easy to get wrong.
#include "treegen/min_arborescence.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace blink::treegen {

namespace {

// What expansion needs to remember of one contracting round; the arc costs of the
// round are not needed once the next round is built, so they are not kept.
struct Round {
  std::vector<int> below;     // arc i came from arc below[i] of the round before (or the input)
  std::vector<int> head;      // head of arc i, in this round's vertex numbering
  std::vector<int> best_in;   // cheapest arc into each vertex (-1 for the root)
  std::vector<int> cycle_of;  // which cycle of this round each vertex lies on, or -1
};

struct WorkingArcs {
  std::vector<int> from, to, below;
  std::vector<double> cost;

  void clear() {
    from.clear();
    to.clear();
    below.clear();
    cost.clear();
  }
  void push(int f, int t, double c, int b) {
    from.push_back(f);
    to.push_back(t);
    cost.push_back(c);
    below.push_back(b);
  }
  int size() const { return static_cast<int>(from.size()); }
};

void validate(int num_vertices, int root, const std::vector<WeightedArc>& arcs) {
  if (num_vertices < 1) {
    throw Error(blinkInvalidInput, "minCostArborescence: num_vertices must be at least 1, got " +
                                       std::to_string(num_vertices));
  }
  if (root < 0 || root >= num_vertices) {
    throw Error(blinkInvalidInput, "minCostArborescence: root " + std::to_string(root) +
                                       " is not a vertex of a graph with " +
                                       std::to_string(num_vertices) + " vertices");
  }
  for (std::size_t i = 0; i < arcs.size(); ++i) {
    const WeightedArc& a = arcs[i];
    if (a.from < 0 || a.from >= num_vertices || a.to < 0 || a.to >= num_vertices) {
      throw Error(blinkInvalidInput, "minCostArborescence: arc " + std::to_string(i) + " (" +
                                         std::to_string(a.from) + " -> " + std::to_string(a.to) +
                                         ") has an end outside 0.." +
                                         std::to_string(num_vertices - 1));
    }
    // Negative costs would still give a minimum, but the packer never produces them,
    // so one is a bug upstream worth stopping at; NaN would make every comparison lie.
    if (!std::isfinite(a.cost) || a.cost < 0.0) {
      throw Error(blinkInvalidInput, "minCostArborescence: arc " + std::to_string(i) +
                                         " has cost " + std::to_string(a.cost) +
                                         "; costs must be finite and >= 0");
    }
  }
}

}  // namespace

std::optional<std::vector<int>> minCostArborescence(int num_vertices, int root,
                                                    const std::vector<WeightedArc>& arcs) {
  validate(num_vertices, root, arcs);

  WorkingArcs cur;
  for (std::size_t i = 0; i < arcs.size(); ++i) {
    const WeightedArc& a = arcs[i];
    // Neither can be in any arborescence; dropping them now keeps the rounds honest
    // (the root never gets a best arc, a self-loop is never a "cycle").
    if (a.from == a.to || a.to == root) continue;
    cur.push(a.from, a.to, a.cost, static_cast<int>(i));
  }

  std::vector<Round> rounds;
  int n = num_vertices;
  int r = root;
  WorkingArcs next;

  for (;;) {
    Round round;
    round.below = cur.below;
    round.head = cur.to;

    // Strict '<' over arcs in index order: the lowest index wins a tie. Contraction
    // appends arcs in the order of the round below, so index order here agrees with
    // index order in the input, and the rule means the same thing in every round.
    round.best_in.assign(static_cast<std::size_t>(n), -1);
    for (int i = 0; i < cur.size(); ++i) {
      int& best = round.best_in[static_cast<std::size_t>(cur.to[static_cast<std::size_t>(i)])];
      if (best < 0 ||
          cur.cost[static_cast<std::size_t>(i)] < cur.cost[static_cast<std::size_t>(best)]) {
        best = i;
      }
    }
    // A vertex of some round with no arc in stands for a set of input vertices that
    // no arc enters from outside, and the root is not among them, so they are
    // unreachable. Conversely, if every round's vertices all have an arc in, the last
    // round's best arcs form an arborescence, so everything is reachable: this check
    // alone decides reachability.
    for (int v = 0; v < n; ++v) {
      if (v != r && round.best_in[static_cast<std::size_t>(v)] < 0) return std::nullopt;
    }

    // Follow best arcs backwards from each vertex; a walk that runs into its own
    // trail has found a cycle. Each vertex is walked at most once overall.
    round.cycle_of.assign(static_cast<std::size_t>(n), -1);
    std::vector<int> walk_of(static_cast<std::size_t>(n), -1);
    walk_of[static_cast<std::size_t>(r)] = n;  // every walk ends at the root at the latest
    int num_cycles = 0;
    for (int start = 0; start < n; ++start) {
      int u = start;
      while (walk_of[static_cast<std::size_t>(u)] < 0) {
        walk_of[static_cast<std::size_t>(u)] = start;
        u = cur.from[static_cast<std::size_t>(round.best_in[static_cast<std::size_t>(u)])];
      }
      if (walk_of[static_cast<std::size_t>(u)] != start ||
          round.cycle_of[static_cast<std::size_t>(u)] >= 0) {
        continue;  // reached the root, or a trail (and any cycle on it) seen before
      }
      int w = u;
      do {
        round.cycle_of[static_cast<std::size_t>(w)] = num_cycles;
        w = cur.from[static_cast<std::size_t>(round.best_in[static_cast<std::size_t>(w)])];
      } while (w != u);
      ++num_cycles;
    }

    if (num_cycles == 0) {
      rounds.push_back(std::move(round));
      break;
    }

    // Number the next round's vertices in order of their lowest member, so the
    // contracted graph (and with it every tie) depends on the input alone.
    std::vector<int> merged(static_cast<std::size_t>(n));
    std::vector<int> cycle_vertex(static_cast<std::size_t>(num_cycles), -1);
    int next_n = 0;
    for (int v = 0; v < n; ++v) {
      int c = round.cycle_of[static_cast<std::size_t>(v)];
      if (c < 0) {
        merged[static_cast<std::size_t>(v)] = next_n++;
      } else {
        if (cycle_vertex[static_cast<std::size_t>(c)] < 0) {
          cycle_vertex[static_cast<std::size_t>(c)] = next_n++;
        }
        merged[static_cast<std::size_t>(v)] = cycle_vertex[static_cast<std::size_t>(c)];
      }
    }
    int next_r = merged[static_cast<std::size_t>(r)];

    next.clear();
    for (int i = 0; i < cur.size(); ++i) {
      const auto si = static_cast<std::size_t>(i);
      int u = merged[static_cast<std::size_t>(cur.from[si])];
      int v = merged[static_cast<std::size_t>(cur.to[si])];
      // Arcs inside a contracted cycle and arcs into the root can never be chosen.
      if (u == v || v == next_r) continue;
      double c = cur.cost[si];
      // Only arcs entering a cycle get cheaper: choosing one replaces that cycle
      // arc. A vertex off every cycle keeps its own in-arcs, whose relative order
      // is all that matters to it.
      const auto head = static_cast<std::size_t>(cur.to[si]);
      if (round.cycle_of[head] >= 0) {
        c -= cur.cost[static_cast<std::size_t>(round.best_in[head])];
      }
      next.push(u, v, c, i);
    }

    rounds.push_back(std::move(round));
    std::swap(cur, next);
    n = next_n;
    r = next_r;
  }

  // The last round has no cycle: its best arcs are its answer.
  const Round& top = rounds.back();
  std::vector<int> chosen;
  chosen.reserve(static_cast<std::size_t>(num_vertices - 1));
  for (std::size_t v = 0; v < top.best_in.size(); ++v) {
    if (top.best_in[v] >= 0) chosen.push_back(top.best_in[v]);
  }

  std::vector<int> lower_chosen;
  for (std::size_t k = rounds.size() - 1; k-- > 0;) {
    const Round& upper = rounds[k + 1];
    const Round& lower = rounds[k];
    std::vector<char> entered(lower.cycle_of.size(), 0);
    lower_chosen.clear();
    for (int a : chosen) {
      int b = upper.below[static_cast<std::size_t>(a)];
      lower_chosen.push_back(b);
      entered[static_cast<std::size_t>(lower.head[static_cast<std::size_t>(b)])] = 1;
    }
    // Exactly one vertex of each cycle was entered from outside; every other cycle
    // vertex keeps the cycle arc it had.
    for (std::size_t v = 0; v < lower.cycle_of.size(); ++v) {
      if (lower.cycle_of[v] >= 0 && !entered[v]) lower_chosen.push_back(lower.best_in[v]);
    }
    std::swap(chosen, lower_chosen);
  }

  // Round 0's arcs were numbered after dropping self-loops and arcs into the root.
  const Round& bottom = rounds.front();
  for (int& a : chosen) a = bottom.below[static_cast<std::size_t>(a)];
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

double arborescenceCost(const std::vector<WeightedArc>& arcs, const std::vector<int>& chosen) {
  double total = 0.0;
  for (int i : chosen) total += arcs.at(static_cast<std::size_t>(i)).cost;
  return total;
}

}  // namespace blink::treegen
