#include "runtime/job_topology.hpp"

#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "runtime/link_probe.hpp"
#include "topology/host_nics.hpp"
#include "topology/job_graph.hpp"
#include "topology/link_table.hpp"
#include "topology/load.hpp"
#include "topology/node_description.hpp"
#include "topology/placement.hpp"
#include "topology/topology_json.hpp"
#include "topology/topology_text.hpp"

namespace blink::runtime {
namespace {

// What each rank reports in the one gather every rank makes.
enum Field { kWorldRank, kTopoSet, kProbe, kFailed, kPackage, kHash, kLength, kFields };
using Report = std::array<std::uint64_t, kFields>;

std::int64_t signedField(std::uint64_t value) {
  return static_cast<std::int64_t>(value);
}

JobTopology fromTopoVariable(const RankLayout& layout, const std::vector<int>& world_rank_of,
                             int world_size, const std::string& spec) {
  JobTopology job;
  topo::Topology machine = topo::topologyFromEnvironment();
  job.source = "BLINK_TOPO=" + spec;
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

// This node's description, discovered once per process (about 25-50 ms of hwloc, NVML
// and CUDA probing; the machine does not change under a job) for each value of what
// discovery reads besides the machine: BLINK_LINK_GBPS, BLINK_UCX_NICS, and hwloc's
// HWLOC_XMLFILE (hwloc then reads that file instead of the machine, as tests do to
// emulate others; the network devices of this machine are then not its NICs).
std::string thisNodeDescription() {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  const char* hwloc_xml = std::getenv("HWLOC_XMLFILE");
  const std::string key = env::get("BLINK_LINK_GBPS").value_or("") + "\n" +
                          env::get("BLINK_UCX_NICS").value_or("") + "\n" +
                          (hwloc_xml != nullptr ? hwloc_xml : "");
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) {
    BLINK_LOG(Info, "discover: this node as described at an earlier communicator");
    return it->second;
  }
  topo::NodeDescribeOptions options;
  options.discover.table = topo::LinkTable::fromEnvironment();
  if (hwloc_xml == nullptr) options.nics = topo::hostNics();
  return cache[key] = topo::serializeNode(topo::describeNode(options));
}

// Collective: the distinct node descriptions, each sent by the lowest rank that
// holds it (a local rank 0), as text by hash.
std::map<std::uint64_t, std::string> gatherDistinctDescriptions(const RankLayout& layout,
                                                                const std::vector<Report>& reports,
                                                                const std::string& mine,
                                                                MPI_Comm comm) {
  std::map<std::uint64_t, int> owner;
  for (int r = 0; r < layout.size; ++r) {
    if (layout.local_rank_of_rank[static_cast<std::size_t>(r)] == 0) {
      owner.try_emplace(reports[static_cast<std::size_t>(r)][kHash], r);
    }
  }
  std::vector<int> counts(static_cast<std::size_t>(layout.size), 0);
  std::vector<int> displs(static_cast<std::size_t>(layout.size), 0);
  std::uint64_t total = 0;
  for (int r = 0; r < layout.size; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    const bool sends = layout.local_rank_of_rank[ur] == 0 && owner.at(reports[ur][kHash]) == r;
    const std::uint64_t length = sends ? reports[ur][kLength] : 0;
    // Decided from gathered data: every rank throws here alike, before the gather.
    if (total + length > static_cast<std::uint64_t>(INT_MAX)) {
      throw Error(blinkSystemError, "the node descriptions exceed 2 GiB");
    }
    counts[ur] = static_cast<int>(length);
    displs[ur] = static_cast<int>(total);
    total += length;
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  const int my_count = counts[static_cast<std::size_t>(layout.rank)];
  if (PMPI_Allgatherv(mine.data(), my_count, MPI_CHAR, all.data(), counts.data(), displs.data(),
                      MPI_CHAR, comm) != MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Allgatherv of the node descriptions failed");
  }
  std::map<std::uint64_t, std::string> by_hash;
  for (const auto& [hash, r] : owner) {
    by_hash[hash] = all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]));
  }
  return by_hash;
}

// BLINK_PROBE_LINKS: the NIC rates measured between these nodes, once per process
// for each set of nodes (collective; every rank takes the cached value only when all
// have it).
std::vector<double> measuredNicRates(const RankLayout& layout, MPI_Comm comm) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<double>> cache;
  std::string key = env::get("BLINK_UCX_NICS").value_or("");
  for (const std::string& n : layout.node_names) key += "\n" + n;
  std::lock_guard lock(mutex);
  const int have = cache.count(key) != 0 ? 1 : 0;
  int all_have = 0;
  if (PMPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Allreduce before the link probe failed");
  }
  if (all_have != 0) return cache.at(key);
  return cache[key] = probeNicRates(layout, comm);
}

// "nic0 eth0 10 Gbit/s from sysfs, measured 0.94 Gbit/s (used)" for each NIC of the
// job's first node.
std::string nicSpeeds(const topo::Topology& t, const std::vector<double>& measured) {
  std::ostringstream out;
  for (topo::Edge e : t.links()) {
    const topo::Device& nic = t.device(t.source(e));
    if (nic.kind != topo::DeviceKind::Nic || nic.node != 0 ||
        t.device(t.target(e)).kind != topo::DeviceKind::NetSwitch) {
      continue;
    }
    const topo::Link& link = t.link(e);
    const int k = topo::hostNicIndex(nic);
    out << "\n  " << nic.id << " " << nic.model << " " << topo::gbitText(link.capacity())
        << " from " << topo::toString(link.source);
    if (k >= 0 && k < static_cast<int>(measured.size()) &&
        link.source != topo::LinkSource::Measured && measured[static_cast<std::size_t>(k)] > 0) {
      out << " (measured " << topo::gbitText(measured[static_cast<std::size_t>(k)])
          << ", not lower)";
    }
  }
  return out.str();
}

JobTopology fromDiscovery(const RankLayout& layout, const std::vector<Report>& reports,
                          const std::string& mine, bool probe, MPI_Comm comm) {
  const std::map<std::uint64_t, std::string> texts =
      gatherDistinctDescriptions(layout, reports, mine, comm);
  std::vector<double> measured;
  if (probe && layout.num_nodes > 1) measured = measuredNicRates(layout, comm);
  // Collectives are over: from here on every rank computes from the same data.
  for (int r = 0; r < layout.size; ++r) {
    if (reports[static_cast<std::size_t>(r)][kFailed] != 0) {
      throw Error(blinkSystemError, "discovering node '" +
                                        layout.node_names[static_cast<std::size_t>(
                                            layout.node_of_rank[static_cast<std::size_t>(r)])] +
                                        "' failed on rank " + std::to_string(r) +
                                        " (see its error message)");
    }
  }
  const topo::LinkTable table = topo::LinkTable::fromEnvironment();
  std::map<std::uint64_t, topo::Topology> parsed;
  for (const auto& [hash, text] : texts) {
    topo::Topology node = topo::fromJson(text, "node description", table);
    parsed.emplace(hash,
                   measured.empty() ? std::move(node) : topo::withMeasuredNicRates(node, measured));
  }
  std::vector<const topo::Topology*> nodes(static_cast<std::size_t>(layout.num_nodes), nullptr);
  std::vector<topo::RankPlace> places;
  for (int r = 0; r < layout.size; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    const Report& rep = reports[ur];
    const int node = layout.node_of_rank[ur];
    if (layout.local_rank_of_rank[ur] == 0) {
      nodes[static_cast<std::size_t>(node)] = &parsed.at(rep[kHash]);
    }
    places.push_back(
        {node, layout.local_rank_of_rank[ur], static_cast<int>(signedField(rep[kPackage]))});
  }
  topo::JobGraph graph = topo::buildJobGraph(nodes, places, table);
  JobTopology job;
  job.topology = std::move(graph.topology);
  job.plan_rank_of = std::move(graph.plan_rank_of);
  job.comm_rank_of = std::move(graph.comm_rank_of);
  job.discovered = true;
  job.distinct_descriptions = static_cast<int>(texts.size());
  std::string names;
  for (const std::string& n : layout.node_names) names += (names.empty() ? "" : ", ") + n;
  job.topology.setName(layout.num_nodes == 1 ? "discovered:" + layout.node_names.front()
                                             : "discovered:" + std::to_string(layout.num_nodes));
  job.source = "discovered: " + std::to_string(layout.num_nodes) + " node(s) (" + names + "), " +
               std::to_string(texts.size()) + " distinct description(s) gathered; " + graph.binding;
  if (probe && layout.num_nodes > 1) {
    job.source += std::string("; BLINK_PROBE_LINKS measured ") +
                  (measured.empty() ? "no NIC" : std::to_string(measured.size()) + " NIC(s)");
  }
  if (layout.num_nodes > 1) job.source += "; NICs of node 0:" + nicSpeeds(job.topology, measured);
  for (int k = 0; k < layout.num_nodes && layout.num_nodes > 1; ++k) {
    if (job.topology.find("n" + std::to_string(k) + ".vnic0")) {
      job.source += "; node " + std::to_string(k) + " has no NIC: a virtual NIC (" +
                    topo::kDefaultNicGeneration + ", link table) joins it to the network";
    }
  }
  return job;
}

}  // namespace

JobTopology jobTopology(const RankLayout& layout, MPI_Comm comm) {
  // Every rank makes the same PMPI calls before anything can throw.
  int world_rank = 0, world_size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const auto spec = env::get("BLINK_TOPO");
  Report mine{};
  mine[kWorldRank] = static_cast<std::uint64_t>(world_rank);
  mine[kTopoSet] = spec ? 1 : 0;
  mine[kProbe] = env::getChoice("BLINK_PROBE_LINKS") == "1" ? 1 : 0;
  std::string description;
  std::unique_ptr<Error> failure;
  if (!spec) {
    // Decisions every node makes alike are reported by rank 0 only.
    log::QuietInfo quiet(layout.rank != 0);
    mine[kPackage] = static_cast<std::uint64_t>(static_cast<std::int64_t>(topo::boundPackage()));
    if (layout.local_rank == 0) {
      try {
        description = thisNodeDescription();
        mine[kHash] = topo::descriptionHash(description);
        mine[kLength] = description.size();
      } catch (const Error& e) {
        failure = std::make_unique<Error>(e);
        mine[kFailed] = 1;
        description.clear();
        mine[kHash] = mine[kLength] = 0;
      }
    }
  }
  std::vector<Report> reports(static_cast<std::size_t>(layout.size));
  if (PMPI_Allgather(mine.data(), kFields, MPI_UINT64_T, reports.data(), kFields, MPI_UINT64_T,
                     comm) != MPI_SUCCESS) {
    throw Error(blinkSystemError, "MPI_Allgather of the ranks' topology reports failed");
  }
  int with_topo = 0, with_probe = 0;
  std::vector<int> world_rank_of;
  for (const Report& rep : reports) {
    with_topo += rep[kTopoSet] != 0 ? 1 : 0;
    with_probe += rep[kProbe] != 0 ? 1 : 0;
    world_rank_of.push_back(static_cast<int>(rep[kWorldRank]));
  }
  if (with_topo != 0 && with_topo != layout.size) {
    throw Error(blinkInvalidInput, "BLINK_TOPO is set on " + std::to_string(with_topo) + " of " +
                                       std::to_string(layout.size) +
                                       " ranks: set it on every rank or none");
  }
  if (with_probe != 0 && with_probe != layout.size) {
    throw Error(blinkInvalidInput, "BLINK_PROBE_LINKS=1 is set on " + std::to_string(with_probe) +
                                       " of " + std::to_string(layout.size) +
                                       " ranks: set it alike on every rank");
  }
  JobTopology job;
  if (spec) {
    job = fromTopoVariable(layout, world_rank_of, world_size, *spec);
  } else {
    try {
      job = fromDiscovery(layout, reports, description, with_probe != 0, comm);
    } catch (const Error&) {
      if (failure) throw *failure;  // this rank's own reason beats "failed on rank r"
      throw;
    }
  }
  if (layout.rank == 0) {
    BLINK_LOG(Info, "job topology " << job.topology.name() << " from " << job.source << "\n"
                                    << topo::listDevicesAndLinks(job.topology));
  }
  return job;
}

}  // namespace blink::runtime
