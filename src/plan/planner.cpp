#include "plan/planner.hpp"

#include <algorithm>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"
#include "plan/baselines.hpp"
#include "plan/hierarchical.hpp"

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

}  // namespace

std::vector<std::pair<Plan, double>> blinkCandidates(Collective c, const topo::Topology& t,
                                                     std::uint64_t bytes, int root_rank,
                                                     const PlannerOptions& o) {
  const bool rooted = c == Collective::Broadcast || c == Collective::Reduce;
  std::vector<Plan> plans;
  if (rooted) {
    auto trees = treegen::packBroadcast(t, rootGpu(t, root_rank), o.pack);
    plans.push_back(c == Collective::Broadcast ? lowerBroadcast(trees, t, bytes, o.lower)
                                               : lowerReduce(trees, t, bytes, o.lower));
  } else if (c == Collective::AllGather || c == Collective::ReduceScatter) {
    auto trees = treegen::packAllGather(t, o.pack);
    plans.push_back(c == Collective::AllGather ? lowerAllGather(trees, t, bytes, o.lower)
                                               : lowerReduceScatter(trees, t, bytes, o.lower));
  } else {
    plans.push_back(lowerAllReduce(treegen::packAllGather(t, o.pack), t, bytes, o.lower));
    Plan rb = lowerAllReduce(treegen::packBroadcast(t, rootGpu(t, 0), o.pack), t, bytes, o.lower);
    rb.algorithm = "blink-trees reduce+broadcast";
    plans.push_back(std::move(rb));
  }
  if (isMultiNode(t)) {
    // Trees inside each node and an inter-node phase over every NIC, beside the flat
    // trees over the whole cluster graph; a node whose trees cannot be packed leaves
    // the flat candidates alone.
    try {
      plans.push_back(lowerHierarchical(c, t, bytes, root_rank, o.lower, o.pack));
    } catch (const Error& e) {
      if (e.status() == blinkInternalError) {
        BLINK_LOG(Warn,
                  "planner: the hierarchical plan failed on " << t.name() << ": " << e.what());
      } else {
        BLINK_LOG(Info, "planner: no hierarchical plan on " << t.name() << ": " << e.what());
      }
    }
  }
  std::vector<std::pair<Plan, double>> out;
  for (auto& p : plans) {
    double s = simulate(p, t, o.sim).seconds;
    out.emplace_back(std::move(p), s);
  }
  return out;
}

Choice choosePlan(Collective c, const topo::Topology& t, std::uint64_t bytes, int root_rank,
                  const PlannerOptions& o) {
  Choice choice;
  std::vector<std::pair<Plan, double>> all = blinkCandidates(c, t, bytes, root_rank, o);
  if (o.allow_baselines) {
    all.emplace_back(ringPlan(c, t, bytes, root_rank, o.lower), 0.0);
    if (c != Collective::AllGather && c != Collective::ReduceScatter) {
      all.emplace_back(doubleBinaryTreePlan(c, t, bytes, root_rank, o.lower), 0.0);
    } else {
      choice.candidates.push_back({"double-binary-tree", 0.0, false,
                                   "double binary trees serve AllReduce, Broadcast and Reduce"});
    }
    for (auto& [p, s] : all) {
      if (p.algorithm == "ring" || p.algorithm == "double-binary-tree")
        s = simulate(p, t, o.sim).seconds;
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
      // Every GPU's result depends on every input, so whatever side X of a cut a
      // GPU is on, the data of the other side must cross into X: time >= bytes /
      // (capacity into X). The best algorithm bandwidth is therefore at most the
      // minimum cut, which is the broadcast bound. (treegen's two shape bounds
      // assume the shape's phases run one after the other; Blink's plans overlap
      // them on opposite link directions and can beat those.)
      return treegen::broadcastBoundGbps(t, rootGpu(t, 0), links);
  }
  return 0.0;
}

}  // namespace blink::plan
