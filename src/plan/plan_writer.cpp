#include "plan/plan_writer.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace blink::plan {

std::vector<ByteRange> evenParts(ByteRange r, int parts, std::uint64_t element_size) {
  std::vector<ByteRange> out;
  const std::uint64_t elements = r.second / element_size;
  const auto p = static_cast<std::uint64_t>(parts);
  std::uint64_t at = r.first;
  for (std::uint64_t i = 0; i < p; ++i) {
    const std::uint64_t e = elements / p + (i < elements % p ? 1 : 0);
    out.emplace_back(at, e * element_size);
    at += e * element_size;
  }
  return out;
}

Plan emptyPlan(Collective collective, const std::string& algorithm, const topo::Topology& topology,
               std::uint64_t bytes, int element_size) {
  if (element_size < 1) throw Error(blinkInvalidArgument, "element size must be >= 1");
  if (bytes % static_cast<std::uint64_t>(element_size) != 0) {
    throw Error(blinkInvalidArgument, "the buffer is not a whole number of elements");
  }
  Plan plan;
  plan.collective = collective;
  plan.algorithm = algorithm;
  plan.topology = topology.name();
  plan.bytes = bytes;
  plan.element_size = element_size;
  for (topo::Vertex g : topology.gpus()) plan.rank_gpu.push_back(topology.device(g).gpu_index);
  plan.num_ranks = static_cast<int>(plan.rank_gpu.size());
  plan.ranks.resize(plan.num_ranks);
  return plan;
}

int PlanWriter::route(const std::vector<topo::Vertex>& route) {
  auto [it, inserted] = route_index_.emplace(route, static_cast<int>(plan_.routes.size()));
  if (inserted) plan_.routes.push_back(route);
  return it->second;
}

int PlanWriter::add(int rank, Step step) {
  auto key = std::make_tuple(rank, step.peer, step.channel, step.kind == StepKind::Send);
  if (auto it = last_on_channel_.find(key); it != last_on_channel_.end()) {
    step.deps.push_back(it->second);
  }
  std::erase(step.deps, -1);
  std::sort(step.deps.begin(), step.deps.end());
  step.deps.erase(std::unique(step.deps.begin(), step.deps.end()), step.deps.end());
  auto& steps = plan_.ranks[rank].steps;
  steps.push_back(std::move(step));
  const int index = static_cast<int>(steps.size()) - 1;
  last_on_channel_[key] = index;
  return index;
}

}  // namespace blink::plan
