// Topologies that unit tests build by hand: the GPUs first, then the links each
// test needs.
#pragma once

#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace blink::test {

// Adds GPUs gpu0..gpu{n-1} (gpu_index 0..n-1) to `t` and returns their vertices.
inline std::vector<topo::Vertex> addGpus(topo::Topology& t, int n) {
  std::vector<topo::Vertex> gpus;
  for (int i = 0; i < n; ++i) {
    topo::Device d = topo::makeDevice("gpu" + std::to_string(i), topo::DeviceKind::Gpu);
    d.gpu_index = i;
    gpus.push_back(t.addDevice(d));
  }
  return gpus;
}

}  // namespace blink::test
