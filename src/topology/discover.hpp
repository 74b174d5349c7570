// Discovery of the machine Blink runs on: hwloc gives the sockets, NUMA nodes and
// the PCIe tree (GPUs, NICs and the switches between them), NVML (loaded at run
// time) gives the NVLinks, and the CUDA runtime gives the device order the process
// sees. A machine without GPUs is a normal result: its sockets (and NICs).
#pragma once

#include <optional>
#include <string>

#include "topology/cuda_probe.hpp"
#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

struct DiscoverOptions {
  // Empty: the live machine. Otherwise an hwloc 2.x XML export (lstopo --of xml) to
  // read instead, e.g. a reference machine in tests.
  std::string hwloc_xml_path;
  // Empty: libnvidia-ml.so.1. Otherwise the NVML library to dlopen (tests pass a fake).
  std::string nvml_library;
  // Ask the CUDA runtime for its device order (ignored in builds without CUDA).
  bool use_cuda = true;
  // When set (and use_cuda), used instead of asking the runtime: for callers that
  // probed already, and for tests that need a given CUDA order.
  std::optional<CudaProbe> cuda_probe;
  // Link speeds; pass LinkTable::fromEnvironment() to honour BLINK_LINK_GBPS.
  LinkTable table = LinkTable::builtin();
};

// Builds the topology of this machine (or of opts.hwloc_xml_path). Device ids:
// cpu<k> per package, pcisw<k> per PCIe switch, gpu<i>, nic<k>, nvswitch0.
// Throws blink::Error: blinkInvalidInput naming the file when the XML cannot be
// read, blinkSystemError when hwloc cannot read the live machine. A missing NVML or
// CUDA is not an error: the topology then has no NVLinks, and says so at INFO.
Topology discoverLocalTopology(const DiscoverOptions& opts = {});

// The PCIe generation of `table` ("pcie3x16", ...) whose NOMINAL rate (GT/s x width
// after 128b/130b, as hwloc computes pcidev.linkspeed) is nearest to `link_gbps`;
// "pcie3x16" when link_gbps <= 0. Nominal rates, not the table's, so that measured
// overrides (BLINK_LINK_GBPS) change link speeds but not which generation a slot is.
// Generation and width are not recoverable from the rate alone (gen3 x16 and gen4 x8
// are both 15.75 GB/s): ties go to the widest link, which is what GPU and NIC slots are.
std::string nearestPcieGeneration(double link_gbps, const LinkTable& table);

}  // namespace blink::topo
