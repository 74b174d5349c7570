#include "runtime/algorithm_choice.hpp"

#include <algorithm>
#include <sstream>

#include "algorithms/host_memory_model.hpp"
#include "algorithms/node_collectives.hpp"
#include "algorithms/node_leaders.hpp"
#include "algorithms/shm_one_shot.hpp"
#include "common/env.hpp"
#include "common/error.hpp"
#include "transport/cuda/device_transport.hpp"

namespace blink::runtime {
namespace {

constexpr std::array<std::string_view, kNumAlgorithms> kNames = {
    "board", "direct", "trees", "hierarchical", "ring", "dbt", "leaders"};

std::optional<plan::Collective> parseCollective(std::string_view name) {
  if (name == "allreduce") return plan::Collective::AllReduce;
  if (name == "broadcast" || name == "bcast") return plan::Collective::Broadcast;
  if (name == "reduce") return plan::Collective::Reduce;
  if (name == "allgather") return plan::Collective::AllGather;
  if (name == "reducescatter" || name == "reduce_scatter") return plan::Collective::ReduceScatter;
  return std::nullopt;
}

std::string algorithmNames() {
  std::string out;
  for (auto n : kNames) out += std::string(out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::string microseconds(double seconds) {
  std::ostringstream out;
  out.precision(seconds < 1e-3 ? 3 : 6);
  out << seconds * 1e6 << " us";
  return out.str();
}

}  // namespace

std::string_view toString(Algorithm a) {
  return kNames[static_cast<std::size_t>(a)];
}

std::optional<Algorithm> parseAlgorithm(std::string_view name) {
  if (name == "double-binary-tree") return Algorithm::DoubleBinaryTree;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Algorithm>(i);
  }
  return std::nullopt;
}

bool runsPlan(Algorithm a) {
  return a != Algorithm::Board && a != Algorithm::Direct && a != Algorithm::Leaders;
}

ForcedAlgorithms ForcedAlgorithms::parse(std::string_view text) {
  ForcedAlgorithms out;
  for (const std::string_view item : env::splitItems(text)) {
    const auto colon = item.find(':');
    const std::string_view name = colon == std::string_view::npos ? item : item.substr(colon + 1);
    const auto algorithm = parseAlgorithm(name);
    if (!algorithm) {
      throw Error(blinkInvalidInput, "BLINK_ALGO='" + std::string(text) + "': unknown algorithm '" +
                                         std::string(name) + "' (known: " + algorithmNames() + ")");
    }
    if (colon == std::string_view::npos) {
      out.per_collective_.fill(algorithm);
      continue;
    }
    const auto collective = parseCollective(item.substr(0, colon));
    if (!collective) {
      throw Error(blinkInvalidInput,
                  "BLINK_ALGO='" + std::string(text) + "': unknown collective '" +
                      std::string(item.substr(0, colon)) +
                      "' (known: allreduce, broadcast, reduce, allgather, reducescatter)");
    }
    out.per_collective_[static_cast<std::size_t>(*collective)] = algorithm;
  }
  return out;
}

ForcedAlgorithms ForcedAlgorithms::fromEnvironment() {
  const auto text = env::get("BLINK_ALGO");
  return text ? parse(*text) : ForcedAlgorithms{};
}

std::optional<Algorithm> ForcedAlgorithms::forced(plan::Collective c) const {
  return per_collective_[static_cast<std::size_t>(c)];
}

void priceForDeviceBuffers(NodeAlgorithms& node, plan::PlannerOptions& planner) {
  node.board_capacity = 0;
  node.direct_min = 0;
  node.leaders = false;
  node.board_off = node.direct_off = node.leaders_off = "device buffers";
  planner.lower.step_overhead_us = transport::kDeviceStepOverheadUs;
  planner.sim.step_overhead_us = transport::kDeviceStepOverheadUs;
}

AlgorithmChoice chooseAlgorithm(const CallShape& call, const topo::Topology& topology,
                                const NodeAlgorithms& node, const ForcedAlgorithms& forced,
                                const plan::PlannerOptions& planner) {
  AlgorithmChoice choice;
  const int ranks = static_cast<int>(topology.gpus().size());
  const std::optional<Algorithm> wanted = forced.forced(call.collective);

  // The node algorithms, priced on the paths between the ranks and host memory.
  const algorithms::HostMemoryPaths paths = algorithms::hostMemoryPaths(topology);
  CandidateTime board{Algorithm::Board, -1.0, ""}, direct{Algorithm::Direct, -1.0, ""};
  if (!paths.why_not.empty()) {
    board.why_not = direct.why_not = paths.why_not;
  } else {
    if (node.board_capacity == 0) {
      board.why_not = node.board_off;
    } else if (call.bytes > node.board_capacity) {
      board.why_not = "above its capacity of " + std::to_string(node.board_capacity) + " bytes";
    } else {
      board.seconds = algorithms::predictSeconds(
          paths,
          algorithms::ShmOneShot::traffic(call.collective, call.bytes, ranks, call.root_plan));
    }
    if (node.direct_min == 0) {
      direct.why_not = node.direct_off;
    } else if (call.bytes < node.direct_min) {
      direct.why_not = "below BLINK_SHM_DIRECT_MIN_BYTES=" + std::to_string(node.direct_min);
    } else {
      direct.seconds = algorithms::predictSeconds(
          paths, algorithms::directTraffic(call.collective, call.bytes, ranks, call.root_plan));
    }
  }
  // Across nodes: the board on each node and rounds between the nodes' leaders.
  CandidateTime leaders{Algorithm::Leaders, -1.0, ""};
  std::string leaders_note;
  if (!node.leaders) {
    leaders.why_not = node.leaders_off;
  } else if (call.bytes > node.board_capacity) {
    leaders.why_not =
        "above the board's capacity of " + std::to_string(node.board_capacity) + " bytes";
  } else {
    leaders.seconds = algorithms::NodeLeaders::predictSeconds(topology, call.collective, call.bytes,
                                                              call.root_plan, leaders.why_not);
    const auto& measured = node.leaders_measured[static_cast<std::size_t>(call.collective)];
    std::string ignored;
    const double modeled_reference =
        measured.seconds < 0.0
            ? -1.0
            : algorithms::NodeLeaders::predictSeconds(topology, call.collective, measured.bytes,
                                                      call.root_plan, ignored);
    if (leaders.seconds >= 0.0 && modeled_reference >= 0.0) {
      std::ostringstream note;
      note << "leaders measured " << microseconds(measured.seconds) << " at " << measured.bytes
           << " bytes at set-up, where the model says " << microseconds(modeled_reference);
      const double from_measurement =
          measured.seconds + std::max(0.0, leaders.seconds - modeled_reference);
      // Only the leaders are measured; the plans are priced by the model alone. A
      // measurement above the model is the machine (a loaded or slow host, its network)
      // being slower than the model, which slows the plans' steps across the same
      // network as much or more: against them the leaders keep the model's price.
      if (from_measurement < leaders.seconds) {
        leaders.seconds = from_measurement;
      } else {
        note << ", above it: priced by the model, as the plans are";
      }
      leaders_note = note.str();
    }
  }
  choice.candidates = {board, direct, leaders};

  // The planner's plans, each family once (its best member).
  plan::PlannerOptions options = planner;
  if (paths.why_not.empty() &&
      std::all_of(paths.half_duplex.begin(), paths.half_duplex.end(), [](bool h) { return h; })) {
    options.combine_bytes_per_s = paths.read_bytes_per_s;  // CPUs combine, as in the model
  }
  std::string forced_note;
  if (wanted && runsPlan(*wanted)) options.only_family = std::string(toString(*wanted));
  plan::Choice planned;
  try {
    planned = plan::choosePlan(call.collective, topology, call.bytes, call.root_plan, options);
  } catch (const Error& e) {
    if (e.status() != blinkUnsupported || options.only_family.empty()) throw;
    forced_note = "BLINK_ALGO's " + options.only_family + " does not apply (" + e.what() + ")";
    options.only_family.clear();
    planned = plan::choosePlan(call.collective, topology, call.bytes, call.root_plan, options);
  }
  for (const auto& c : planned.candidates) {
    const auto algorithm = parseAlgorithm(plan::familyOf(c.name));
    if (!algorithm || !c.available) continue;
    const bool seen =
        std::any_of(choice.candidates.begin(), choice.candidates.end(),
                    [&](const CandidateTime& t) { return t.algorithm == *algorithm; });
    if (!seen) choice.candidates.push_back({*algorithm, c.seconds, ""});
  }

  // The winner: the forced algorithm where it applies, else the fastest; ties keep
  // the order above (the node algorithms first: fewer synchronisations, no executor).
  // Predictions closer than one step's software cost (1 us, the smallest time either
  // model charges; link latencies are known to a digit or two) are ties.
  constexpr double kTieSeconds = 1e-6;
  const CandidateTime* best = nullptr;
  for (const auto& c : choice.candidates) {
    if (c.seconds < 0.0) continue;
    if (wanted && c.algorithm == *wanted) {
      best = &c;
      break;
    }
    if (best == nullptr || c.seconds < best->seconds - kTieSeconds) best = &c;
  }
  if (wanted && (best == nullptr || best->algorithm != *wanted) && forced_note.empty()) {
    const auto it = std::find_if(choice.candidates.begin(), choice.candidates.end(),
                                 [&](const CandidateTime& c) { return c.algorithm == *wanted; });
    forced_note =
        "BLINK_ALGO's " + std::string(toString(*wanted)) + " does not apply" +
        (it != choice.candidates.end() && !it->why_not.empty() ? " (" + it->why_not + ")" : "");
  }
  if (best == nullptr)
    throw Error(blinkInternalError, "no algorithm applies (the planner's ring always should)");
  choice.algorithm = best->algorithm;
  choice.seconds = best->seconds;
  if (runsPlan(choice.algorithm)) choice.plan = std::move(planned.plan);

  std::ostringstream why;
  why << plan::toString(call.collective) << " of " << call.bytes << " bytes on " << topology.name()
      << ": " << toString(choice.algorithm) << " (predicted " << microseconds(choice.seconds)
      << (wanted && *wanted == choice.algorithm ? ", BLINK_ALGO" : "") << ")";
  for (const auto& c : choice.candidates) {
    if (c.algorithm == choice.algorithm) continue;
    why << "; " << toString(c.algorithm) << ' '
        << (c.seconds >= 0.0 ? microseconds(c.seconds) : "n/a: " + c.why_not);
  }
  if (!forced_note.empty()) why << "; " << forced_note;
  if (!leaders_note.empty()) why << "; " << leaders_note;
  choice.why = why.str();
  return choice;
}

}  // namespace blink::runtime
