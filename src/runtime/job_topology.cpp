#include "runtime/job_topology.hpp"

#include <map>

#include "common/env.hpp"
#include "common/error.hpp"
#include "topology/link_table.hpp"
#include "topology/load.hpp"

namespace blink::runtime {

topo::Topology hostRanksTopology(const RankLayout& layout) {
  const topo::LinkTable table = topo::LinkTable::fromEnvironment();
  const bool multi = layout.num_nodes > 1;
  topo::Topology t(multi ? "host-ranks:" + std::to_string(layout.num_nodes) : "host-ranks");
  std::vector<topo::Vertex> memory;
  for (int n = 0; n < layout.num_nodes; ++n) {
    const std::string prefix = multi ? "n" + std::to_string(n) + "." : "";
    topo::Device mem = topo::makeDevice(prefix + "mem", topo::DeviceKind::Cpu, n);
    mem.model = "host memory (" + layout.node_names[static_cast<std::size_t>(n)] + ")";
    memory.push_back(t.addDevice(mem));
  }
  for (int r = 0; r < layout.size; ++r) {
    const int n = layout.node_of_rank[static_cast<std::size_t>(r)];
    const std::string prefix = multi ? "n" + std::to_string(n) + "." : "";
    topo::Device d =
        topo::makeDevice(prefix + "rank" + std::to_string(r), topo::DeviceKind::Gpu, n);
    d.gpu_index = r;
    d.model = "host rank";
    topo::Vertex v = t.addDevice(d);
    t.addDuplexLink(v, memory[static_cast<std::size_t>(n)], table.makeLink("shm"));
  }
  if (multi) {
    topo::Device sw = topo::makeDevice("netsw0", topo::DeviceKind::NetSwitch, -1);
    sw.model = "network";
    topo::Vertex s = t.addDevice(sw);
    for (int n = 0; n < layout.num_nodes; ++n) {
      topo::Device nic =
          topo::makeDevice("n" + std::to_string(n) + ".nic0", topo::DeviceKind::Nic, n);
      topo::Vertex v = t.addDevice(nic);
      t.addDuplexLink(v, memory[static_cast<std::size_t>(n)], table.makeLink("shm"));
      t.addDuplexLink(v, s, table.makeLink("eth-100g"));
    }
  }
  return t;
}

JobTopology jobTopology(const RankLayout& layout, MPI_Comm comm) {
  // Every rank takes part in this exchange before anything can fail.
  int world_rank = 0, world_size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  std::vector<int> world_rank_of(static_cast<std::size_t>(layout.size), -1);
  if (PMPI_Allgather(&world_rank, 1, MPI_INT, world_rank_of.data(), 1, MPI_INT, comm) !=
      MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Allgather of world ranks failed");
  }
  JobTopology job;
  const auto spec = env::get("BLINK_TOPO");
  if (!spec) {
    job.topology = hostRanksTopology(layout);
    for (int r = 0; r < layout.size; ++r) {
      job.plan_rank_of.push_back(r);
      job.comm_rank_of.push_back(r);
    }
    job.source = "host ranks in shared memory (BLINK_TOPO unset)";
    return job;
  }
  topo::Topology machine = topo::topologyFromEnvironment();
  job.source = "BLINK_TOPO=" + *spec;
  if (auto gpus = env::get("BLINK_TOPO_GPUS")) job.source += ", BLINK_TOPO_GPUS=" + *gpus;
  const std::vector<topo::Vertex> machine_gpus = machine.gpus();
  if (static_cast<int>(machine_gpus.size()) != world_size) {
    throw Error(blinkInvalidInput, job.source + " has " + std::to_string(machine_gpus.size()) +
                                       " GPUs but MPI_COMM_WORLD has " +
                                       std::to_string(world_size) +
                                       " ranks: world rank i acts as GPU i");
  }
  // The GPUs of this communicator's ranks, and ranks sharing a node iff their GPUs do.
  std::vector<int> gpu_of(static_cast<std::size_t>(layout.size));
  std::map<int, int> topo_node_of_layout_node, layout_node_of_topo_node;
  for (int r = 0; r < layout.size; ++r) {
    const topo::Device& d = machine.device(
        machine_gpus[static_cast<std::size_t>(world_rank_of[static_cast<std::size_t>(r)])]);
    gpu_of[static_cast<std::size_t>(r)] = d.gpu_index;
    const int ln = layout.node_of_rank[static_cast<std::size_t>(r)];
    auto [a, fresh_a] = topo_node_of_layout_node.try_emplace(ln, d.node);
    auto [b, fresh_b] = layout_node_of_topo_node.try_emplace(d.node, ln);
    if (a->second != d.node || b->second != ln) {
      throw Error(blinkInvalidInput,
                  job.source + ": rank " + std::to_string(r) + " runs on node '" +
                      layout.node_names[static_cast<std::size_t>(ln)] + "' and acts as " + d.id +
                      ", but the ranks that share its node (BLINK_NODE_ID or hostname) do not "
                      "share that GPU's node in the topology");
    }
  }
  job.topology = layout.size == world_size ? machine : machine.restrictToGpus(gpu_of);
  // Plan rank p is the p-th GPU in increasing gpu_index (plan::ranksOfGpus).
  const std::vector<topo::Vertex> gpus = job.topology.gpus();
  std::map<int, int> plan_rank_of_gpu;
  for (std::size_t p = 0; p < gpus.size(); ++p) {
    plan_rank_of_gpu[job.topology.device(gpus[p]).gpu_index] = static_cast<int>(p);
  }
  job.plan_rank_of.assign(static_cast<std::size_t>(layout.size), -1);
  job.comm_rank_of.assign(static_cast<std::size_t>(layout.size), -1);
  for (int r = 0; r < layout.size; ++r) {
    const int p = plan_rank_of_gpu.at(gpu_of[static_cast<std::size_t>(r)]);
    job.plan_rank_of[static_cast<std::size_t>(r)] = p;
    job.comm_rank_of[static_cast<std::size_t>(p)] = r;
  }
  return job;
}

}  // namespace blink::runtime
