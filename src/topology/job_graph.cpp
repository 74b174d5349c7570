#include "topology/job_graph.hpp"

#include <algorithm>
#include <map>

#include "common/error.hpp"
#include "topology/node_description.hpp"

namespace blink::topo {
namespace {

int countOfKind(const Topology& t, DeviceKind kind) {
  int n = 0;
  for (Vertex v : boost::make_iterator_range(boost::vertices(t.graph()))) {
    n += t.device(v).kind == kind ? 1 : 0;
  }
  return n;
}

// Why the ranks cannot be GPU ranks ("" when they can).
std::string whyHostRanks(const std::vector<const Topology*>& nodes,
                         const std::vector<int>& ranks_on_node) {
  bool any_gpu = false;
  std::string why;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const int gpus = static_cast<int>(nodes[k]->gpus().size());
    any_gpu = any_gpu || gpus > 0;
    if (why.empty() && gpus < ranks_on_node[k]) {
      why = "node " + std::to_string(k) + " has " + std::to_string(gpus) + " GPU(s) for " +
            std::to_string(ranks_on_node[k]) + " rank(s)";
    }
  }
  if (!why.empty() && any_gpu) return why + ": ranks would share GPUs";
  return why.empty() ? "" : "no GPUs";
}

JobGraph gpuRanks(const std::vector<const Topology*>& nodes, const std::vector<RankPlace>& ranks,
                  const LinkTable& table) {
  JobGraph job;
  Topology merged = mergeNodes(nodes, table, /*keep_gpus=*/true);
  std::vector<int> offset(nodes.size(), 0);
  for (std::size_t k = 1; k < nodes.size(); ++k) {
    offset[k] = offset[k - 1] + static_cast<int>(nodes[k - 1]->gpus().size());
  }
  std::vector<int> gpu_of;
  for (const RankPlace& r : ranks) {
    gpu_of.push_back(offset[static_cast<std::size_t>(r.node)] + r.local_rank);
  }
  job.topology = merged.restrictToGpus(gpu_of);
  std::vector<int> sorted = gpu_of;
  std::sort(sorted.begin(), sorted.end());
  job.plan_rank_of.resize(ranks.size());
  job.comm_rank_of.resize(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto p = std::lower_bound(sorted.begin(), sorted.end(), gpu_of[r]) - sorted.begin();
    job.plan_rank_of[r] = static_cast<int>(p);
    job.comm_rank_of[static_cast<std::size_t>(p)] = static_cast<int>(r);
  }
  job.gpu_ranks = true;
  job.binding = "GPU ranks: each rank is GPU <local rank> of its node";
  return job;
}

JobGraph hostRanks(const std::vector<const Topology*>& nodes, const std::vector<RankPlace>& ranks,
                   const LinkTable& table, const std::string& why) {
  JobGraph job;
  job.topology = mergeNodes(nodes, table, /*keep_gpus=*/false);
  const bool multi = nodes.size() > 1;
  int bound = 0, spread = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankPlace& place = ranks[r];
    const auto k = static_cast<std::size_t>(place.node);
    const std::string prefix = multi ? "n" + std::to_string(k) + "." : "";
    const int sockets = countOfKind(*nodes[k], DeviceKind::Cpu);
    if (sockets == 0) {
      throw Error(blinkInvalidInput,
                  "node " + std::to_string(k) + " has no CPU to attach its host ranks to");
    }
    int socket = place.package;
    if (socket >= 0 && socket < sockets) {
      ++bound;
    } else {
      socket = place.local_rank % sockets;
      ++spread;
    }
    auto cpu = job.topology.find(prefix + "cpu" + std::to_string(socket));
    if (!cpu) {
      throw Error(blinkInvalidInput,
                  "node " + std::to_string(k) + " has no cpu" + std::to_string(socket));
    }
    Device d = makeDevice(prefix + "rank" + std::to_string(r), DeviceKind::Gpu, place.node);
    d.gpu_index = static_cast<int>(r);
    d.model = "host rank";
    d.numa = job.topology.device(*cpu).numa;
    const Vertex v = job.topology.addDevice(d);
    job.topology.addDuplexLink(v, *cpu, table.makeLink("shm"));
    job.plan_rank_of.push_back(static_cast<int>(r));
    job.comm_rank_of.push_back(static_cast<int>(r));
  }
  job.binding = "host ranks (" + why +
                "), each on its socket through shm: " + std::to_string(bound) +
                " bound to one socket, " + std::to_string(spread) +
                " not bound to one and spread round-robin by local rank";
  return job;
}

}  // namespace

JobGraph buildJobGraph(const std::vector<const Topology*>& nodes,
                       const std::vector<RankPlace>& ranks, const LinkTable& table) {
  std::vector<int> ranks_on_node(nodes.size(), 0);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const int k = ranks[r].node;
    if (k < 0 || k >= static_cast<int>(nodes.size()) || ranks[r].local_rank < 0) {
      throw Error(blinkInvalidInput, "rank " + std::to_string(r) + " sits on node " +
                                         std::to_string(k) + ", which is not described");
    }
    ++ranks_on_node[static_cast<std::size_t>(k)];
  }
  const std::string why = whyHostRanks(nodes, ranks_on_node);
  return why.empty() ? gpuRanks(nodes, ranks, table) : hostRanks(nodes, ranks, table, why);
}

}  // namespace blink::topo
