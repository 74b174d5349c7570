// The shapes of the node leaders' exchange (node_leaders.hpp): their rounds and
// messages, the cost of each under a round's and a message's cost, and the fit of
// those two costs to measured times.
#include <algorithm>
#include <cmath>
#include <utility>

#include "algorithms/node_leaders.hpp"

namespace blink::algorithms {

int NodeLeaders::largestPowerOfTwoUpTo(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int NodeLeaders::log2Ceil(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

bool NodeLeaders::oneRound(int nodes) {
  return nodes <= kOneRoundMaxNodes;
}

int NodeLeaders::rounds(plan::Collective collective, int nodes) {
  return rounds(oneRound(nodes) ? Shape::OneRound : Shape::LogRounds, collective, nodes);
}

const char* NodeLeaders::toString(Shape shape) {
  switch (shape) {
    case Shape::OneRound:
      return "one round";
    case Shape::LogRounds:
      return "log rounds";
    case Shape::ViaFirstLeader:
      return "via the first leader";
    case Shape::Mpi:
      return "MPI's own among the leaders";
  }
  return "?";
}

std::vector<NodeLeaders::Shape> NodeLeaders::shapesFor(plan::Collective collective) {
  if (collective == plan::Collective::Broadcast || collective == plan::Collective::Reduce) {
    return {Shape::OneRound, Shape::LogRounds};
  }
  return {Shape::OneRound, Shape::LogRounds, Shape::ViaFirstLeader};
}

int NodeLeaders::rounds(Shape shape, plan::Collective collective, int nodes) {
  if (nodes < 2) return 0;
  switch (shape) {
    case Shape::OneRound:
      return 1;
    case Shape::ViaFirstLeader:
      return 2;
    case Shape::LogRounds:
    case Shape::Mpi:  // counted as MPI's usual recursive doubling; chosen by measurement only
      break;
  }
  if (collective == plan::Collective::Broadcast || collective == plan::Collective::Reduce) {
    return log2Ceil(nodes);
  }
  const int p = largestPowerOfTwoUpTo(nodes);
  return log2Ceil(p) + (p == nodes ? 0 : 2);
}

int NodeLeaders::messages(Shape shape, plan::Collective collective, int nodes) {
  if (nodes < 2) return 0;
  if (collective == plan::Collective::Broadcast || collective == plan::Collective::Reduce) {
    return nodes - 1;  // one to (from) each node, in one round or down a tree
  }
  switch (shape) {
    case Shape::OneRound:
      return nodes * (nodes - 1);
    case Shape::ViaFirstLeader:
      return 2 * (nodes - 1);
    case Shape::LogRounds:
    case Shape::Mpi:  // counted as MPI's usual recursive doubling; chosen by measurement only
      break;
  }
  const int p = largestPowerOfTwoUpTo(nodes);
  return p * log2Ceil(p) + 2 * (nodes - p);
}

double NodeLeaders::predictLeadersSeconds(Shape shape, plan::Collective collective, int nodes,
                                          const ShapeCosts& costs) {
  return rounds(shape, collective, nodes) * costs.round_seconds +
         messages(shape, collective, nodes) * costs.message_seconds;
}

NodeLeaders::Shape NodeLeaders::cheapest(plan::Collective collective, int nodes,
                                         const ShapeCosts& costs) {
  Shape best = Shape::OneRound;
  double best_seconds = predictLeadersSeconds(best, collective, nodes, costs);
  for (Shape shape : shapesFor(collective)) {
    const double seconds = predictLeadersSeconds(shape, collective, nodes, costs);
    if (seconds < best_seconds) {
      best = shape;
      best_seconds = seconds;
    }
  }
  return best;
}

bool NodeLeaders::fitCosts(plan::Collective collective, int nodes, const std::vector<Shape>& shapes,
                           const std::vector<double>& seconds, ShapeCosts& costs) {
  // Least squares of seconds = rounds * a + messages * b + c over the shapes.
  double m[3][4] = {};
  for (std::size_t i = 0; i < shapes.size() && i < seconds.size(); ++i) {
    const double x[3] = {static_cast<double>(rounds(shapes[i], collective, nodes)),
                         static_cast<double>(messages(shapes[i], collective, nodes)), 1.0};
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) m[r][c] += x[r] * x[c];
      m[r][3] += x[r] * seconds[i];
    }
  }
  for (int col = 0; col < 3; ++col) {  // Gauss-Jordan with partial pivoting
    int pivot = col;
    for (int r = col + 1; r < 3; ++r) {
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    }
    if (std::abs(m[pivot][col]) < 1e-9) return false;
    std::swap(m[col], m[pivot]);
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int c = col; c < 4; ++c) m[r][c] -= f * m[col][c];
    }
  }
  // A negative constant is noise around zero.
  costs.round_seconds = std::max(0.0, m[0][3] / m[0][0]);
  costs.message_seconds = std::max(0.0, m[1][3] / m[1][1]);
  return true;
}

}  // namespace blink::algorithms
