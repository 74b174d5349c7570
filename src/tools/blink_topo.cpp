// blink-topo: inspect, convert and render the topologies Blink plans on.
#include <fstream>
#include <iostream>

#include "common/env.hpp"
#include "common/error.hpp"
#include "tools/cli.hpp"
#include "tools/tool_io.hpp"
#include "topology/discover.hpp"
#include "topology/link_table.hpp"
#include "topology/load.hpp"
#include "topology/nccl_xml.hpp"
#include "topology/topology_dot.hpp"
#include "topology/topology_json.hpp"
#include "topology/topology_text.hpp"
#include "topology/zoo.hpp"

namespace {

namespace topo = blink::topo;
using blink::cli::UsageError;

const char* kHelp = R"(Usage: blink-topo COMMAND [options]

Commands:
  show                 summarise a topology: devices, links, per-GPU lanes, NVLink matrix
  export               print a topology as --format json (Blink's file format) or dot
  import-nccl FILE     convert NCCL's topology XML (NCCL_TOPO_DUMP_FILE) to Blink JSON
  list                 the built-in reference machines (the zoo)
  links                the link generations and the bandwidths Blink assumes for them

Options:
  --topo NAME|FILE     a zoo machine ("dgx1-v100", "dgx1-v100:4" for a 4-node cluster),
                       a Blink JSON file or an NCCL XML file; default $BLINK_TOPO,
                       else discover this machine (hwloc, NVML, CUDA)
  --gpus LIST          keep only these GPUs (an allocation view, e.g. 0,1,2,4);
                       default $BLINK_TOPO_GPUS
  --format json|dot    for export (default json)
  --output FILE        write to FILE instead of standard output
  --link-gbps SPEC     override link bandwidths, e.g. nvlink2=22.5,pcie3x16=12
                       (added to $BLINK_LINK_GBPS)
  --hwloc-xml FILE     discover from an hwloc XML export instead of the live machine
  -h, --help           this text
      --version        the build this tool belongs to (version, git revision, ...)

Examples:
  blink-topo show
  blink-topo show --topo dgx1-v100 --gpus 0,1,2,4
  blink-topo export --topo dgx1-v100 --gpus 0,1,2,4 --format dot | dot -Tsvg > frag.svg
  blink-topo import-nccl nccl-topo.xml --output machine.json

Exit codes: 0 success, 1 the topology could not be loaded or written, 2 bad command line.
)";

int run(const blink::cli::Args& args) {
  if (args.has("--help")) {
    std::cout << kHelp;
    return blink::cli::kOk;
  }
  const auto& pos = args.positional();
  if (pos.empty()) throw UsageError{"missing COMMAND (show, export, import-nccl, list, links)"};
  const std::string& command = pos[0];
  auto expectArgs = [&](std::size_t n) {
    if (pos.size() != n + 1) {
      throw UsageError{command + " takes " +
                       (n == 0 ? "no argument" : std::to_string(n) + " argument(s)")};
    }
  };
  if (command == "show") {
    expectArgs(0);
    blink::cli::emitOutput(args, topo::describeTopology(blink::cli::topologyFromArgs(args)));
  } else if (command == "export") {
    expectArgs(0);
    std::string format = args.valueOr("--format", "json");
    if (format != "json" && format != "dot") {
      throw UsageError{"--format must be json or dot, not '" + format + "'"};
    }
    topo::Topology t = blink::cli::topologyFromArgs(args);
    blink::cli::emitOutput(args, format == "json" ? topo::toJson(t) : topo::toDot(t));
  } else if (command == "import-nccl") {
    expectArgs(1);
    topo::Topology t = topo::importNcclXml(pos[1], blink::cli::linkTableFromArgs(args));
    if (auto gpus = args.value("--gpus")) {
      t = t.restrictToGpus(blink::env::parseIntList(*gpus, "--gpus"));
    }
    blink::cli::emitOutput(args, topo::toJson(t));
  } else if (command == "list") {
    expectArgs(0);
    std::string text;
    for (const auto& m : topo::zooMachines()) {
      text += m.name + std::string(m.name.size() < 12 ? 12 - m.name.size() : 1, ' ') +
              m.description + "\n";
    }
    text +=
        "\nNAME:N builds a cluster of N such nodes joined through their NICs and one "
        "network switch.\n";
    blink::cli::emitOutput(args, text);
  } else if (command == "links") {
    expectArgs(0);
    std::string text = "generation  kind     GB/s per lane and direction  latency_us  what\n";
    const topo::LinkTable table = blink::cli::linkTableFromArgs(args);
    for (const auto& g : table.all()) {
      char line[256];
      std::snprintf(line, sizeof line, "%-11s %-8s %-28.4g %-11.3g %s\n", g.name.c_str(),
                    std::string(topo::toString(g.kind)).c_str(), g.gbps, g.latency_us,
                    g.what.c_str());
      text += line;
    }
    blink::cli::emitOutput(args, text);
  } else {
    throw UsageError{"unknown command '" + command + "'"};
  }
  return blink::cli::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  return blink::cli::runTool(
      "blink-topo", argc, argv,
      {"--topo", "--gpus", "--format", "--output", "--link-gbps", "--hwloc-xml"}, {"--help"}, run);
}
