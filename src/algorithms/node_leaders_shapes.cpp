// The node leaders' cost model (node_leaders.hpp): the predicted time of a call, the
// shapes of the leaders' exchange with their rounds and messages, the cost of each
// under a round's and a message's cost, and the fit of those two costs to measured
// times.
#include <algorithm>
#include <cmath>
#include <utility>

#include "algorithms/host_memory_model.hpp"
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

double NodeLeaders::predictSeconds(const topo::Topology& topology, plan::Collective collective,
                                   std::uint64_t bytes, int root, std::string& why_not) {
  const BetweenNodes net = betweenNodes(topology);
  if (!net.why_not.empty()) {
    why_not = net.why_not;
    return -1.0;
  }
  const int nodes = static_cast<int>(net.nodes.size());
  if (nodes > kMaxNodes) {
    why_not = "more than " + std::to_string(kMaxNodes) + " nodes";
    return -1.0;
  }
  int total_ranks = 0;
  std::vector<HostMemoryPaths> paths;  // per node
  for (int node : net.nodes) {
    paths.push_back(hostMemoryPathsOfNode(topology, node));
    if (!paths.back().why_not.empty()) {
      why_not = paths.back().why_not;
      return -1.0;
    }
    total_ranks += static_cast<int>(paths.back().half_duplex.size());
  }
  const double b = static_cast<double>(bytes);
  // One board phase, the slowest node's: `traffic_of(ranks)` on a node of that many
  // ranks (a node of one rank skips its board).
  // `skip`: a node left out (-1: none).
  auto board = [&](auto&& traffic_of, int skip = -1) {
    double slowest = 0.0;
    for (std::size_t k = 0; k < paths.size(); ++k) {
      const int ranks = static_cast<int>(paths[k].half_duplex.size());
      if (ranks > 1 && net.nodes[k] != skip) {
        slowest = std::max(slowest, algorithms::predictSeconds(paths[k], traffic_of(ranks)));
      }
    }
    return slowest;
  };
  const auto gpus = topology.gpus();
  const int root_node = root >= 0 && static_cast<std::size_t>(root) < gpus.size()
                            ? topology.device(gpus[static_cast<std::size_t>(root)]).node
                            : -1;
  auto phase = [&](plan::Collective c, double phase_bytes) {
    return board([&](int ranks) {
      return ShmOneShot::traffic(c, static_cast<std::uint64_t>(phase_bytes), ranks, 0);
    });
  };
  const int rounds_between = rounds(collective, nodes);
  double seconds = rounds_between * net.round_seconds;
  // Bytes through the busiest leader's link: one round sends (receives) a message to
  // (from) every other node at once; each log round one.
  const double messages = oneRound(nodes) ? nodes - 1 : rounds_between;
  switch (collective) {
    case plan::Collective::AllReduce:
      seconds += phase(plan::Collective::Reduce, b) + messages * b / net.bytes_per_s +
                 phase(plan::Collective::Broadcast, b);
      break;
    case plan::Collective::ReduceScatter:  // the leader posts b, each rank reads its block
      seconds += phase(plan::Collective::Reduce, b) + messages * b / net.bytes_per_s +
                 board([&](int ranks) {
                   Traffic t;
                   t.ranks.assign(static_cast<std::size_t>(ranks), {0.0, b / total_ranks, 0.0});
                   t.ranks[0] = {b, 0.0, 0.0};
                   return t;
                 });
      break;
    case plan::Collective::Broadcast: {  // the root speaks for its node, posting first
      auto spread = [&](int ranks) {
        return ShmOneShot::traffic(plan::Collective::Broadcast, bytes, ranks, 0);
      };
      const double own_node = root_node < 0 ? board(spread) : 0.0;
      double root_board = 0.0;
      for (std::size_t k = 0; k < paths.size(); ++k) {
        const int ranks = static_cast<int>(paths[k].half_duplex.size());
        if (net.nodes[k] == root_node && ranks > 1) {
          root_board = algorithms::predictSeconds(paths[k], spread(ranks));
        }
      }
      seconds = std::max(root_board, seconds + messages * b / net.bytes_per_s +
                                         std::max(own_node, board(spread, root_node)));
      break;
    }
    case plan::Collective::Reduce:
      seconds += phase(plan::Collective::Reduce, b) + messages * b / net.bytes_per_s;
      break;
    case plan::Collective::AllGather:  // a node's blocks to its leader, the rest exchanged
      seconds += board([&](int ranks) {
                   return ShmOneShot::traffic(plan::Collective::AllGather,
                                              static_cast<std::uint64_t>(b * ranks / total_ranks),
                                              ranks, 0);
                 }) +
                 b * (nodes - 1) / nodes / net.bytes_per_s + phase(plan::Collective::Broadcast, b);
      break;
  }
  return seconds;
}

}  // namespace blink::algorithms
