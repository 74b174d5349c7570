#include "topology/load.hpp"

#include <filesystem>
#include <fstream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "topology/discover.hpp"
#include "topology/nccl_xml.hpp"
#include "topology/topology_json.hpp"
#include "topology/zoo.hpp"

namespace blink::topo {
namespace {

bool looksLikeXml(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".xml") == 0) return true;
  std::ifstream in(path);
  char c = 0;
  while (in.get(c)) {
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '<';
  }
  return false;
}

}  // namespace

Topology loadTopology(const std::string& spec, const LinkTable& table) {
  if (spec.empty()) throw Error(blinkInvalidInput, "an empty topology name");
  std::error_code ec;
  if (std::filesystem::is_regular_file(spec, ec)) {
    if (looksLikeXml(spec)) {
      BLINK_LOG(Info, "topology: reading NCCL topology XML " << spec);
      return importNcclXml(spec, table);
    }
    BLINK_LOG(Info, "topology: reading Blink topology file " << spec);
    return readJsonFile(spec, table);
  }
  if (isZooName(spec)) {
    BLINK_LOG(Info, "topology: built-in machine " << spec);
    return makeZooTopology(spec, table);
  }
  if (spec.find('/') != std::string::npos || spec.find('.') != std::string::npos) {
    throw Error(blinkInvalidInput, "topology file '" + spec + "' does not exist or is not a file");
  }
  std::string known;
  for (const auto& m : zooMachines()) known += (known.empty() ? "" : ", ") + m.name;
  throw Error(blinkInvalidInput,
              "'" + spec + "' is neither a topology file nor a zoo machine (known: " + known +
                  ", or NAME:N for a cluster of N)");
}

Topology discoverThisMachine(const LinkTable& table) {
  DiscoverOptions options;
  options.table = table;
  return discoverLocalTopology(options);
}

Topology withAllocation(Topology topology, const std::vector<int>& gpus) {
  if (gpus.empty()) return topology;
  BLINK_LOG(Info, "topology: allocation view of " << gpus.size() << " GPUs of " << topology.name());
  return topology.restrictToGpus(gpus);
}

Topology topologyFromEnvironment() {
  LinkTable table = LinkTable::fromEnvironment();
  auto spec = env::get("BLINK_TOPO");
  Topology topology = spec ? loadTopology(*spec, table) : discoverThisMachine(table);
  return withAllocation(std::move(topology), env::getIntList("BLINK_TOPO_GPUS"));
}

}  // namespace blink::topo
