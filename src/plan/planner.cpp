#include "plan/planner.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "plan/baselines.hpp"
#include "plan/hierarchical.hpp"
#include "plan/node_class_simulation.hpp"
#include "plan/node_layout.hpp"
#include "plan/tree_cache.hpp"

namespace blink::plan {

double busBandwidthFactor(Collective c, int ranks) {
  const double n = static_cast<double>(ranks);
  switch (c) {
    case Collective::AllReduce:
      return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return n > 1 ? (n - 1) / n : 0.0;
    case Collective::Broadcast:
    case Collective::Reduce:
      return 1.0;
  }
  return 1.0;
}

namespace {

int rootGpu(const topo::Topology& t, int root_rank) {
  auto gpus = t.gpus();
  if (root_rank < 0 || root_rank >= static_cast<int>(gpus.size())) {
    throw Error(blinkInvalidArgument, "root rank " + std::to_string(root_rank) +
                                          " is not one of the " + std::to_string(gpus.size()) +
                                          " ranks");
  }
  return t.device(gpus[root_rank]).gpu_index;
}

// simulate(), with what it cost at TRACE (planning time on large clusters is mostly
// simulation).
SimResult timedSimulate(const Plan& p, const topo::Topology& t, const SimOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  SimResult r = simulate(p, t, o);
  BLINK_LOG(
      Trace, "planner: simulated "
                 << p.algorithm << " on " << t.name() << " (" << r.transfers << " transfers) in "
                 << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                 << " s");
  return r;
}

// Trees whose finish times lie within this fraction of each other are left as they
// are: evening them out could gain at most about that much.
constexpr double kBalancedSpread = 0.005;

// Data weights under which each tree carries data in proportion to the rate it
// reached in `sim`: its current weight over the time its last channel finished.
// Empty when the trees already finish together (or a tree carried nothing).
std::vector<double> rebalancedWeights(const treegen::TreeSet& trees, const LoweredTrees& lowered,
                                      const SimResult& sim, const LowerOptions& options) {
  std::vector<double> finish(trees.trees.size(), 0.0);
  for (std::size_t c = 0; c < lowered.channel_tree.size() && c < sim.channel_seconds.size(); ++c) {
    double& f = finish[lowered.channel_tree[c]];
    f = std::max(f, sim.channel_seconds[c]);
  }
  if (finish.empty()) return {};
  const auto [first, last] = std::minmax_element(finish.begin(), finish.end());
  if (*first <= 0.0 || *last - *first <= kBalancedSpread * *last) return {};
  std::vector<double> weights = dataWeights(trees, options);
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] /= finish[i];
  return weights;
}

// A flat tree plan and its predicted time. Where the simulation shows some trees
// finishing before others (one tree's chunks wait out more per-step latency than
// another's, or fill its slack on shared links), the data is split once more in
// proportion to the rates the trees reached, and the faster of the two plans is
// kept. The plan carries the split, so a runtime runs what was predicted.
std::pair<Plan, double> treePlan(Collective c, const treegen::TreeSet& trees,
                                 const topo::Topology& t, std::uint64_t bytes,
                                 const PlannerOptions& o) {
  LoweredTrees lowered = lowerTrees(c, trees, t, bytes, o.lower);
  const SimResult sim = timedSimulate(lowered.plan, t, o.sim);
  if (!o.rebalance) return {std::move(lowered.plan), sim.seconds};
  std::vector<double> weights = rebalancedWeights(trees, lowered, sim, o.lower);
  if (weights.empty()) return {std::move(lowered.plan), sim.seconds};
  LowerOptions balanced = o.lower;
  balanced.data_weights = std::move(weights);
  Plan again = lowerTrees(c, trees, t, bytes, balanced).plan;
  const double seconds = timedSimulate(again, t, o.sim).seconds;
  if (seconds >= sim.seconds) return {std::move(lowered.plan), sim.seconds};
  std::ostringstream note;
  note << "data split rebalanced by the trees' simulated rates: predicted " << seconds * 1e6
       << " us instead of " << sim.seconds * 1e6 << " us";
  again.notes.push_back(note.str());
  return {std::move(again), seconds};
}

// The busiest rank's combining time: the bytes of its RecvReduce steps at its rate.
double combiningSeconds(const Plan& p, const std::vector<double>& rate) {
  double slowest = 0.0;
  for (std::size_t r = 0; r < p.ranks.size() && r < rate.size(); ++r) {
    double bytes = 0.0;
    for (const Step& s : p.ranks[r].steps) {
      if (s.kind == StepKind::RecvReduce) bytes += static_cast<double>(s.bytes);
    }
    if (rate[r] > 0.0) slowest = std::max(slowest, bytes / rate[r]);
  }
  return slowest;
}

// A tree plan, unless the planning budget ran out before any usable trees were
// packed: then the candidate is left out (the baselines remain). treegen has said
// so at WARN already (once per process); INFO says what the planner did about it.
void addTreePlan(std::vector<std::pair<Plan, double>>& out, Collective c,
                 const treegen::TreeSet& trees, const topo::Topology& t, std::uint64_t bytes,
                 const PlannerOptions& o) {
  if (trees.undirected && trees.trees.empty() && !trees.budget_exhausted) return;  // disconnected
  if (trees.budget_exhausted && trees.rate_gbps <= 0.0) {
    BLINK_LOG(Info, "planner: no " << trees.collective << " trees on " << t.name()
                                   << " within the planning budget (bound " << trees.bound_gbps
                                   << " GB/s): the ring and double binary tree stand in");
    return;
  }
  out.push_back(treePlan(c, trees, t, bytes, o));
}

// A hierarchical plan's channels' shares (the trees' packed rates) mostly help, but
// not always (1 GiB on dgx1-v100:2, Reduce: 22714 us, 22503 with equal shares;
// AllReduce over GPUs 0-2 + 8-12: 40156 us, 36855): the same plan with equal shares
// replaces `h` (predicted `seconds`) when it simulates faster. (Tried where flat trees
// are: past that a simulation costs seconds.)
void equalSharesWhereFaster(Plan& h, double& seconds, const topo::Topology& t,
                            const PlannerOptions& o) {
  if (h.channel_shares.empty() || !flatTreesWorthTrying(t)) return;
  Plan equal = h;
  equal.channel_shares.clear();
  const double equal_seconds = timedSimulate(equal, t, o.sim).seconds;
  if (equal_seconds < seconds) {
    std::ostringstream note;
    note << "equal channel shares: predicted " << equal_seconds * 1e6 << " us instead of "
         << seconds * 1e6 << " us with the trees' packed rates";
    equal.notes.push_back(note.str());
    h = std::move(equal);
    seconds = equal_seconds;
  }
}

// The chunk rule (chooseChunkBytes) sizes each phase's chunks for one pipeline of
// the plan's depth at the phase's rate, as if nothing else used its links. In the
// hierarchical plan every home's pieces cross the NICs at once, in both directions,
// so the links stay busy with fewer, larger chunks, and every chunk is one more
// message, with its latency, between nodes. So the plan is also lowered with fixed
// chunks kCoarserChunkStep times the last one's largest, up to whole pieces, at most
// kCoarserChunkTries times, and the fastest simulated is kept. 2 hosts x 2 ranks,
// 2 NICs at 0.95 Gbit/s each (the issue-17 criterion's graph), AllReduce of 64 KiB:
// the rule's chunks (14780 bytes within a node, 3508 between nodes) make 36 steps per
// rank, predicted 514 us; whole pieces 12 steps, 430 us (measured across emulated
// hosts: perf/README.md, "Mid sizes across hosts").
constexpr std::uint64_t kCoarserChunkStep = 4;
constexpr int kCoarserChunkTries = 3;
// A coarser plan replaces the rule's only when predicted at least this much faster:
// closer predictions are within what the model knows of the links (2 MiB on that
// graph: 12014 us against 12022).
constexpr double kCoarserChunkMinGain = 0.01;
// Only where the rule's plan is small: each try costs a lowering and a simulation,
// seconds on large clusters at large sizes, where the rule's chunks are already long.
constexpr std::size_t kCoarserChunkMaxSteps = std::size_t{1} << 16;

std::size_t stepCount(const Plan& p) {
  std::size_t steps = 0;
  for (const auto& rank : p.ranks) steps += rank.steps.size();
  return steps;
}

std::uint64_t largestMessage(const Plan& p) {
  std::uint64_t largest = 0;
  for (const auto& rank : p.ranks) {
    for (const Step& s : rank.steps) {
      if (s.kind == StepKind::Send) largest = std::max(largest, s.bytes);
    }
  }
  return largest;
}

// `h` (predicted `seconds`), lowered with the chunk rule, replaced by the same plan
// with coarser fixed chunks where one simulates faster. Not with a fixed chunk size
// (BLINK_CHUNK_BYTES: the caller's choice).
void coarserChunksWhereFaster(Plan& h, double& seconds, Collective c, const topo::Topology& t,
                              std::uint64_t bytes, int root_rank, const PlannerOptions& o) {
  if (o.lower.chunk_bytes > 0 || stepCount(h) > kCoarserChunkMaxSteps) return;
  const double rule_seconds = seconds;
  const std::uint64_t rule_largest = largestMessage(h);
  std::uint64_t largest = rule_largest;
  bool replaced = false;
  LowerOptions fixed = o.lower;
  for (int i = 0; i < kCoarserChunkTries && largest > 0 && largest < bytes; ++i) {
    fixed.chunk_bytes = std::min(largest * kCoarserChunkStep, bytes);
    Plan coarser = lowerHierarchical(c, t, bytes, root_rank, fixed, o.pack);
    const std::uint64_t coarser_largest = largestMessage(coarser);
    if (coarser_largest <= largest) break;  // no message grew: whole pieces already
    largest = coarser_largest;
    double coarser_seconds = timedSimulate(coarser, t, o.sim).seconds;
    equalSharesWhereFaster(coarser, coarser_seconds, t, o);
    if (coarser_seconds < seconds &&
        coarser_seconds < rule_seconds * (1.0 - kCoarserChunkMinGain)) {
      h = std::move(coarser);
      seconds = coarser_seconds;
      replaced = true;
    }
  }
  if (replaced) {
    std::ostringstream note;
    note << "chunks of up to " << h.chunk_bytes << " bytes (" << stepCount(h)
         << " steps): predicted " << seconds * 1e6 << " us instead of " << rule_seconds * 1e6
         << " us with the chunk rule's (messages of up to " << rule_largest << " bytes)";
    h.notes.push_back(note.str());
  }
}

// AllReduce's rail variants of the hierarchical plan replace `h` (predicted `seconds`)
// where they simulate faster: a pipelined ring per rail between nodes (lowerRailRings;
// 1 GiB on hgx-h100: 0.79 of the NIC bound against 0.71 on 16 nodes, 0.70 against
// 0.67 on 32; 0.50 against 0.51 on 128: perf/README.md, "Fifth pass") and recursive
// halving and doubling per rail (lowerRailHalving: perf/README.md, "Sixth pass").
// Tried from kRailRingsMinNodes nodes on: below, the second simulation doubles the
// planning time of 64-GPU clusters past issue 16's 1 s (hgx-h100:8: 1.0 -> 2.0 CPU s)
// for a few percent (0.83 -> 0.87 of the bound at 1 GiB).
constexpr std::size_t kRailRingsMinNodes = 16;

// The halving variant is lowered with kRailHalvingFineBudget times the message budget
// up to kRailHalvingFineMaxNodes nodes, and at any size where its first node alone is
// simulated (simulateOneNode: a power of two of identical nodes), whose cost does not
// grow with the nodes: the budget is the whole cluster's, so with it each node's
// chunks would grow with the node count, and the halving, whose inter-node phase
// alone predicts 0.99 of the NIC bound, would lose the rest to those chunks filling
// and draining it. 1 GiB on hgx-h100:16 / :32 / :128: 0.91 / 0.91 / 0.93 of the NIC
// bound with four times the budget, 0.87 / 0.88 / 0.80 with it (perf/README.md,
// "Seventh pass"). Elsewhere the budget stays (the full simulation of four times it on
// 128 nodes took 15 CPU s).
constexpr std::size_t kRailHalvingFineMaxNodes = 32;
constexpr std::size_t kRailHalvingFineBudget = 4;

// The verdict goes to `verdicts` (for the plan finally kept). one_node: the rail plan
// is symmetric under relabelling its nodes (the halving on a power of two of identical
// nodes), so where simulateOneNode applies its first node alone is simulated: the same
// prediction (test_node_class_simulation.cpp) at one node's cost (hgx-h100:128, 1 GiB:
// 0.15 CPU s instead of 3.2).
void railWhereFaster(Plan& h, double& seconds, const topo::Topology& t, const PlannerOptions& o,
                     Plan rail, const char* what, std::vector<std::string>& verdicts,
                     bool one_node = false) {
  std::optional<SimResult> by_class;
  if (one_node) by_class = simulateOneNode(rail, t, o.sim);
  double rail_seconds = by_class ? by_class->seconds : timedSimulate(rail, t, o.sim).seconds;
  if (by_class) BLINK_LOG(Trace, "planner: " << what << " simulated on one node of " << t.name());
  equalSharesWhereFaster(rail, rail_seconds, t, o);
  std::ostringstream note;
  if (rail_seconds < seconds) {
    note << what << " between nodes: predicted " << rail_seconds * 1e6 << " us instead of "
         << seconds * 1e6 << " us";
    h = std::move(rail);
    seconds = rail_seconds;
  } else {
    note << what << " between nodes not taken: predicted " << rail_seconds * 1e6 << " us";
  }
  verdicts.push_back(note.str());
}

}  // namespace

bool flatTreesWorthTrying(const topo::Topology& t) {
  return !isMultiNode(t) || t.gpus().size() <= kFlatClusterMaxGpus;
}

std::vector<std::pair<Plan, double>> blinkCandidates(Collective c, const topo::Topology& t,
                                                     std::uint64_t bytes, int root_rank,
                                                     const PlannerOptions& o) {
  const bool rooted = c == Collective::Broadcast || c == Collective::Reduce;
  std::vector<std::pair<Plan, double>> out;
  if (!flatTreesWorthTrying(t)) {
    BLINK_LOG(Info, "planner: " << t.name() << " has " << t.gpus().size()
                                << " GPUs on several nodes: the hierarchical plan alone, no flat "
                                   "trees over the whole cluster");
  } else if (isMultiNode(t) && !o.flat_trees_across_nodes && o.only_family != "trees") {
    BLINK_LOG(Info, "planner: " << t.name()
                                << " spans nodes: the hierarchical plan, no flat trees (the "
                                   "transports between nodes send each rank's bytes on one "
                                   "NIC, not on each tree's; paced or not, flat trees were not "
                                   "shown faster)");
  } else if (rooted) {
    addTreePlan(out, c, broadcastTrees(t, rootGpu(t, root_rank), o.pack), t, bytes, o);
  } else if (c == Collective::AllGather || c == Collective::ReduceScatter) {
    addTreePlan(out, c, allGatherTrees(t, o.pack), t, bytes, o);
  } else {
    const treegen::TreeSet rs_ag = allGatherTrees(t, o.pack);
    addTreePlan(out, c, rs_ag, t, bytes, o);
    // Reduce+broadcast over undirected trees packed at the graph's strength: the best
    // rate of any tree schedule on symmetric links, which RS+AG reaches only on some
    // graphs; the simulator decides between them. Where its packed rate is below
    // RS+AG's (N * rate / 2; switch graphs, where splitting loses capacity), it is
    // not simulated: its many trees cost seconds of simulation at 1 GiB on
    // dgx-a100:2, for a plan that loses.
    // Within one node only: on clusters the flat undirected trees (tens of them, over
    // every NIC) lost to the hierarchical plan and doubled the simulation's time and
    // memory at 1 GiB (dgx1-v100:2: 1.6 -> 2.8 s, 155 -> 227 MB).
    if (!isMultiNode(t)) {
      const treegen::TreeSet rb = reduceBroadcastTrees(t, o.pack);
      const double rs_ag_gbps = rs_ag.rate_gbps * static_cast<double>(t.gpus().size()) / 2.0;
      if (rb.rate_gbps >= rs_ag_gbps * (1.0 - 1e-9)) {
        const std::size_t before = out.size();
        addTreePlan(out, c, rb, t, bytes, o);
        if (out.size() > before) out.back().first.algorithm = "blink-trees reduce+broadcast";
      } else {
        BLINK_LOG(Info, "planner: reduce+broadcast on " << t.name() << " packs " << rb.rate_gbps
                                                        << " GB/s, below reducescatter+allgather's "
                                                        << rs_ag_gbps << ": not simulated");
      }
    }
  }
  if (isMultiNode(t) && o.pack.budget && o.pack.budget->exhausted()) {
    BLINK_LOG(Info,
              "planner: no hierarchical plan on " << t.name() << ": the planning budget is spent");
  } else if (isMultiNode(t)) {
    // Trees inside each node and an inter-node phase over every NIC, beside the flat
    // trees over the whole cluster graph; a node whose trees cannot be packed leaves
    // the flat candidates alone.
    try {
      Plan h = lowerHierarchical(c, t, bytes, root_rank, o.lower, o.pack);
      double seconds = timedSimulate(h, t, o.sim).seconds;
      equalSharesWhereFaster(h, seconds, t, o);
      coarserChunksWhereFaster(h, seconds, c, t, bytes, root_rank, o);
      if (c == Collective::AllReduce && nodeLayout(t).node_ids.size() >= kRailRingsMinNodes) {
        std::vector<std::string> verdicts;
        railWhereFaster(h, seconds, t, o, lowerRailRings(t, bytes, o.lower, o.pack), "rail rings",
                        verdicts);
        const bool one_node = oneNodeSimulationApplies(t);
        const std::size_t budget =
            one_node || nodeLayout(t).node_ids.size() <= kRailHalvingFineMaxNodes
                ? kRailHalvingFineBudget * kHierarchicalMaxTransfers
                : kHierarchicalMaxTransfers;
        railWhereFaster(h, seconds, t, o, lowerRailHalving(t, bytes, o.lower, o.pack, budget),
                        "rail halving and doubling", verdicts, one_node);
        h.notes.insert(h.notes.end(), verdicts.begin(), verdicts.end());
      }
      out.emplace_back(std::move(h), seconds);
    } catch (const Error& e) {
      if (e.status() == blinkInternalError) {
        BLINK_LOG(Warn,
                  "planner: the hierarchical plan failed on " << t.name() << ": " << e.what());
      } else {
        BLINK_LOG(Info, "planner: no hierarchical plan on " << t.name() << ": " << e.what());
      }
    }
  }
  return out;
}

std::string familyOf(const std::string& algorithm) {
  if (algorithm.rfind("blink-trees", 0) == 0) return "trees";
  if (algorithm == "blink-hierarchical") return "hierarchical";
  if (algorithm == "double-binary-tree") return "dbt";
  return algorithm;
}

Choice choosePlan(Collective c, const topo::Topology& t, std::uint64_t bytes, int root_rank,
                  const PlannerOptions& options) {
  // One budget for every packing of this call (treegen/budget.hpp).
  PlannerOptions o = options;
  if (!o.pack.budget) {
    o.pack.budget = treegen::makeBudget(o.pack.budget_ms > 0.0 ? o.pack.budget_ms
                                                               : treegen::defaultBudgetMillis());
  }
  Choice choice;
  const bool only_baseline = o.only_family == "ring" || o.only_family == "dbt";
  std::vector<std::pair<Plan, double>> all;
  if (!only_baseline) all = blinkCandidates(c, t, bytes, root_rank, o);
  // With no tree plan left (the budget ran out), the baselines stand in even when
  // only Blink's trees were asked for.
  // Past kBaselineMaxGpus the baselines are named but not built (unless nothing else
  // is left or they were asked for): their plans alone outgrow the planning budget.
  const bool baselines_fit = t.gpus().size() <= kBaselineMaxGpus;
  if ((o.allow_baselines || only_baseline) && !baselines_fit && !all.empty() && !only_baseline) {
    const std::string why_not = "not built past " + std::to_string(kBaselineMaxGpus) +
                                " GPUs: every ring alone moves " + std::to_string(t.gpus().size()) +
                                " pieces over 2(n-1) hops";
    choice.candidates.push_back({"ring", 0.0, false, why_not});
    if (c != Collective::AllGather && c != Collective::ReduceScatter) {
      choice.candidates.push_back({"double-binary-tree", 0.0, false, why_not});
    }
    BLINK_LOG(Info, "planner: ring and double binary tree on " << t.name() << " " << why_not);
  } else if (o.allow_baselines || only_baseline || all.empty()) {
    all.emplace_back(ringPlan(c, t, bytes, root_rank, o.lower), 0.0);
    if (c != Collective::AllGather && c != Collective::ReduceScatter) {
      all.emplace_back(doubleBinaryTreePlan(c, t, bytes, root_rank, o.lower), 0.0);
    } else {
      choice.candidates.push_back({"double-binary-tree", 0.0, false,
                                   "double binary trees serve AllReduce, Broadcast and Reduce"});
    }
    for (auto& [p, s] : all) {
      if (p.algorithm == "ring" || p.algorithm == "double-binary-tree")
        s = timedSimulate(p, t, o.sim).seconds;
    }
  }
  if (!o.combine_bytes_per_s.empty()) {
    for (auto& [p, seconds] : all) seconds += combiningSeconds(p, o.combine_bytes_per_s);
  }
  if (!o.only_family.empty()) {
    std::erase_if(all, [&](const auto& p) { return familyOf(p.first.algorithm) != o.only_family; });
    if (all.empty()) {
      throw Error(blinkUnsupported,
                  o.only_family + " does not apply to " + toString(c) + " on " + t.name());
    }
  }
  // Fastest first; ties keep the order above (Blink's trees first).
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& [p, s] : all) choice.candidates.push_back({p.algorithm, s, true, ""});
  std::ostringstream why;
  why << toString(c) << " of " << bytes << " bytes on " << t.name() << ": "
      << all.front().first.algorithm << " (predicted " << all.front().second * 1e6 << " us)";
  if (all.size() > 1)
    why << ", next " << all[1].first.algorithm << " (" << all[1].second * 1e6 << " us)";
  choice.why = why.str();
  choice.seconds = all.front().second;
  choice.plan = std::move(all.front().first);
  choice.plan.notes.push_back(choice.why);
  BLINK_LOG(Info, "planner: " << choice.why);
  return choice;
}

double optimalAlgbwGbps(Collective c, const topo::Topology& t, int root_rank,
                        const std::set<topo::LinkKind>& links) {
  const double n = static_cast<double>(t.gpus().size());
  switch (c) {
    case Collective::Broadcast:
    case Collective::Reduce:
      return treegen::broadcastBoundGbps(t, rootGpu(t, root_rank), links);
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return n * treegen::allGatherBoundGbps(t, links);
    case Collective::AllReduce:
      // The minimum cut and the total-traffic bound (2(n - 1) deliveries of every
      // element into the GPUs), whichever is smaller: see treegen::allReduceBoundGbps
      // for why no AllReduce that reduces only on GPUs beats either. (treegen's two
      // shape bounds assume the shape's phases run one after the other; Blink's
      // plans overlap them on opposite link directions and can beat those.)
      return treegen::allReduceBoundGbps(t, links);
  }
  return 0.0;
}

}  // namespace blink::plan
