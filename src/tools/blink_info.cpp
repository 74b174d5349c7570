// blink-info: what this build of Blink is and how it is configured.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "blink/blink.h"
#include "common/env.hpp"
#include "common/error.hpp"
#include "runtime/memory_type.hpp"
#include "runtime/process_device.hpp"
#include "tools/cli.hpp"
#include "topology/cuda_probe.hpp"
#include "topology/job_graph.hpp"
#include "topology/load.hpp"
#include "topology/node_description.hpp"
#include "topology/placement.hpp"
#include "topology/topology_text.hpp"

namespace {

const char* kHelp =
    R"(Usage: blink-info [--version] [--env] [--env-markdown] [--check-env] [--topology]

Describes this build of Blink and its configuration.
  (no option)     what --version prints, then every BLINK_* variable
  --version       what this build runs (version, git revision, transports, memory
                  types), then what this machine has (CUDA driver, GPUs, the device
                  for GPU buffers: BLINK_DEVICE)
  --env           every BLINK_* variable with its current value or default
  --env-markdown  the configuration table of the README, generated from the code
  --check-env     validate every BLINK_* variable that is set; exit 1 on a bad one
  --topology      the graph a job of this process alone would plan on, as the runtime
                  builds it (BLINK_TOPO, or this node discovered with this process as
                  its one rank): every device, and every link with its speed and where
                  the speed came from (table, sysfs, measured, BLINK_LINK_GBPS, file)
  -h, --help      this text

Exit codes: 0 success, 1 invalid configuration, 2 bad command line.
)";

void printEnv() {
  for (const auto& var : blink::env::registry()) {
    auto value = blink::env::get(var.name);
    std::cout << var.name << "=" << (value ? *value : "") << (value ? "" : "  (unset")
              << (value                       ? ""
                  : var.default_value.empty() ? ")"
                                              : ", default " + std::string(var.default_value) + ")")
              << "\n";
  }
}

// What jobTopology builds for a job of one rank, without MPI: the same pure steps.
void printTopology() {
  const blink::topo::LinkTable table = blink::topo::LinkTable::fromEnvironment();
  if (auto spec = blink::env::get("BLINK_TOPO")) {
    const blink::topo::Topology t = blink::topo::topologyFromEnvironment();
    std::cout << "source: BLINK_TOPO=" << *spec << "\n" << blink::topo::listDevicesAndLinks(t);
    return;
  }
  blink::topo::NodeDescribeOptions options;
  options.discover.table = table;
  // This machine's network devices are its NICs, as a job's description has them
  // (an hwloc XML describes another machine: its own NICs then).
  if (std::getenv("HWLOC_XMLFILE") == nullptr) options.nics = blink::topo::hostNics();
  const blink::topo::Topology node = blink::topo::describeNode(options);
  const blink::topo::JobGraph job =
      blink::topo::buildJobGraph({&node}, {{0, 0, blink::topo::boundPackage()}}, table);
  std::cout << "source: discovered: this node, one rank; " << job.binding << "\n"
            << "node description: " << node.numDevices() << " devices, " << node.numLinks()
            << " links (network switch included)\n"
            << blink::topo::listDevicesAndLinks(job.topology);
}

// The build string says what the code can do; this says what this machine lets it use.
void printMachine() {
  const auto cuda = blink::topo::probeCuda();
  std::cout << "This machine: " << blink::runtime::CudaDriver::process().describe()
            << "; CUDA devices: " << cuda.devices.size();
  if (cuda.devices.empty()) std::cout << " (" << cuda.why_none << ")";
  std::cout << "\n";
  for (const auto& dev : cuda.devices) {
    std::cout << "  GPU " << dev.ordinal << ": " << dev.name << " at " << dev.pci_bus_id << "\n";
  }
  // What runs collectives on device buffers here, as for local rank 0 (BLINK_DEVICE).
  blink::runtime::processDevice(0);
  std::cout << "Device for GPU buffers: " << blink::runtime::processDeviceNote() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    blink::cli::Args args(
        "blink-info", argc, argv, {},
        {"--help", "--version", "--env", "--env-markdown", "--check-env", "--topology"});
    if (args.has("--help")) {
      std::cout << kHelp;
      return blink::cli::kOk;
    }
    if (!args.positional().empty()) {
      throw blink::cli::UsageError{"unexpected argument '" + args.positional().front() + "'"};
    }
    if (args.has("--version")) {
      std::cout << blinkGetBuildInfo() << "\n";
      printMachine();
      return blink::cli::kOk;
    }
    if (args.has("--env-markdown")) {
      std::cout << blink::env::markdownTable();
      return blink::cli::kOk;
    }
    if (args.has("--check-env")) {
      blink::env::validateAll();
      std::cout << "all BLINK_* variables are valid\n";
      return blink::cli::kOk;
    }
    if (args.has("--topology")) {
      printTopology();
      return blink::cli::kOk;
    }
    if (args.has("--env")) {
      printEnv();
      return blink::cli::kOk;
    }
    std::cout << blinkGetBuildInfo() << "\n";
    printMachine();
    printEnv();
    return blink::cli::kOk;
  } catch (const blink::cli::UsageError& e) {
    std::cerr << "blink-info: " << e.message << " (see --help)\n";
    return blink::cli::kUsage;
  } catch (const blink::Error& e) {
    std::cerr << "blink-info: " << e.what() << "\n";
    return blink::cli::kFailure;
  }
}
